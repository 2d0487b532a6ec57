// offset_alloc: the out-of-line half of the model of Mooncake Store's
// OffsetAllocator (behind shmbench/offset_alloc.h, C++17): the bin lists'
// upkeep (insertNodeIntoBin, removeNodeFromBin, each a call from the
// allocation and free paths), the constructors, the reports, and the
// OffsetAllocationHandle's destructor, which runs a free. The classes and
// the inline per-request path are in offset_alloc_model.hpp; the per-object
// allocator over them and the C entry points in offset_buffer.cc.
//
// Upstream: kvcache-ai/Mooncake at 3b5a594 (August 2026), mooncake-store/
// include/offset_allocator/offset_allocator.h and src/offset_allocator.cpp:
// __Allocator (Sebastian Aaltonen's OffsetAllocator: bins, node pool,
// neighbour merging; Mooncake's changes: a block keeps its bin's size, the
// node pool grows up to a cap) and the thread-safe OffsetAllocator around it
// (Mutex, size multiplier above 3.75 GB, free-region hint, counters) with its
// RAII OffsetAllocationHandle. The classes keep upstream's names and members
// in upstream's order, so that a request touches objects of upstream's sizes;
// the code is this project's.
#include "offset_alloc_model.hpp"

#include <algorithm>
#include <iterator>

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
