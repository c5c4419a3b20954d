// What the ELF headers of a program or library say: whether the dynamic
// loader will preload into it, and how much zero-filled memory it maps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipespin::cli {

// Reasons the dynamic loader would not preload into the program at `path`
// (statically linked, setuid/setgid, foreign ELF class); empty when there is
// none or the file is not an ELF (scripts, for one). Never throws for an
// unreadable file: the exec reports that better.
std::vector<std::string> preload_obstacles(const std::string& path);
// The bytes an ELF file's allocated NOBITS sections (.bss, .tbss) take in
// memory: what `size` reports as bss, the zero-filled part of its mapping.
// nullopt when the file is not an ELF of this class or cannot be read.
std::optional<std::uint64_t> elf_bss_bytes(const std::string& path);

}  // namespace pipespin::cli
