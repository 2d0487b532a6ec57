// offset_alloc: the out-of-line half of the OffsetAllocator model (the bin
// lists' upkeep, constructors, reports, ~OffsetAllocationHandle) and the
// bare allocator's entry points (shmb_offset_bare_*); the inline per-request
// path is offset_alloc_model.hpp. Upstream names and member order are kept
// so that a request touches objects of upstream's sizes (docs/models.md).
#include "cxx_guard.hpp"
#include "offset_alloc_model.hpp"
#include "shmbench/offset_alloc.h"

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <new>

namespace shmb::offset {

// __Allocator::__Allocator and reset(): the pool reserved to its cap, the
// first init_capacity nodes made, the whole range one free node.
Allocator::Allocator(uint32_t size, uint32_t init_capacity, uint32_t max_capacity)
    : m_size(size), m_current_capacity(init_capacity),
      m_max_capacity(std::max(init_capacity, max_capacity))
{
    std::fill(std::begin(m_binIndices), std::end(m_binIndices), kNone);
    m_nodes.reserve(m_max_capacity);
    m_freeNodes.reserve(m_max_capacity);
    m_nodes.resize(m_current_capacity);
    m_freeNodes.resize(m_current_capacity);
    for (uint32_t i = 0; i < m_current_capacity; i++)
        m_freeNodes[i] = i;
    insertNodeIntoBin(m_size, 0);
}

// __Allocator::insertNodeIntoBin: a node off the stack, pushed on the front
// of the bin of `size` rounded down.
uint32_t Allocator::insertNodeIntoBin(uint32_t size, uint32_t dataOffset)
{
    const uint32_t binIndex = bin_round_down(size);
    if (m_binIndices[binIndex] == kNone) {
        m_usedBins[binIndex >> kMantissaBits] |= uint8_t(1u << (binIndex & kMantissaMask));
        m_usedBinsTop |= 1u << (binIndex >> kMantissaBits);
    }
    const uint32_t topNodeIndex = m_binIndices[binIndex];
    const uint32_t nodeIndex = m_freeNodes[m_freeOffset++];
    Node fresh;
    fresh.dataOffset = dataOffset;
    fresh.dataSize = size;
    fresh.binListNext = topNodeIndex;
    m_nodes[nodeIndex] = fresh;
    if (topNodeIndex != kNone)
        m_nodes[topNodeIndex].binListPrev = nodeIndex;
    m_binIndices[binIndex] = nodeIndex;
    m_freeStorage += size;
    return nodeIndex;
}

// __Allocator::removeNodeFromBin: unlinked from its bin's list (the bin found
// again from its size when it is the list's head), back on the stack.
void Allocator::removeNodeFromBin(uint32_t nodeIndex)
{
    Node &node = m_nodes[nodeIndex];
    if (node.binListPrev != kNone) {
        m_nodes[node.binListPrev].binListNext = node.binListNext;
        if (node.binListNext != kNone)
            m_nodes[node.binListNext].binListPrev = node.binListPrev;
    } else {
        const uint32_t binIndex = bin_round_down(node.dataSize);
        m_binIndices[binIndex] = node.binListNext;
        if (node.binListNext != kNone)
            m_nodes[node.binListNext].binListPrev = kNone;
        unmarkIfEmpty(binIndex);
    }
    m_freeNodes[--m_freeOffset] = nodeIndex;
    m_freeStorage -= node.dataSize;
}

namespace {

// calculateMultiplier: ranges above 3.75 GB count in units of 2^bits bytes.
uint64_t multiplier_bits(size_t size)
{
    uint64_t bits = 0;
    while (kMaxBinSize < (uint64_t(size) >> bits))
        bits++;
    return bits;
}

} // namespace

OffsetAllocator::OffsetAllocator(uint64_t base, size_t size, uint32_t init_capacity, uint32_t max_capacity)
    : m_base(base), m_multiplier_bits(multiplier_bits(size)), m_capacity(size)
{
    m_allocator = std::make_unique<Allocator>(uint32_t(size >> m_multiplier_bits), init_capacity, max_capacity);
    m_largest_free_region.store(largestFreeBytes(), std::memory_order_relaxed);
}

StorageReport OffsetAllocator::storageReport() const
{
    MutexLocker guard(&m_mutex);
    const StorageReport r = m_allocator->storageReport();
    return {r.totalFreeSpace << m_multiplier_bits, r.largestFreeRegion << m_multiplier_bits};
}

OffsetAllocatorMetrics OffsetAllocator::get_metrics() const
{
    MutexLocker guard(&m_mutex);
    return {m_allocated_size, m_allocated_num, m_capacity};
}

// ~OffsetAllocationHandle: weak_ptr::lock, then freeAllocation.
OffsetAllocationHandle::~OffsetAllocationHandle()
{
    auto allocator = m_allocator.lock();
    if (allocator)
        allocator->freeAllocation(m_allocation, requested_size);
}

} // namespace shmb::offset

// ---- the bare allocator (shmbench/offset_alloc.h) ----

struct shmb_offset_bare {
    std::shared_ptr<shmb::offset::OffsetAllocator> allocator;
};

namespace {

using shmb::offset::OffsetAllocationHandle;
static_assert(sizeof(OffsetAllocationHandle) <= sizeof(shmb_offset_bare_handle_t::handle) &&
                  alignof(OffsetAllocationHandle) <= alignof(uint64_t),
              "shmb_offset_bare_handle_t holds an OffsetAllocationHandle");

OffsetAllocationHandle &handle_of(shmb_offset_bare_handle_t *h)
{
    return *std::launder(reinterpret_cast<OffsetAllocationHandle *>(h->handle));
}

} // namespace

extern "C" {

int shmb_offset_bare_create(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_bare_t **out) noexcept
{
    if (!base || bytes == 0 || !out || reinterpret_cast<uintptr_t>(base) > UINTPTR_MAX - bytes)
        return -EINVAL;
    return shmb::guard_or(-ENOMEM, [&] {
        uint32_t init, max;
        shmb::offset::node_capacity(bytes, max_nodes, &init, &max);
        auto a = std::make_unique<shmb_offset_bare>();
        a->allocator = shmb::offset::OffsetAllocator::create(reinterpret_cast<uintptr_t>(base), bytes, init, max);
        *out = a.release();
        return 0;
    });
}

void shmb_offset_bare_destroy(shmb_offset_bare_t *a) noexcept
{
    delete a;
}

// OffsetAllocator::allocate, its handle moved into the caller's slot (a
// weak_ptr's move: no atomic). Upstream's allocate may throw only where
// shared_from_this would (never here: the allocator is owned by a shared_ptr).
int shmb_offset_bare_alloc(shmb_offset_bare_t *a, size_t bytes, shmb_offset_bare_handle_t *h) noexcept
{
    if (!a || !h || bytes == 0 || h->addr)
        return -EINVAL;
    return shmb::guard_or(-ENOMEM, [&] {
        std::optional<OffsetAllocationHandle> got = a->allocator->allocate(bytes);
        if (!got)
            return -ENOMEM;
        h->addr = got->ptr();
        new (h->handle) OffsetAllocationHandle(std::move(*got));
        return 0;
    });
}

int shmb_offset_bare_free(shmb_offset_bare_handle_t *h) noexcept
{
    if (!h || !h->addr)
        return -EINVAL;
    handle_of(h).~OffsetAllocationHandle();
    h->addr = nullptr;
    return 0;
}

uint64_t shmb_offset_bare_live(const shmb_offset_bare_t *a) noexcept
{
    return a ? a->allocator->get_metrics().allocated_num_ : 0;
}

} // extern "C"
