// offset_alloc: Mooncake Store's per-object allocator (a system model, C++17
// behind shmbench/offset_alloc.h).
//
// Upstream: kvcache-ai/Mooncake at 3b5a594 (August 2026), mooncake-store:
// - include/offset_allocator/offset_allocator.h, src/offset_allocator.cpp:
//   __Allocator (Sebastian Aaltonen's OffsetAllocator: bins, node pool,
//   neighbour merging; Mooncake's changes: a block keeps its bin's size, the
//   node pool grows up to a cap) and the thread-safe OffsetAllocator around it
//   (Mutex, size multiplier above 3.75 GB, free-region hint, counters) with
//   its RAII OffsetAllocationHandle;
// - include/allocator.h, src/allocator.cpp: AllocatedBuffer and
//   OffsetBufferAllocator::allocate / deallocate;
// - include/mutex.h: Mutex (a std::mutex) and MutexLocker;
// - src/master_metric_manager.cpp: inc/dec_allocated_mem_size, over
//   yalantinglibs' ylt::metric::gauge_t and dynamic_gauge_1t (alibaba/
//   yalantinglibs at Mooncake's submodule commit 7801bc9ad: include/ylt/metric/
//   gauge.hpp, counter.hpp, thread_local_value.hpp, dynamic_metric.hpp,
//   include/ylt/util/map_sharded.hpp).
// The classes keep upstream's names and members in upstream's order, so that
// a request touches objects of upstream's sizes; the code is this project's.
#include "offset_alloc_internal.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

// glog's VLOG(1) at a site: its level read and compared with 1 (verbosity is
// 0 in production, so every site is off; nothing is formatted).
std::atomic<int32_t> vlog_verbosity{0};

bool vlog_is_on(int32_t level)
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

// The bin whose size is the largest not above `size` (a free region goes
// there: every request of that bin fits it).
uint32_t bin_round_down(uint32_t size)
{
    if (size <= kMantissaMask)
        return size;
    const uint32_t shift = 31 - uint32_t(__builtin_clz(size)) - kMantissaBits;
    return ((shift + 1) << kMantissaBits) | ((size >> shift) & kMantissaMask);
}

// The bin whose size is the smallest not below `size` (a request searches
// from there). A carry out of the mantissa moves to the next exponent.
uint32_t bin_round_up(uint32_t size)
{
    if (size <= kMantissaMask)
        return size;
    const uint32_t shift = 31 - uint32_t(__builtin_clz(size)) - kMantissaBits;
    const uint32_t bin = ((shift + 1) << kMantissaBits) + ((size >> shift) & kMantissaMask);
    return bin + ((size & ((1u << shift) - 1)) != 0);
}

uint32_t bin_bytes(uint32_t bin)
{
    const uint32_t exponent = bin >> kMantissaBits, mantissa = bin & kMantissaMask;
    return exponent == 0 ? mantissa : (mantissa | (kMantissaMask + 1)) << (exponent - 1);
}

// The lowest set bit of mask at or above `from` (from < 32), or kNone.
uint32_t lowest_bit_from(uint32_t mask, uint32_t from)
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
    OffsetAllocation allocate(uint32_t size);
    uint32_t free(OffsetAllocation allocation);
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

// The bin allocate() takes from: the lowest non-empty leaf at or above
// minBinIndex in its own top bin, else the lowest leaf of the next non-empty
// top bin (any of whose leaves fits). kNone when nothing fits.
uint32_t Allocator::findBin(uint32_t minBinIndex) const
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

void Allocator::unmarkIfEmpty(uint32_t binIndex)
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
OffsetAllocation Allocator::allocate(uint32_t size)
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

// __Allocator::free: the node absorbs a free previous and a free next
// neighbour (their nodes go back to the stack), then the merged region is
// binned afresh and relinked. Returns the merged size, or 0 when the pool is
// full (no allocation could use it).
uint32_t Allocator::free(OffsetAllocation allocation)
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

// __Allocator::storageReport: the largest free region is the size of the
// highest non-empty bin; nothing is free while the node pool is full.
StorageReport Allocator::storageReport() const
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

    std::optional<OffsetAllocationHandle> allocate(size_t size);
    void freeAllocation(const OffsetAllocation &allocation, uint64_t size);
    uint64_t getLargestFreeRegion() const { return m_largest_free_region.load(std::memory_order_relaxed); }
    StorageReport storageReport() const;
    OffsetAllocatorMetrics get_metrics() const;

private:
    OffsetAllocator(uint64_t base, size_t size, uint32_t init_capacity, uint32_t max_capacity);
    void refreshLargestFreeRegion();
    uint64_t capacityBytes() const { return uint64_t(m_allocator->size()) << m_multiplier_bits; }

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

// calculateMultiplier: ranges above 3.75 GB count in units of 2^bits bytes.
uint64_t multiplier_bits(size_t size)
{
    uint64_t bits = 0;
    while (kMaxBinSize < (uint64_t(size) >> bits))
        bits++;
    return bits;
}

OffsetAllocator::OffsetAllocator(uint64_t base, size_t size, uint32_t init_capacity, uint32_t max_capacity)
    : m_base(base), m_multiplier_bits(multiplier_bits(size)), m_capacity(size)
{
    m_allocator = std::make_unique<Allocator>(uint32_t(size >> m_multiplier_bits), init_capacity, max_capacity);
    m_largest_free_region.store(m_allocator->storageReport().largestFreeRegion << m_multiplier_bits,
                                std::memory_order_relaxed);
}

// OffsetAllocator::allocate: the lock-free hint turns away what cannot fit;
// under the mutex, the bins and the counters; the handle (shared_from_this,
// then held weakly) is made after unlocking.
std::optional<OffsetAllocationHandle> OffsetAllocator::allocate(size_t size)
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
void OffsetAllocator::refreshLargestFreeRegion()
{
    const uint64_t largest = m_allocator->storageReport().largestFreeRegion << m_multiplier_bits;
    m_largest_free_region.store(largest, std::memory_order_relaxed);
    m_largest_free_region_tightened = largest < capacityBytes();
}

// OffsetAllocator::freeAllocation: the bins under the mutex, the hint raised
// if the merged region beats it, the counters saturating at 0.
void OffsetAllocator::freeAllocation(const OffsetAllocation &allocation, uint64_t size)
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

// ---- the master's allocated-bytes metrics (yalantinglibs ylt::metric) ----

unsigned duplicates() // min(128, hardware_concurrency()), at least 1
{
    return std::max(1u, std::min(128u, std::thread::hardware_concurrency()));
}

// thread_local_value<int64_t>: one atomic per "duplicate", each allocated on
// first use; a thread always uses the duplicate its thread_local round-robin
// index picks.
class ThreadLocalValue {
public:
    explicit ThreadLocalValue(unsigned n) : duplicates_(n) {}
    ThreadLocalValue(const ThreadLocalValue &) = delete;
    ThreadLocalValue &operator=(const ThreadLocalValue &) = delete;
    ~ThreadLocalValue()
    {
        for (auto &d : duplicates_)
            delete d.load();
    }
    void inc(int64_t v) { local_value().fetch_add(v, std::memory_order_relaxed); }
    void dec(int64_t v) { local_value().fetch_sub(v, std::memory_order_relaxed); }

private:
    static uint32_t round_index()
    {
        static std::atomic<uint32_t> round{0};
        static thread_local uint32_t index = round++;
        return index;
    }
    std::atomic<int64_t> &local_value()
    {
        auto &slot = duplicates_[round_index() % duplicates_.size()];
        if (slot == nullptr) {
            auto fresh = new std::atomic<int64_t>(0);
            std::atomic<int64_t> *expected = nullptr;
            if (!slot.compare_exchange_strong(expected, fresh))
                delete fresh;
        }
        return *slot;
    }
    std::vector<std::atomic<std::atomic<int64_t> *>> duplicates_;
};

// gauge_t (basic_static_gauge<int64_t>): a has-changed flag, then the value.
class Gauge {
public:
    Gauge() : value_(duplicates()) {}
    void inc(int64_t v)
    {
        if (v < 0)
            return;
        if (!has_change_.load(std::memory_order_relaxed))
            has_change_.store(true, std::memory_order_relaxed);
        value_.inc(v);
    }
    void dec(int64_t v)
    {
        if (!has_change_)
            has_change_ = true;
        value_.dec(v);
    }

private:
    std::atomic<bool> has_change_{false};
    ThreadLocalValue value_;
};

// The 131/137 polynomial hashes yalantinglibs runs over a label's bytes.
template <unsigned Seed> size_t label_hash(const std::string &s)
{
    unsigned h = 0;
    for (char c : s)
        h = h * Seed + unsigned(c);
    return h;
}

// dynamic_gauge_1t: one label. Its values sit in a map sharded by the
// label's hash (map_sharded_t: a std::mutex and an unordered_map per shard),
// each value a shared_ptr to the label and an atomic; inc/dec copy that
// shared_ptr out under the shard's mutex (try_emplace), then add atomically.
class DynamicGauge1 {
public:
    using Label = std::array<std::string, 1>;
    DynamicGauge1() : shards_(duplicates()) {}
    void inc(const Label &label, int64_t v) { try_emplace(label)->value.fetch_add(v, std::memory_order_relaxed); }
    void dec(const Label &label, int64_t v) { try_emplace(label)->value.fetch_sub(v, std::memory_order_relaxed); }

private:
    struct MetricPair {
        explicit MetricPair(const Label &l) : label(l) {}
        Label label;
        std::atomic<int64_t> value{0};
    };
    struct Key { // std::span<const std::string, 1> into the pair's label
        const std::string *label;
        bool operator==(const Key &o) const { return *label == *o.label; }
    };
    struct KeyHash {
        size_t operator()(const Key &k) const { return label_hash<131>(*k.label); }
    };
    struct Shard {
        std::unique_ptr<std::mutex> mtx = std::make_unique<std::mutex>();
        std::unique_ptr<std::unordered_map<Key, std::shared_ptr<MetricPair>, KeyHash>> map;
    };

    std::shared_ptr<MetricPair> try_emplace(const Label &label)
    {
        Shard &shard = shards_[label_hash<137>(label[0]) % shards_.size()];
        std::lock_guard<std::mutex> lock(*shard.mtx);
        if (!shard.map)
            shard.map = std::make_unique<std::unordered_map<Key, std::shared_ptr<MetricPair>, KeyHash>>();
        auto it = shard.map->find(Key{&label[0]});
        if (it == shard.map->end()) {
            auto pair = std::make_shared<MetricPair>(label);
            it = shard.map->emplace(Key{&pair->label[0]}, pair).first;
            size_.fetch_add(1);
        }
        return it->second;
    }

    std::vector<Shard> shards_;
    std::atomic<int64_t> size_{0};
};

// MasterMetricManager: a function-local static, of which a request touches
// two gauges.
class MasterMetricManager {
public:
    static MasterMetricManager &instance()
    {
        static MasterMetricManager static_instance;
        return static_instance;
    }
    void inc_allocated_mem_size(const std::string &segment, int64_t val)
    {
        mem_allocated_size_.inc(val);
        if (!segment.empty())
            mem_allocated_size_per_segment_.inc({segment}, val);
    }
    void dec_allocated_mem_size(const std::string &segment, int64_t val)
    {
        mem_allocated_size_.dec(val);
        if (!segment.empty())
            mem_allocated_size_per_segment_.dec({segment}, val);
    }

private:
    Gauge mem_allocated_size_;
    DynamicGauge1 mem_allocated_size_per_segment_;
};

// ---- include/allocator.h, src/allocator.cpp ----

enum class ReplicaType { MEMORY = 0 }; // the replica kind a memory segment's allocator serves

class AllocatedBuffer;

class BufferAllocatorBase {
public:
    virtual ~BufferAllocatorBase() = default;
    virtual std::unique_ptr<AllocatedBuffer> allocate(size_t size) = 0;
    virtual void deallocate(AllocatedBuffer *handle) = 0;
    virtual size_t capacity() const = 0;
    virtual size_t size() const = 0;
    virtual size_t getLargestFreeRegion() const = 0;
};

// AllocatedBuffer: what the master keeps per replica; destroying it frees
// the block through its allocator, if that still exists.
class AllocatedBuffer {
public:
    AllocatedBuffer(std::shared_ptr<BufferAllocatorBase> allocator, void *buffer_ptr, std::size_t size,
                    std::optional<OffsetAllocationHandle> &&offset_handle)
        : allocator_(std::move(allocator)), buffer_ptr_(buffer_ptr), size_(size),
          offset_handle_(std::move(offset_handle))
    {
    }
    AllocatedBuffer(const AllocatedBuffer &) = delete;
    AllocatedBuffer &operator=(const AllocatedBuffer &) = delete;
    ~AllocatedBuffer()
    {
        auto alloc = allocator_.lock();
        if (alloc) {
            alloc->deallocate(this);
            vlog_is_on(1); // "buf_handle_deallocated"
        }
    }

    void *data() const noexcept { return buffer_ptr_; }
    std::size_t size() const noexcept { return size_; }
    void releaseOffsetHandle() { offset_handle_.reset(); }
    void plantAddress(void *p) { buffer_ptr_ = p; } // the test hook only

private:
    std::weak_ptr<BufferAllocatorBase> allocator_;
    std::string segment_name_;
    void *buffer_ptr_{nullptr};
    std::size_t size_{0};
    std::string protocol{"tcp"};
    std::optional<OffsetAllocationHandle> offset_handle_;
};

// Mooncake's mount examples name a segment after its host, "192.168.0.137"
// (Mooncake's docs); it fits std::string's inline buffer, so the metric's label copy
// allocates nothing.
constexpr const char *kSegmentName = "192.168.0.137";

class OffsetBufferAllocator : public BufferAllocatorBase,
                              public std::enable_shared_from_this<OffsetBufferAllocator> {
public:
    OffsetBufferAllocator(std::string segment_name, size_t base, size_t size, uint32_t max_nodes);
    ~OffsetBufferAllocator() override
    {
        MasterMetricManager::instance().dec_allocated_mem_size(segment_name_, int64_t(cur_size_.load()));
    }
    std::unique_ptr<AllocatedBuffer> allocate(size_t size) override;
    void deallocate(AllocatedBuffer *handle) override;
    size_t size() const override { return cur_size_.load(); }
    size_t getLargestFreeRegion() const override { return offset_allocator_->storageReport().largestFreeRegion; }
    size_t capacity() const override { return total_size_; }
    uintptr_t base() const { return base_; }
    const OffsetAllocator &getOffsetAllocator() const { return *offset_allocator_; }

private:
    const std::string segment_name_;
    const size_t base_;
    const size_t total_size_;
    std::atomic_size_t cur_size_;
    // Unread here: kept so that the members a request reads sit where
    // upstream's do.
    const std::string transport_endpoint_;
    const ReplicaType replica_type_;
    std::shared_ptr<OffsetAllocator> offset_allocator_;
};

// OffsetBufferAllocator's constructor: node pool from the segment's size,
// 1 Ki <= init <= 64 Ki (bytes / 4096), 1 Mi <= max <= 64 Mi (bytes / 1024);
// max_nodes, when given, replaces the cap (and bounds init).
OffsetBufferAllocator::OffsetBufferAllocator(std::string segment_name, size_t base, size_t size,
                                             uint32_t max_nodes)
    : segment_name_(std::move(segment_name)), base_(base), total_size_(size), cur_size_(0),
      transport_endpoint_(segment_name_ + ":12345"), replica_type_(ReplicaType::MEMORY)
{
    uint64_t init_capacity = std::clamp<uint64_t>(size / 4096, 1024, 64 * 1024);
    uint64_t max_capacity = std::clamp<uint64_t>(size / 1024, 1024 * 1024, 64 * 1024 * 1024);
    if (max_nodes) {
        max_capacity = max_nodes;
        init_capacity = std::min<uint64_t>(init_capacity, max_nodes);
    }
    offset_allocator_ = OffsetAllocator::create(base, size, uint32_t(init_capacity), uint32_t(max_capacity));
}

// OffsetBufferAllocator::allocate: the OffsetAllocator's handle moved into a
// fresh AllocatedBuffer that holds this allocator weakly, then the size
// counter and the metrics. Upstream catches every exception into nullptr.
std::unique_ptr<AllocatedBuffer> OffsetBufferAllocator::allocate(size_t size)
{
    if (!offset_allocator_)
        return nullptr;
    std::unique_ptr<AllocatedBuffer> allocated_buffer = nullptr;
    try {
        auto allocation_handle = offset_allocator_->allocate(size);
        if (!allocation_handle) {
            vlog_is_on(1); // "allocation_failed"
            return nullptr;
        }
        void *buffer_ptr = allocation_handle->ptr();
        allocated_buffer =
            std::make_unique<AllocatedBuffer>(shared_from_this(), buffer_ptr, size, std::move(allocation_handle));
        vlog_is_on(1); // "allocation_succeeded"
    } catch (...) {
        return nullptr;
    }
    cur_size_.fetch_add(size);
    if (replica_type_ == ReplicaType::MEMORY)
        MasterMetricManager::instance().inc_allocated_mem_size(segment_name_, int64_t(size));
    return allocated_buffer;
}

// OffsetBufferAllocator::deallocate, called by ~AllocatedBuffer: the handle
// reset (which frees the block), then the counter and the metrics.
void OffsetBufferAllocator::deallocate(AllocatedBuffer *handle)
{
    try {
        const size_t freed_size = handle->size();
        handle->releaseOffsetHandle();
        cur_size_.fetch_sub(freed_size);
        if (replica_type_ == ReplicaType::MEMORY)
            MasterMetricManager::instance().dec_allocated_mem_size(segment_name_, int64_t(freed_size));
        vlog_is_on(1); // "deallocation_succeeded"
    } catch (...) { // upstream logs it
    }
}

AllocatedBuffer *as_buffer(shmb_offset_block_t *b)
{
    return reinterpret_cast<AllocatedBuffer *>(b);
}

const AllocatedBuffer *as_buffer(const shmb_offset_block_t *b)
{
    return reinterpret_cast<const AllocatedBuffer *>(b);
}

} // namespace

// The segment manager's view of a mounted segment: the allocator as the
// allocation strategy calls it, through its base class.
struct shmb_offset {
    std::shared_ptr<OffsetBufferAllocator> offset;
    std::shared_ptr<BufferAllocatorBase> allocator;
    bool plant_overlap = false;
};

namespace {

int create_checked(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_t **out) noexcept
{
    try {
        auto a = std::make_unique<shmb_offset>();
        a->offset = std::make_shared<OffsetBufferAllocator>(kSegmentName, reinterpret_cast<uintptr_t>(base),
                                                            bytes, max_nodes);
        a->allocator = a->offset;
        *out = a.release();
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

int alloc_one(shmb_offset_t *a, size_t bytes, shmb_offset_block_t **out) noexcept
{
    try {
        std::unique_ptr<AllocatedBuffer> buffer = a->allocator->allocate(bytes);
        if (!buffer)
            return -ENOMEM;
        if (a->plant_overlap) {
            a->plant_overlap = false;
            buffer->plantAddress(static_cast<unsigned char *>(buffer->data()) - 1);
        }
        *out = reinterpret_cast<shmb_offset_block_t *>(buffer.release());
        return 0;
    } catch (...) {
        return -ENOMEM; // the metric's first label insert, outside upstream's try
    }
}

struct Span {
    uintptr_t begin;
    size_t bytes;
};

// "what: block A of X bytes ... block B of Y bytes" into why.
void say(char *why, size_t cap, const char *fmt, uintptr_t a, size_t x, uintptr_t b, size_t y)
{
    if (cap)
        std::snprintf(why, cap, fmt, reinterpret_cast<void *>(a), x, reinterpret_cast<void *>(b), y);
}

// Every block inside the range and the counters matching: the spans sorted
// by address in *spans.
int check_blocks(const shmb_offset_t *a, shmb_offset_block_t *const *blocks, size_t n, std::vector<Span> *spans,
                 char *why, size_t cap)
{
    const uintptr_t base = a->offset->base();
    const size_t bytes = a->allocator->capacity();
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        const auto *b = as_buffer(blocks[i]);
        const uintptr_t p = b ? reinterpret_cast<uintptr_t>(b->data()) : 0;
        const size_t len = b ? b->size() : 0;
        if (!b || p < base || len > bytes || p - base > bytes - len) {
            say(why, cap, "offset: block %p of %zu bytes is outside the range [%p, +%zu)", p, len, base, bytes);
            return -EPROTO;
        }
        spans->push_back({p, len});
        sum += len;
    }
    if (n != shmb_offset_live(a) || sum != shmb_offset_in_use(a)) {
        if (cap)
            std::snprintf(why, cap, "offset: %zu blocks of %llu bytes in all, the allocator counts %llu of %llu",
                          n, static_cast<unsigned long long>(sum),
                          static_cast<unsigned long long>(shmb_offset_live(a)),
                          static_cast<unsigned long long>(shmb_offset_in_use(a)));
        return -EPROTO;
    }
    std::sort(spans->begin(), spans->end(), [](const Span &x, const Span &y) { return x.begin < y.begin; });
    return 0;
}

int verify_checked(const shmb_offset_t *a, shmb_offset_block_t *const *blocks, size_t n, char *why,
                   size_t cap) noexcept
{
    try {
        std::vector<Span> spans;
        spans.reserve(n);
        int rc = check_blocks(a, blocks, n, &spans, why, cap);
        for (size_t i = 1; i < spans.size() && rc == 0; i++) {
            if (spans[i - 1].begin + spans[i - 1].bytes > spans[i].begin) {
                say(why, cap, "offset: blocks %p of %zu bytes and %p of %zu bytes overlap", spans[i - 1].begin,
                    spans[i - 1].bytes, spans[i].begin, spans[i].bytes);
                rc = -EPROTO;
            }
        }
        return rc;
    } catch (...) {
        return -ENOMEM;
    }
}

} // namespace

// The entry points catch every exception (the noexcept helpers above); they
// cannot be declared noexcept themselves because the C header's declarations
// are not.
extern "C" {

int shmb_offset_create(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_t **out)
{
    if (!base || bytes == 0 || !out || reinterpret_cast<uintptr_t>(base) > UINTPTR_MAX - bytes)
        return -EINVAL;
    return create_checked(base, bytes, max_nodes, out);
}

void shmb_offset_destroy(shmb_offset_t *a)
{
    delete a;
}

int shmb_offset_alloc(shmb_offset_t *a, size_t bytes, shmb_offset_block_t **out)
{
    if (!a || !out || bytes == 0)
        return -EINVAL;
    return alloc_one(a, bytes, out);
}

// Destroying an AllocatedBuffer throws nothing: deallocate catches
// everything, as upstream's does.
int shmb_offset_free(shmb_offset_block_t *block)
{
    if (!block)
        return -EINVAL;
    delete as_buffer(block);
    return 0;
}

void *shmb_offset_address(const shmb_offset_block_t *block)
{
    return block ? as_buffer(block)->data() : nullptr;
}

size_t shmb_offset_block_bytes(const shmb_offset_block_t *block)
{
    return block ? as_buffer(block)->size() : 0;
}

uint64_t shmb_offset_offset(const shmb_offset_t *a, const shmb_offset_block_t *block)
{
    if (!a || !block)
        return 0;
    return reinterpret_cast<uintptr_t>(as_buffer(block)->data()) - a->offset->base();
}

uint64_t shmb_offset_in_use(const shmb_offset_t *a)
{
    return a ? a->allocator->size() : 0;
}

uint64_t shmb_offset_live(const shmb_offset_t *a)
{
    return a ? a->offset->getOffsetAllocator().get_metrics().allocated_num_ : 0;
}

uint64_t shmb_offset_largest_free(const shmb_offset_t *a)
{
    return a ? a->allocator->getLargestFreeRegion() : 0;
}

uint64_t shmb_offset_footprint(uint64_t bytes)
{
    if (bytes == 0 || bytes > kMaxBinSize)
        return 0;
    return bin_bytes(bin_round_up(uint32_t(bytes)));
}

int shmb_offset_verify(const shmb_offset_t *a, shmb_offset_block_t *const *blocks, size_t n, char *why,
                       size_t why_cap)
{
    if (!a || (!blocks && n > 0))
        return -EINVAL;
    return verify_checked(a, blocks, n, why, why_cap);
}

void shmb_offset_plant_overlap(shmb_offset_t *a)
{
    if (a)
        a->plant_overlap = true;
}

} // extern "C"
