// offset_alloc_model.hpp: Mooncake Store's OffsetAllocator (size classes,
// __Allocator, Mutex, OffsetAllocator, OffsetAllocationHandle) for both
// halves of the model. What a request runs is inline here, so that it
// inlines into its callers as in one file; the four big functions are
// always_inline, as clang would not inline them with external linkage.
#ifndef SHMBENCH_OFFSET_ALLOC_MODEL_HPP
#define SHMBENCH_OFFSET_ALLOC_MODEL_HPP

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace shmb::offset {

// glog's VLOG(1) at a site: its level read and compared with 1 (verbosity is
// 0 in production, so every site is off; nothing is formatted).
inline std::atomic<int32_t> vlog_verbosity{0};

inline bool vlog_is_on(int32_t level)
{
    return vlog_verbosity.load(std::memory_order_relaxed) >= level;
}

// ---- OffsetAllocator's size classes (offset_allocator.cpp, SmallFloat) ----
//
// A size is binned as a tiny float: 3 mantissa bits under a hidden leading 1
// and an exponent, so that each power of two splits into 8 bins and a block
// wastes at most 1/8 of its size. Sizes below 8 are their own bins. The bin
// index is (exponent << 3) | mantissa; its top 5 bits pick one of 32 top bins,
// the low 3 bits one of 8 leaves.
constexpr uint32_t kMantissaBits = 3;
constexpr uint32_t kMantissaMask = (1u << kMantissaBits) - 1;
constexpr uint64_t kMaxBinSize = 4026531840ull; // 3.75 GiB: bin 239, the last one that fits 32 bits
constexpr uint32_t kTopBins = 32;
constexpr uint32_t kLeafBins = kTopBins * 8;
constexpr uint32_t kNone = 0xffffffffu; // OffsetAllocation::NO_SPACE, Node::unused

// How far `size` (above kMantissaMask) shifts right to leave its leading 1
// and the mantissa.
inline uint32_t mantissa_shift(uint32_t size)
{
    return 31 - uint32_t(__builtin_clz(size)) - kMantissaBits;
}

// The bin whose size is the largest not above `size` (a free region goes
// there: every request of that bin fits it).
inline uint32_t bin_round_down(uint32_t size)
{
    if (size <= kMantissaMask)
        return size;
    const uint32_t shift = mantissa_shift(size);
    return ((shift + 1) << kMantissaBits) | ((size >> shift) & kMantissaMask);
}

// The bin whose size is the smallest not below `size` (a request searches
// from there). A carry out of the mantissa moves to the next exponent.
inline uint32_t bin_round_up(uint32_t size)
{
    if (size <= kMantissaMask)
        return size;
    const uint32_t shift = mantissa_shift(size);
    const uint32_t bin = ((shift + 1) << kMantissaBits) + ((size >> shift) & kMantissaMask);
    return bin + ((size & ((1u << shift) - 1)) != 0);
}

inline uint32_t bin_bytes(uint32_t bin)
{
    const uint32_t exponent = bin >> kMantissaBits, mantissa = bin & kMantissaMask;
    return exponent == 0 ? mantissa : (mantissa | (kMantissaMask + 1)) << (exponent - 1);
}

// The lowest set bit of mask at or above `from` (from < 32), or kNone.
inline uint32_t lowest_bit_from(uint32_t mask, uint32_t from)
{
    const uint32_t above = mask & ~((1u << from) - 1);
    return above ? uint32_t(__builtin_ctz(above)) : kNone;
}

// OffsetAllocation: an offset in the allocator's units and the node that
// holds it.
struct OffsetAllocation {
    uint32_t offset = kNone;
    uint32_t metadata = kNone;
    bool isNoSpace() const { return offset == kNone; }
};

struct StorageReport {
    uint64_t totalFreeSpace;
    uint64_t largestFreeRegion;
};

struct OffsetAllocatorMetrics { // the part of upstream's that the counters give
    uint64_t allocated_size_;
    uint64_t allocated_num_;
    uint64_t capacity;
};

// __Allocator: every region, free or used, is a node in one pool (a vector
// reserved up front, so nodes never move), linked to its address neighbours;
// free regions also sit in a doubly linked list per bin, and two bitmasks say
// which bins are non-empty. Allocation finds the first non-empty bin at or
// above the request's with two bit scans, splits the region and bins the
// rest; free merges with free neighbours and bins the result. Unused nodes
// are a stack of indices.
class Allocator {
public:
    Allocator(uint32_t size, uint32_t init_capacity, uint32_t max_capacity);
    [[gnu::always_inline]] OffsetAllocation allocate(uint32_t size);
    [[gnu::always_inline]] uint32_t free(OffsetAllocation allocation);
    StorageReport storageReport() const;
    uint32_t size() const { return m_size; }

private:
    struct Node {
        uint32_t dataOffset = 0;
        uint32_t dataSize = 0;
        uint32_t binListPrev = kNone;
        uint32_t binListNext = kNone;
        uint32_t neighborPrev = kNone;
        uint32_t neighborNext = kNone;
        bool used = false;
    };

    uint32_t findBin(uint32_t minBinIndex) const;
    void unmarkIfEmpty(uint32_t binIndex);
    uint32_t insertNodeIntoBin(uint32_t size, uint32_t dataOffset);
    void removeNodeFromBin(uint32_t nodeIndex);

    uint32_t m_size;
    uint32_t m_current_capacity;
    uint32_t m_max_capacity;
    uint32_t m_freeStorage = 0;
    uint32_t m_usedBinsTop = 0;
    uint8_t m_usedBins[kTopBins] = {};
    uint32_t m_binIndices[kLeafBins];
    std::vector<Node> m_nodes;
    std::vector<uint32_t> m_freeNodes;
    uint32_t m_freeOffset = 0; // nodes taken from the stack
};

// The bin allocate() takes from: the lowest non-empty leaf at or above
// minBinIndex in its own top bin, else the lowest leaf of the next non-empty
// top bin (any of whose leaves fits). kNone when nothing fits.
inline uint32_t Allocator::findBin(uint32_t minBinIndex) const
{
    const uint32_t minTop = minBinIndex >> kMantissaBits, minLeaf = minBinIndex & kMantissaMask;
    uint32_t top = minTop, leaf = kNone;
    if (m_usedBinsTop & (1u << top))
        leaf = lowest_bit_from(m_usedBins[top], minLeaf);
    if (leaf == kNone) {
        top = lowest_bit_from(m_usedBinsTop, minTop + 1);
        if (top == kNone)
            return kNone;
        leaf = uint32_t(__builtin_ctz(m_usedBins[top]));
    }
    return (top << kMantissaBits) | leaf;
}

inline void Allocator::unmarkIfEmpty(uint32_t binIndex)
{
    if (m_binIndices[binIndex] != kNone)
        return;
    const uint32_t top = binIndex >> kMantissaBits;
    m_usedBins[top] &= uint8_t(~(1u << (binIndex & kMantissaMask)));
    if (m_usedBins[top] == 0)
        m_usedBinsTop &= ~(1u << top);
}

// __Allocator::allocate: the first node of the bin found is used whole if its
// size is the request's bin size, else split, the rest binned as a new node
// between it and its next neighbour.
inline OffsetAllocation Allocator::allocate(uint32_t size)
{
    if (m_freeOffset == m_max_capacity)
        return {};
    if (m_freeOffset == m_current_capacity) { // grow the pool by one node
        m_freeNodes.push_back(m_current_capacity);
        m_nodes.emplace_back();
        m_current_capacity++;
    }
    const uint32_t minBinIndex = bin_round_up(size);
    const uint32_t binIndex = findBin(minBinIndex);
    if (binIndex == kNone)
        return {};
    const uint32_t nodeIndex = m_binIndices[binIndex];
    Node &node = m_nodes[nodeIndex];
    const uint32_t nodeTotalSize = node.dataSize;
    const uint32_t roundupSize = bin_bytes(minBinIndex); // Mooncake: the block keeps its bin's size
    node.dataSize = roundupSize;
    node.used = true;
    m_binIndices[binIndex] = node.binListNext;
    if (node.binListNext != kNone)
        m_nodes[node.binListNext].binListPrev = kNone;
    m_freeStorage -= nodeTotalSize;
    unmarkIfEmpty(binIndex);

    const uint32_t reminderSize = nodeTotalSize - roundupSize;
    if (reminderSize > 0) {
        const uint32_t newNodeIndex = insertNodeIntoBin(reminderSize, node.dataOffset + roundupSize);
        if (node.neighborNext != kNone)
            m_nodes[node.neighborNext].neighborPrev = newNodeIndex;
        m_nodes[newNodeIndex].neighborPrev = nodeIndex;
        m_nodes[newNodeIndex].neighborNext = node.neighborNext;
        node.neighborNext = newNodeIndex;
    }
    return {node.dataOffset, nodeIndex};
}

// __Allocator::storageReport: the largest free region is the size of the
// highest non-empty bin; nothing is free while the node pool is full.
inline StorageReport Allocator::storageReport() const
{
    if (m_freeOffset >= m_max_capacity)
        return {0, 0};
    uint64_t largest = 0;
    if (m_usedBinsTop) {
        const uint32_t top = 31 - uint32_t(__builtin_clz(m_usedBinsTop));
        const uint32_t leaf = 31 - uint32_t(__builtin_clz(m_usedBins[top]));
        largest = bin_bytes((top << kMantissaBits) | leaf);
    }
    return {m_freeStorage, largest};
}

// __Allocator::free: the node absorbs a free previous and a free next
// neighbour (their nodes go back to the stack), then the merged region is
// binned afresh and relinked. Returns the merged size, or 0 when the pool is
// full (no allocation could use it).
inline uint32_t Allocator::free(OffsetAllocation allocation)
{
    if (m_nodes.empty()) // a moved-from allocator: upstream checks it on every free
        return 0;
    const uint32_t nodeIndex = allocation.metadata;
    Node &node = m_nodes[nodeIndex];
    uint32_t offset = node.dataOffset;
    uint32_t size = node.dataSize;
    if (node.neighborPrev != kNone && !m_nodes[node.neighborPrev].used) {
        Node &prevNode = m_nodes[node.neighborPrev];
        offset = prevNode.dataOffset;
        size += prevNode.dataSize;
        removeNodeFromBin(node.neighborPrev);
        node.neighborPrev = prevNode.neighborPrev;
    }
    if (node.neighborNext != kNone && !m_nodes[node.neighborNext].used) {
        Node &nextNode = m_nodes[node.neighborNext];
        size += nextNode.dataSize;
        removeNodeFromBin(node.neighborNext);
        node.neighborNext = nextNode.neighborNext;
    }
    const uint32_t neighborNext = node.neighborNext, neighborPrev = node.neighborPrev;
    m_freeNodes[--m_freeOffset] = nodeIndex;
    const uint32_t combinedNodeIndex = insertNodeIntoBin(size, offset);
    if (neighborNext != kNone) {
        m_nodes[combinedNodeIndex].neighborNext = neighborNext;
        m_nodes[neighborNext].neighborPrev = combinedNodeIndex;
    }
    if (neighborPrev != kNone) {
        m_nodes[combinedNodeIndex].neighborPrev = neighborPrev;
        m_nodes[neighborPrev].neighborNext = combinedNodeIndex;
    }
    return m_freeOffset < m_max_capacity ? size : 0;
}

// ---- include/mutex.h ----

class Mutex {
public:
    void lock() { mutex_.lock(); }
    void unlock() { mutex_.unlock(); }

private:
    std::mutex mutex_;
};

class MutexLocker {
public:
    explicit MutexLocker(Mutex *mu) : mut(mu), locked(true) { mu->lock(); }
    MutexLocker(const MutexLocker &) = delete;
    MutexLocker &operator=(const MutexLocker &) = delete;
    ~MutexLocker()
    {
        if (locked)
            mut->unlock();
    }
    void unlock()
    {
        mut->unlock();
        locked = false;
    }

private:
    Mutex *mut;
    bool locked;
};

class OffsetAllocator;

// OffsetAllocationHandle: frees its allocation when destroyed, if the
// allocator still exists (a weak_ptr locked on the way).
class OffsetAllocationHandle {
public:
    OffsetAllocationHandle(std::shared_ptr<OffsetAllocator> allocator, OffsetAllocation allocation,
                           uint64_t base, uint64_t size)
        : m_allocator(std::move(allocator)), m_allocation(allocation), real_base(base),
          requested_size(size)
    {
    }
    OffsetAllocationHandle(OffsetAllocationHandle &&other) noexcept
        : m_allocator(std::move(other.m_allocator)), m_allocation(other.m_allocation),
          real_base(other.real_base), requested_size(other.requested_size)
    {
        other.m_allocation = {};
        other.real_base = 0;
        other.requested_size = 0;
    }
    OffsetAllocationHandle &operator=(OffsetAllocationHandle &&) = delete;
    OffsetAllocationHandle(const OffsetAllocationHandle &) = delete;
    OffsetAllocationHandle &operator=(const OffsetAllocationHandle &) = delete;
    ~OffsetAllocationHandle();

    uint64_t address() const { return real_base; }
    void *ptr() const { return reinterpret_cast<void *>(address()); }

private:
    std::weak_ptr<OffsetAllocator> m_allocator;
    OffsetAllocation m_allocation;
    uint64_t real_base;
    uint64_t requested_size;
};

// OffsetBufferAllocator's constructor (allocator.cpp): the node pool from
// the segment's size, 1 Ki <= init <= 64 Ki (bytes / 4096), 1 Mi <= max <=
// 64 Mi (bytes / 1024); max_nodes, when given, replaces the cap (and bounds
// init). The bare allocator's rows build OffsetAllocator with the same.
inline void node_capacity(size_t size, uint32_t max_nodes, uint32_t *init, uint32_t *max)
{
    uint64_t i = std::clamp<uint64_t>(size / 4096, 1024, 64 * 1024);
    uint64_t m = std::clamp<uint64_t>(size / 1024, 1024 * 1024, 64 * 1024 * 1024);
    if (max_nodes) {
        m = max_nodes;
        i = std::min<uint64_t>(i, max_nodes);
    }
    *init = uint32_t(i);
    *max = uint32_t(m);
}

// OffsetAllocator: the thread-safe wrapper, owned by a shared_ptr (create()
// wraps `new`: a separate control block) so that handles can hold it weakly.
class OffsetAllocator : public std::enable_shared_from_this<OffsetAllocator> {
public:
    static std::shared_ptr<OffsetAllocator> create(uint64_t base, size_t size, uint32_t init_capacity,
                                                   uint32_t max_capacity)
    {
        return std::shared_ptr<OffsetAllocator>(new OffsetAllocator(base, size, init_capacity, max_capacity));
    }
    OffsetAllocator(const OffsetAllocator &) = delete;
    OffsetAllocator &operator=(const OffsetAllocator &) = delete;

    [[gnu::always_inline]] std::optional<OffsetAllocationHandle> allocate(size_t size);
    [[gnu::always_inline]] void freeAllocation(const OffsetAllocation &allocation, uint64_t size);
    uint64_t getLargestFreeRegion() const { return m_largest_free_region.load(std::memory_order_relaxed); }
    StorageReport storageReport() const;
    OffsetAllocatorMetrics get_metrics() const;

private:
    OffsetAllocator(uint64_t base, size_t size, uint32_t init_capacity, uint32_t max_capacity);
    void refreshLargestFreeRegion();
    uint64_t capacityBytes() const { return uint64_t(m_allocator->size()) << m_multiplier_bits; }
    uint64_t largestFreeBytes() const // the bins' largest free region, in bytes
    {
        return m_allocator->storageReport().largestFreeRegion << m_multiplier_bits;
    }

    std::unique_ptr<Allocator> m_allocator;
    uint64_t m_base;
    uint64_t m_multiplier_bits;
    uint64_t m_capacity;
    mutable Mutex m_mutex;
    uint64_t m_allocated_size = 0;
    uint64_t m_allocated_num = 0;
    std::atomic<uint64_t> m_largest_free_region{0};
    bool m_largest_free_region_tightened = false;
};

// OffsetAllocator::allocate: the lock-free hint turns away what cannot fit;
// under the mutex, the bins and the counters; the handle (shared_from_this,
// then held weakly) is made after unlocking.
inline std::optional<OffsetAllocationHandle> OffsetAllocator::allocate(size_t size)
{
    if (size == 0 || size > getLargestFreeRegion())
        return std::nullopt;
    const size_t fake_size =
        m_multiplier_bits > 0 ? ((size + (uint64_t(1) << m_multiplier_bits) - 1u) >> m_multiplier_bits) : size;
    if (fake_size > kMaxBinSize)
        return std::nullopt;
    MutexLocker guard(&m_mutex);
    if (!m_allocator) // never null here, but upstream tests it on every request
        return std::nullopt;
    const OffsetAllocation allocation = m_allocator->allocate(uint32_t(fake_size));
    if (allocation.isNoSpace()) {
        refreshLargestFreeRegion();
        vlog_is_on(1); // upstream logs the metrics at VLOG(1)
        return std::nullopt;
    }
    m_allocated_size += size;
    m_allocated_num++;
    const uint64_t real_base = m_base + (uint64_t(allocation.offset) << m_multiplier_bits);
    guard.unlock();
    return OffsetAllocationHandle(shared_from_this(), allocation, real_base, size);
}

// OffsetAllocator::refreshLargestFreeRegion: after a failure, the hint is
// tightened to the truth under the mutex.
inline void OffsetAllocator::refreshLargestFreeRegion()
{
    const uint64_t largest = largestFreeBytes();
    m_largest_free_region.store(largest, std::memory_order_relaxed);
    m_largest_free_region_tightened = largest < capacityBytes();
}

// OffsetAllocator::freeAllocation: the bins under the mutex, the hint raised
// if the merged region beats it, the counters saturating at 0.
inline void OffsetAllocator::freeAllocation(const OffsetAllocation &allocation, uint64_t size)
{
    MutexLocker lock(&m_mutex);
    if (!m_allocator)
        return;
    const uint64_t freed_region = uint64_t(m_allocator->free(allocation)) << m_multiplier_bits;
    if (m_largest_free_region_tightened) {
        if (freed_region > m_largest_free_region.load(std::memory_order_relaxed))
            m_largest_free_region.store(freed_region, std::memory_order_relaxed);
        if (freed_region >= capacityBytes())
            m_largest_free_region_tightened = false;
    }
    m_allocated_size = size > m_allocated_size ? 0 : m_allocated_size - size; // upstream warns when clamping
    if (m_allocated_num > 0)
        m_allocated_num--;
}

} // namespace shmb::offset

#endif
