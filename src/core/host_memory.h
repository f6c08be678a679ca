// How much host memory this process can still use: the kernel's MemAvailable (free memory plus
// what it can reclaim), lowered to what the process's cgroup (a container's memory limit) has
// left. Used to refuse work that cannot fit with a message, before the kernel kills the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ic {

// nullopt when neither /proc/meminfo nor a cgroup limit can be read.
std::optional<size_t> available_host_memory();

// The machine's physical memory (sysconf), 0 when unknown.
uint64_t physical_memory_bytes();

// This process's resident memory now (/proc/self/statm); nullopt where it cannot be read.
std::optional<size_t> resident_memory();

// "1.5 GiB", "592 MiB": sizes for messages.
std::string format_bytes(size_t bytes);

}  // namespace ic
