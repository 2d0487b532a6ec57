// Stand-in, written for shmbench, for Mooncake Store's utils.h
// (kvcache-ai/Mooncake, mooncake-store/include/utils.h) when upstream's
// OffsetAllocator is compiled from a user's checkout (docs/upstream.md).
// offset_allocator.cpp takes one thing from it: byte_size_to_string, used
// only by the metrics' operator<<, which no timed path calls. Upstream's
// header also pulls in ylt, glog helpers and the store's types, which this
// build does not have; this file declares only what the allocator needs.
#pragma once

#include <cstdint>
#include <string>

namespace mooncake {

// Bytes as a plain decimal count: only a log line reads it.
inline std::string byte_size_to_string(uint64_t bytes) { return std::to_string(bytes) + " B"; }

} // namespace mooncake
