// offset_buffer: Mooncake Store's OffsetBufferAllocator, its AllocatedBuffer
// and the master's gauges (docs/models.md; mooncake-store include/allocator.h,
// src/allocator.cpp at 3b5a594) over offset_alloc_model.hpp, and the entry
// points of shmbench/offset_alloc.h. One unnamed namespace, so the compiler
// sees every class derived from BufferAllocatorBase and calls
// OffsetBufferAllocator's methods directly, not through the vtable.
#include "offset_alloc_internal.h"
#include "offset_alloc_model.hpp"
#include "cxx_guard.hpp"
#include "offset_metrics.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using shmb::offset::bin_bytes;
using shmb::offset::bin_round_up;
using shmb::offset::kMaxBinSize;
using shmb::offset::OffsetAllocationHandle;
using shmb::offset::OffsetAllocator;
using shmb::offset::vlog_is_on;

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

// OffsetBufferAllocator's constructor: the node pool sized as
// shmb::offset::node_capacity says.
OffsetBufferAllocator::OffsetBufferAllocator(std::string segment_name, size_t base, size_t size,
                                             uint32_t max_nodes)
    : segment_name_(std::move(segment_name)), base_(base), total_size_(size), cur_size_(0),
      transport_endpoint_(segment_name_ + ":12345"), replica_type_(ReplicaType::MEMORY)
{
    uint32_t init_capacity, max_capacity;
    shmb::offset::node_capacity(size, max_nodes, &init_capacity, &max_capacity);
    offset_allocator_ = OffsetAllocator::create(base, size, init_capacity, max_capacity);
}

// OffsetBufferAllocator::allocate: the OffsetAllocator's handle moved into a
// fresh AllocatedBuffer that holds this allocator weakly, then the size
// counter and the metrics. Upstream catches every exception into nullptr.
std::unique_ptr<AllocatedBuffer> OffsetBufferAllocator::allocate(size_t size)
{
    if (!offset_allocator_)
        return nullptr;
    std::unique_ptr<AllocatedBuffer> allocated_buffer = nullptr;
    if (!shmb::guard_or(false, [&] {
            auto allocation_handle = offset_allocator_->allocate(size);
            if (!allocation_handle) {
                vlog_is_on(1); // "allocation_failed"
                return false;
            }
            void *buffer_ptr = allocation_handle->ptr();
            allocated_buffer = std::make_unique<AllocatedBuffer>(shared_from_this(), buffer_ptr, size,
                                                                 std::move(allocation_handle));
            vlog_is_on(1); // "allocation_succeeded"
            return true;
        }))
        return nullptr;
    cur_size_.fetch_add(size);
    if (replica_type_ == ReplicaType::MEMORY)
        MasterMetricManager::instance().inc_allocated_mem_size(segment_name_, int64_t(size));
    return allocated_buffer;
}

// OffsetBufferAllocator::deallocate, called by ~AllocatedBuffer: the handle
// reset (which frees the block), then the counter and the metrics.
void OffsetBufferAllocator::deallocate(AllocatedBuffer *handle)
{
    shmb::guard_or(0, [&] { // upstream logs what it catches
        const size_t freed_size = handle->size();
        handle->releaseOffsetHandle();
        cur_size_.fetch_sub(freed_size);
        if (replica_type_ == ReplicaType::MEMORY)
            MasterMetricManager::instance().dec_allocated_mem_size(segment_name_, int64_t(freed_size));
        vlog_is_on(1); // "deallocation_succeeded"
        return 0;
    });
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
    return shmb::guard_or(-ENOMEM, [&] {
        auto a = std::make_unique<shmb_offset>();
        a->offset = std::make_shared<OffsetBufferAllocator>(kSegmentName, reinterpret_cast<uintptr_t>(base),
                                                            bytes, max_nodes);
        a->allocator = a->offset;
        *out = a.release();
        return 0;
    });
}

// A throw is the metric's first label insert, outside upstream's try.
int alloc_one(shmb_offset_t *a, size_t bytes, shmb_offset_block_t **out) noexcept
{
    return shmb::guard_or(-ENOMEM, [&] {
        std::unique_ptr<AllocatedBuffer> buffer = a->allocator->allocate(bytes);
        if (!buffer)
            return -ENOMEM;
        if (a->plant_overlap) {
            a->plant_overlap = false;
            buffer->plantAddress(static_cast<unsigned char *>(buffer->data()) - 1);
        }
        *out = reinterpret_cast<shmb_offset_block_t *>(buffer.release());
        return 0;
    });
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
    return shmb::guard_or(-ENOMEM, [&] {
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
    });
}

} // namespace

// The entry points catch every exception (the noexcept helpers above); they
// cannot be declared noexcept themselves because the C header's declarations
// are not.
extern "C" {

int shmb_offset_create(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_t **out) noexcept
{
    if (!base || bytes == 0 || !out || reinterpret_cast<uintptr_t>(base) > UINTPTR_MAX - bytes)
        return -EINVAL;
    return create_checked(base, bytes, max_nodes, out);
}

void shmb_offset_destroy(shmb_offset_t *a) noexcept
{
    delete a;
}

int shmb_offset_alloc(shmb_offset_t *a, size_t bytes, shmb_offset_block_t **out) noexcept
{
    if (!a || !out || bytes == 0)
        return -EINVAL;
    return alloc_one(a, bytes, out);
}

// Destroying an AllocatedBuffer throws nothing: deallocate catches
// everything, as upstream's does.
int shmb_offset_free(shmb_offset_block_t *block) noexcept
{
    if (!block)
        return -EINVAL;
    delete as_buffer(block);
    return 0;
}

void *shmb_offset_address(const shmb_offset_block_t *block) noexcept
{
    return block ? as_buffer(block)->data() : nullptr;
}

size_t shmb_offset_block_bytes(const shmb_offset_block_t *block) noexcept
{
    return block ? as_buffer(block)->size() : 0;
}

uint64_t shmb_offset_offset(const shmb_offset_t *a, const shmb_offset_block_t *block) noexcept
{
    if (!a || !block)
        return 0;
    return reinterpret_cast<uintptr_t>(as_buffer(block)->data()) - a->offset->base();
}

uint64_t shmb_offset_in_use(const shmb_offset_t *a) noexcept
{
    return a ? a->allocator->size() : 0;
}

uint64_t shmb_offset_live(const shmb_offset_t *a) noexcept
{
    return a ? a->offset->getOffsetAllocator().get_metrics().allocated_num_ : 0;
}

uint64_t shmb_offset_largest_free(const shmb_offset_t *a) noexcept
{
    return a ? a->allocator->getLargestFreeRegion() : 0;
}

void shmb_offset_storage(const shmb_offset_t *a, uint64_t *total_free, uint64_t *largest) noexcept
{
    const shmb::offset::StorageReport r =
        a ? a->offset->getOffsetAllocator().storageReport() : shmb::offset::StorageReport{0, 0};
    *total_free = r.totalFreeSpace;
    *largest = r.largestFreeRegion;
}

uint64_t shmb_offset_footprint(uint64_t bytes) noexcept
{
    if (bytes == 0 || bytes > kMaxBinSize)
        return 0;
    return bin_bytes(bin_round_up(uint32_t(bytes)));
}

int shmb_offset_verify(const shmb_offset_t *a, shmb_offset_block_t *const *blocks, size_t n, char *why,
                       size_t why_cap) noexcept
{
    if (!a || (!blocks && n > 0))
        return -EINVAL;
    return verify_checked(a, blocks, n, why, why_cap);
}

void shmb_offset_plant_overlap(shmb_offset_t *a) noexcept
{
    if (a)
        a->plant_overlap = true;
}

} // extern "C"
