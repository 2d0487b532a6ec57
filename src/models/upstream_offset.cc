// upstream_offset: Mooncake Store's own OffsetAllocator (create, allocate,
// ~OffsetAllocationHandle) compiled from the user's Mooncake source behind
// shmbench/upstream.h; without -DSHMB_MOONCAKE_SOURCE, upstream_none.c.
#include "shmbench/upstream.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "offset_allocator/offset_allocator.h"

#include "cxx_guard.hpp"

namespace oa = mooncake::offset_allocator;

struct shmb_upstream_offset {
    std::shared_ptr<oa::OffsetAllocator> alloc;
    uintptr_t base;
    size_t bytes;
    // The handles, by the caller's slot: a block lives as long as its
    // handle, as in upstream's AllocatedBuffer.
    std::vector<std::optional<oa::OffsetAllocationHandle>> slots;
};

extern "C" int shmb_upstream_available(void) noexcept { return 1; }

extern "C" const char *shmb_upstream_commit(void) noexcept { return SHMB_UPSTREAM_COMMIT; }

// The node capacities OffsetBufferAllocator's constructor gives upstream's
// allocator for a buffer of `bytes` (mooncake-store/src/allocator.cpp).
static uint32_t init_capacity(size_t bytes) { return (uint32_t)std::clamp<uint64_t>(bytes / 4096, 1024, 64 * 1024); }
static uint32_t max_capacity(size_t bytes)
{
    return (uint32_t)std::clamp<uint64_t>(bytes / 1024, 1024 * 1024, 64ull * 1024 * 1024);
}

extern "C" int shmb_upstream_offset_create(void *base, size_t bytes, uint32_t slots,
                                           shmb_upstream_offset_t **out) noexcept
{
    if (!out || !base || bytes == 0 || slots == 0 || (uintptr_t)base + bytes < (uintptr_t)base)
        return -EINVAL;
    return shmb::guard([&] {
        auto a = std::make_unique<shmb_upstream_offset>();
        a->alloc = oa::OffsetAllocator::create((uint64_t)(uintptr_t)base, bytes, init_capacity(bytes),
                                               max_capacity(bytes));
        if (!a->alloc)
            return -ENOMEM;
        a->base = (uintptr_t)base;
        a->bytes = bytes;
        a->slots.resize(slots);
        *out = a.release();
        return 0;
    });
}

extern "C" void shmb_upstream_offset_destroy(shmb_upstream_offset_t *a) noexcept
{
    // The handles go first: each frees its block into the live allocator.
    if (a)
        a->slots.clear();
    delete a;
}

extern "C" int shmb_upstream_offset_alloc(shmb_upstream_offset_t *a, uint32_t slot, size_t bytes,
                                          void **addr) noexcept
{
    if (!a || !addr || bytes == 0 || slot >= a->slots.size())
        return -EINVAL;
    auto &s = a->slots[slot];
    if (s)
        return -EBUSY;
    return shmb::guard([&] {
        s = a->alloc->allocate(bytes);
        if (!s)
            return -ENOMEM;
        *addr = s->ptr();
        return 0;
    });
}

extern "C" int shmb_upstream_offset_free(shmb_upstream_offset_t *a, uint32_t slot) noexcept
{
    if (!a || slot >= a->slots.size())
        return -EINVAL;
    auto &s = a->slots[slot];
    if (!s)
        return -ENOENT;
    s.reset();
    return 0;
}

extern "C" int shmb_upstream_offset_check(const shmb_upstream_offset_t *a, void *const *addr, const size_t *bytes,
                                          uint32_t n) noexcept
{
    if (!a || (n && (!addr || !bytes)) || n > a->slots.size())
        return -EINVAL;
    return shmb::guard([&] {
        std::vector<std::pair<uintptr_t, uintptr_t>> ranges; // [start, end) of each recorded block
        ranges.reserve(n);
        for (uint32_t i = 0; i < n; i++) {
            const auto &s = a->slots[i];
            if (!addr[i] != !s)
                return -ENOENT;
            if (!s)
                continue;
            const uintptr_t p = (uintptr_t)addr[i];
            if (p != (uintptr_t)s->ptr() || bytes[i] == 0 || p < a->base || bytes[i] > a->bytes ||
                p - a->base > a->bytes - bytes[i])
                return -EFAULT;
            ranges.emplace_back(p, p + bytes[i]);
        }
        std::sort(ranges.begin(), ranges.end());
        for (size_t i = 1; i < ranges.size(); i++)
            if (ranges[i].first < ranges[i - 1].second)
                return -EEXIST;
        return 0;
    });
}
