// A pipe the process's fd table knows (made by pipe()), with the engine
// configured for one test. Shared by the unit tests that drive the engine
// against real, deterministic pipes.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>

#include "core/control.h"
#include "core/engine.h"

namespace pipespin::test {

// Configures the engine with o, in `mode` with `spin_us`, and `cpus` usable
// CPUs: by default many, so that the run-queue gate stays open unless a test
// closes it. On destruction the pipe is closed and forgotten, and the default
// options and the thread's spin switch are back.
struct PipeFixture {
    int fds[2] = {-1, -1};
    explicit PipeFixture(Mode mode, std::uint32_t spin_us = 1, Options o = {}, int cpus = 4096) {
        o.mode_v = static_cast<std::uint32_t>(mode);
        o.spin_us = spin_us;
        configure(o, cpus);
        REQUIRE(::pipe(fds) == 0);
        fd_table().set_pipe(fds[0], fds[1]);
    }
    ~PipeFixture() {
        for (int fd : fds) {
            ::close(fd);
            fd_table().forget(fd);
        }
        configure(Options{}, 4096);
        control_thread_spin(1);
    }
    PipeFixture(const PipeFixture&) = delete;
    PipeFixture& operator=(const PipeFixture&) = delete;
    DirState& reader() { return fd_table().state(fds[0])->dir[0]; }
};

}  // namespace pipespin::test
