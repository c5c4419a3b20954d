// The library with pipe I/O in its constructor (ctor_io_lib.cpp).
#pragma once

extern "C" {
// Empty if every call in the constructor gave the expected result.
const char* ctor_io_error();
// A pipe the constructor created and wrote "from the constructor" into.
int ctor_io_kept_read_fd();
int ctor_io_kept_write_fd();
}
