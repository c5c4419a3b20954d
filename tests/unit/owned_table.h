// A fd table a test makes and drops: FdTable is trivially destructible (the
// process's own is never destroyed), so the owner releases its mappings.
#pragma once

#include <memory>

#include "core/fd_table.h"

struct ReleaseTable {
    void operator()(pipespin::FdTable* t) const noexcept {
        t->release();
        delete t;
    }
};
using OwnedTable = std::unique_ptr<pipespin::FdTable, ReleaseTable>;

inline OwnedTable make_table() {
    return OwnedTable(new pipespin::FdTable);
}
