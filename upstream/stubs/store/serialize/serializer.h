// Stand-in, written for shmbench, for Mooncake Store's
// serialize/serializer.h (kvcache-ai/Mooncake, mooncake-store/include/
// serialize/serializer.h) when upstream's OffsetAllocator is compiled from a
// user's checkout (docs/upstream.md). offset_allocator.h needs only the
// names: the classes it befriends (Serializer<T> for its three types) and
// their forward declarations. Upstream's header defines those
// specialisations over msgpack and yalantinglibs' expected, for the master's
// snapshot of its allocators, which the timed allocate / free never use; so
// the template is declared and never defined here, and a call that needed
// it would fail to compile rather than run something else.
#pragma once

namespace mooncake::offset_allocator {
class __Allocator;
class OffsetAllocator;
class OffsetAllocationHandle;
} // namespace mooncake::offset_allocator

namespace mooncake {
template <typename T> class Serializer;
} // namespace mooncake
