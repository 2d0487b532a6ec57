// mooncake_transport.hpp: the transport side of TENT's request path: the
// Request, the memory types and locations the selection reads, Transport and
// its SubBatch, the Slab, and ShmTransport's submit (tent/ at 3b5a59413).
#pragma once

#include "mooncake_relocate.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <list>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace {
namespace tent {

// The request path: TransferEngineImpl's submit path for one descriptor
// (include/tent/runtime/transfer_engine_impl.h,
// src/runtime/transfer_engine_impl.cpp, transport_selector.{h,cpp},
// transport.h, slab.{h,cpp}, src/transport/shm/shm_transport.cpp).

enum class IntentType : int { INTENT_UNSPEC = 0 };

struct Request {
    enum OpCode { READ, WRITE };
    OpCode opcode;
    void *source;
    SegmentID target_id;
    uint64_t target_offset;
    size_t length;
    int priority = 0;
    std::optional<std::string> policy_name;
    TransportType transport_hint = UNSPEC;
    uint64_t deadline_ns = 0;
    IntentType intent_type = IntentType::INTENT_UNSPEC;
};

enum TransferStatusEnum { INITIAL, PENDING, INVALID, CANCELED, COMPLETED, TIMEOUT, FAILED };

struct TransferStatus {
    TransferStatusEnum s;
    size_t transferred_bytes;
};

enum MemoryType { MTYPE_UNKNOWN, MTYPE_CPU, MTYPE_CUDA, MTYPE_ROCM, MTYPE_TPU };

// Platform::getLoader() and CpuPlatform::getMemoryType (include/tent/platform/cpu.h).
class Platform {
public:
    virtual ~Platform() = default;
    virtual MemoryType getMemoryType(void *addr) = 0;
    static Platform &getLoader();
};

class CpuPlatform final : public Platform {
public:
    MemoryType getMemoryType(void *) override { return MTYPE_CPU; }
};

Platform &Platform::getLoader()
{
    static CpuPlatform platform;
    return platform;
}

// LocationParser (include/tent/runtime/topology.h): "cpu:0" split at the
// colon into a type string and an index.
class LocationParser {
public:
    explicit LocationParser(const std::string &location)
    {
        size_t colon = location.find(':');
        if (location == "*" || colon == std::string::npos) {
            type_ = "*";
            index_ = -1;
            return;
        }
        std::string type = location.substr(0, colon);
        std::string index = location.substr(colon + 1);
        type_ = type;
        index_ = std::atoi(index.c_str());
    }
    std::string type() const { return type_; }

private:
    std::string type_;
    int index_;
};

MemoryType getTypeEnum(const std::string &type)
{
    if (type == "cpu" || type == "*")
        return MTYPE_CPU;
    if (type == "cuda" || type == "npu")
        return MTYPE_CUDA;
    if (type == "rocm")
        return MTYPE_ROCM;
    if (type == "tpu")
        return MTYPE_TPU;
    return MTYPE_UNKNOWN;
}

// Transport and its SubBatch (include/tent/runtime/transport.h).
struct Capabilities {
    bool dram_to_dram = false;
    bool dram_to_gpu = false;
    bool gpu_to_dram = false;
    bool gpu_to_gpu = false;
    bool dram_to_file = false;
    bool gpu_to_file = false;
};

class Transport {
public:
    struct SubBatch {
        SubBatch() : device_mask(~0ULL) {}
        virtual ~SubBatch() = default;
        virtual size_t size() const = 0;
        void notifyProgress()
        {
            if (notify_progress)
                notify_progress(progress_batch_id);
        }
        uint64_t device_mask;
        std::string qp_pool;
        BatchID progress_batch_id{0};
        std::function<void(BatchID)> notify_progress;
    };
    using SubBatchRef = SubBatch *;

    virtual ~Transport() = default;
    virtual const Capabilities capabilities() const { return caps; }
    virtual Status allocateSubBatch(SubBatchRef &batch, size_t max_size) = 0;
    virtual Status freeSubBatch(SubBatchRef &batch) = 0;
    virtual Status submitTransferTasks(SubBatchRef batch, const std::vector<Request> &request_list) = 0;
    virtual Status getTransferStatus(SubBatchRef batch, int task_id, TransferStatus &status) = 0;

protected:
    Capabilities caps;
};

// Slab<T> (include/tent/runtime/slab.h, src/runtime/slab.cpp): objects come
// from a per-thread ring of 128 (found in a thread_local unordered_map keyed
// by the slab's index), refilled from a mutex-guarded free list or a fresh
// malloc of 128 objects.
class SlabBase {
public:
    explicit SlabBase(size_t block_size) : block_size_(block_size), slab_index_(next_index().fetch_add(1)) {}
    SlabBase(const SlabBase &) = delete;
    SlabBase &operator=(const SlabBase &) = delete;
    ~SlabBase()
    {
        for (auto entry : alloc_list_)
            std::free(entry);
    }

    static const size_t kMaxFreeListSizeInThread = 128;
    static const size_t kAllocateBatchSize = 128;

    void *allocate()
    {
        auto &tl_slice = ring(slab_index_);
        void *object = nullptr;
        if (tl_slice.dequeue(object))
            return object;
        std::lock_guard<std::mutex> global_lock(mutex_);
        while (!tl_slice.full() && !free_list_.empty()) {
            tl_slice.enqueue(free_list_.front());
            free_list_.pop_front();
        }
        if (tl_slice.empty()) {
            void *slab = std::malloc(kAllocateBatchSize * block_size_);
            if (!slab)
                return nullptr;
            alloc_list_.push_back(slab);
            for (size_t i = 0; i < kAllocateBatchSize; ++i)
                tl_slice.enqueue(static_cast<char *>(slab) + i * block_size_);
        }
        tl_slice.dequeue(object);
        return object;
    }

    void deallocate(void *object)
    {
        auto &tl_slice = ring(slab_index_);
        if (tl_slice.full()) {
            std::lock_guard<std::mutex> global_lock(mutex_);
            void *item = nullptr;
            while (tl_slice.dequeue(item))
                free_list_.push_back(item);
        }
        tl_slice.enqueue(object);
    }

private:
    struct ThreadLocal {
        bool enqueue(void *item)
        {
            if (full())
                return false;
            buffer[tail] = item;
            tail = (tail + 1) % kMaxFreeListSizeInThread;
            ++count;
            return true;
        }
        bool dequeue(void *&item)
        {
            if (empty())
                return false;
            item = buffer[head];
            head = (head + 1) % kMaxFreeListSizeInThread;
            --count;
            return true;
        }
        bool empty() const { return count == 0; }
        bool full() const { return count == kMaxFreeListSizeInThread; }
        std::array<void *, kMaxFreeListSizeInThread> buffer;
        size_t head = 0, tail = 0, count = 0;
    };

    static std::atomic<int> &next_index()
    {
        static std::atomic<int> index(0);
        return index;
    }

    static ThreadLocal &ring(int index)
    {
        thread_local std::unordered_map<int, ThreadLocal> tl_slice_set;
        return tl_slice_set[index];
    }

    const size_t block_size_;
    const int slab_index_;
    std::mutex mutex_;
    std::list<void *> free_list_;
    std::list<void *> alloc_list_;
};

template <class T> class Slab {
public:
    static Slab &Get()
    {
        static Slab<T> g_slice;
        return g_slice;
    }
    Slab() : base(sizeof(T)) {}

    T *allocate()
    {
        auto ptr = static_cast<T *>(base.allocate());
        if (ptr)
            new (ptr) T();
        return ptr;
    }

    void deallocate(T *object)
    {
        object->~T();
        base.deallocate(object);
    }

private:
    SlabBase base;
};

// ShmTransport's submit side (src/transport/shm/shm_transport.cpp). The
// translation and the copy are the caller's hooks, set for the call.
struct ShmTask {
    Request request;
    volatile TransferStatusEnum status_word;
    volatile size_t transferred_bytes;
    uint64_t target_addr = 0;
};

struct ShmSubBatch : public Transport::SubBatch {
    std::vector<ShmTask> task_list;
    size_t max_size;
    size_t size() const override { return task_list.size(); }
};

class ShmSubmitTransport final : public Transport {
public:
    ShmSubmitTransport() { caps.dram_to_dram = true; }

    // The model's state of one submit, the submitting thread's own (upstream
    // keeps none: the hooks stand in for its relocate and copy), so that
    // threads may submit at once through one engine.
    struct Call {
        const shmb_mooncake_hooks_t *hooks = nullptr;
        int last_error = 0;            // the translation's -errno, for the C boundary
        std::vector<uint64_t> targets; // each task's target in submission order, for the caller
        uint64_t selected_buffer = 0;  // what the engine's selection found
    };
    static Call &call()
    {
        static thread_local Call c;
        return c;
    }

    Status allocateSubBatch(SubBatchRef &batch, size_t max_size) override
    {
        auto shm_batch = Slab<ShmSubBatch>::Get().allocate();
        if (!shm_batch)
            return Status(Status::Code::kInternalError, "Unable to allocate SHM sub-batch", -ENOMEM);
        batch = shm_batch;
        shm_batch->task_list.reserve(max_size);
        shm_batch->max_size = max_size;
        return Status();
    }

    Status freeSubBatch(SubBatchRef &batch) override
    {
        auto shm_batch = dynamic_cast<ShmSubBatch *>(batch);
        if (!shm_batch)
            return Status(Status::Code::kInvalidArgument, "Invalid SHM sub-batch", -EINVAL);
        Slab<ShmSubBatch>::Get().deallocate(shm_batch);
        batch = nullptr;
        return Status();
    }

    // ShmTransport::submitTransferTasks; relocateSharedMemoryAddress is
    // hooks->translate.
    Status submitTransferTasks(SubBatchRef batch, const std::vector<Request> &request_list) override
    {
        auto shm_batch = dynamic_cast<ShmSubBatch *>(batch);
        if (!shm_batch)
            return Status(Status::Code::kInvalidArgument, "Invalid SHM sub-batch", -EINVAL);
        if (request_list.size() + shm_batch->task_list.size() > shm_batch->max_size)
            return Status(Status::Code::kTooManyRequests, "Exceed batch capacity", -EOVERFLOW);
        Call &c = call();
        for (auto &request : request_list) {
            shm_batch->task_list.push_back(ShmTask{});
            auto &task = shm_batch->task_list[shm_batch->task_list.size() - 1];
            uint64_t target_addr = request.target_offset;
            bool translated = request.target_id == LOCAL_SEGMENT_ID;
            if (request.target_id != LOCAL_SEGMENT_ID && c.hooks && c.hooks->translate) {
                void *local = nullptr;
                int rc = c.hooks->translate(c.hooks->ctx, request.target_id, target_addr, request.length, &local);
                if (rc < 0) {
                    c.last_error = rc;
                    return Status(Status::Code::kInternalError, "Failed to relocate", rc);
                }
                target_addr = reinterpret_cast<uint64_t>(local);
                translated = true;
            }
            task.target_addr = target_addr;
            c.targets.push_back(target_addr);
            task.request = request;
            task.status_word = PENDING;
            startTransfer(&task, shm_batch, translated);
        }
        return Status();
    }

    Status getTransferStatus(SubBatchRef batch, int task_id, TransferStatus &status) override
    {
        auto shm_batch = dynamic_cast<ShmSubBatch *>(batch);
        if (task_id < 0 || task_id >= int(shm_batch->task_list.size()))
            return Status(Status::Code::kInvalidArgument, "Invalid task id", -EINVAL);
        auto &task = shm_batch->task_list[size_t(task_id)];
        status = TransferStatus{task.status_word, task.transferred_bytes};
        return Status();
    }

private:
    // ShmTransport::startTransfer: Platform::copy is hooks->copy, run only
    // on a translated target (an untranslated one is the peer's address).
    void startTransfer(ShmTask *task, ShmSubBatch *batch, bool translated)
    {
        const shmb_mooncake_hooks_t *hooks = call().hooks;
        if (translated && hooks && hooks->copy) {
            void *target = reinterpret_cast<void *>(task->target_addr);
            if (task->request.opcode == Request::READ)
                hooks->copy(hooks->ctx, task->request.source, target, task->request.length);
            else
                hooks->copy(hooks->ctx, target, task->request.source, task->request.length);
        }
        task->transferred_bytes = task->request.length;
        task->status_word = COMPLETED;
        batch->notifyProgress();
    }
};

} // namespace tent
} // namespace
