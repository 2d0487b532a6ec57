// mooncake_engine.hpp: TENT's TransferEngineImpl for the request path
// (src/runtime/transfer_engine_impl.cpp at 3b5a59413): batches from the Slab
// freed lazily, submitTransfer (prepare, commit) and the status poll; what
// it leaves out is in docs/models.md.
#pragma once

#include "mooncake_submit.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {
namespace tent {

// TransferEngineImpl's batch and submit path, for the steps listed in
// shmbench/mooncake.h; what it leaves out is listed there too.
class TransferEngine {
public:
    explicit TransferEngine(std::shared_ptr<SegmentManager> metadata)
        : metadata_(std::move(metadata)), shm_(std::make_shared<ShmSubmitTransport>())
    {
        transport_list_[SHM] = shm_;
    }
    TransferEngine(const TransferEngine &) = delete;
    TransferEngine &operator=(const TransferEngine &) = delete;

    SegmentManager &segments() { return *metadata_; }
    ShmSubmitTransport &shm() { return *shm_; }
    uint64_t selected_buffer() const { return ShmSubmitTransport::call().selected_buffer; }

    // TransferEngineImpl::allocateBatch
    BatchID allocateBatch(size_t batch_size)
    {
        Batch *batch = Slab<Batch>::Get().allocate();
        if (!batch)
            return BatchID(0);
        batch->max_size = batch_size;
        batch->task_list.reserve(batch_size);
        BatchID batch_id = BatchID(reinterpret_cast<uintptr_t>(batch));
        std::lock_guard<std::recursive_mutex> lk(progress_mutex_);
        batch_set_.active.insert(batch);
        alive_batches_.insert(batch_id);
        return batch_id;
    }

    // TransferEngineImpl::freeBatch (its runtime-queue branch is off).
    Status freeBatch(BatchID batch_id)
    {
        if (!batch_id)
            return Status(Status::Code::kInvalidArgument, "Invalid batch ID", -EINVAL);
        Batch *batch = reinterpret_cast<Batch *>(batch_id);
        std::lock_guard<std::recursive_mutex> lk(progress_mutex_);
        if (!alive_batches_.count(batch_id))
            return Status(Status::Code::kInvalidArgument, "Batch is not alive", -EINVAL);
        if (batch->free_requested)
            return lazyFreeBatch();
        batch->free_requested = true;
        batch_set_.freelist.push_back(batch);
        lazyFreeBatch();
        return Status();
    }

    // TransferEngineImpl::submitTransfer without a notification, the
    // runtime queue off: prepare, then commit.
    Status submitTransfer(BatchID batch_id, const std::vector<Request> &request_list)
    {
        Batch *batch = nullptr;
        TENT_CHECK_STATUS(retainBatch(batch_id, batch));
        PreparedSubmit prepared;
        Status status = prepareSubmit(batch, request_list, prepared);
        if (status.ok())
            status = commitPreparedSubmit(batch, prepared);
        Status released = releaseBatch(batch);
        return status.ok() ? std::move(released) : std::move(status);
    }

    // TransferEngineImpl::getTransferStatus for one task, the runtime queue
    // off.
    Status getTransferStatus(BatchID batch_id, size_t task_id, TransferStatus &task_status)
    {
        if (!batch_id)
            return Status(Status::Code::kInvalidArgument, "Invalid batch ID", -EINVAL);
        std::lock_guard<std::recursive_mutex> lk(progress_mutex_);
        if (!alive_batches_.count(batch_id))
            return Status(Status::Code::kInvalidArgument, "Batch is not alive", -EINVAL);
        Batch *batch = reinterpret_cast<Batch *>(batch_id);
        if (task_id >= batch->task_list.size())
            return Status(Status::Code::kInvalidArgument, "Invalid task ID", -EINVAL);
        refillDispatchWindow();
        TENT_CHECK_STATUS(pollTaskStatus(batch, task_id, task_status));
        batch->task_list[task_id].status = task_status.s;
        return Status();
    }

private:
    struct BatchSet {
        std::unordered_set<Batch *> active;
        std::vector<Batch *> freelist;
    };

    Status retainBatch(BatchID batch_id, Batch *&batch)
    {
        if (!batch_id)
            return Status(Status::Code::kInvalidArgument, "Invalid batch ID", -EINVAL);
        std::lock_guard<std::recursive_mutex> lk(progress_mutex_);
        if (!alive_batches_.count(batch_id))
            return Status(Status::Code::kInvalidArgument, "Batch is not alive", -EINVAL);
        batch = reinterpret_cast<Batch *>(batch_id);
        if (batch->free_requested)
            return Status(Status::Code::kInvalidArgument, "Batch is being freed", -EINVAL);
        ++batch->runtime_refs;
        return Status();
    }

    Status releaseBatch(Batch *batch)
    {
        std::lock_guard<std::recursive_mutex> lk(progress_mutex_);
        --batch->runtime_refs;
        if (batch->runtime_refs == 0 && batch->free_requested)
            return lazyFreeBatch();
        return Status();
    }

    void refillDispatchWindow() { std::lock_guard<std::recursive_mutex> lk(progress_mutex_); }

    // TransferEngineImpl::lazyFreeBatch: a batch whose tasks are all done
    // goes back to the Slab with its sub-batches.
    Status lazyFreeBatch()
    {
        std::lock_guard<std::recursive_mutex> lk(progress_mutex_);
        for (auto it = batch_set_.freelist.begin(); it != batch_set_.freelist.end();) {
            Batch *batch = *it;
            if (batch->runtime_refs > 0 || !batchDone(batch)) {
                ++it;
                continue;
            }
            for (size_t type = 0; type < size_t(kSupportedTransportTypes); ++type) {
                auto &transport = transport_list_[type];
                auto &sub_batch = batch->sub_batch[type];
                if (transport && sub_batch)
                    transport->freeSubBatch(sub_batch);
            }
            batch_set_.active.erase(batch);
            alive_batches_.erase(BatchID(reinterpret_cast<uintptr_t>(batch)));
            Slab<Batch>::Get().deallocate(batch);
            it = batch_set_.freelist.erase(it);
        }
        return Status();
    }

    // getBatchStatus as lazyFreeBatch uses it: every task already polled
    // to a final state is counted without another poll.
    bool batchDone(Batch *batch)
    {
        refillDispatchWindow();
        size_t total = 0, done = 0;
        for (size_t task_id = 0; task_id < batch->task_list.size(); ++task_id) {
            auto &task = batch->task_list[task_id];
            if (task.derived)
                continue;
            total++;
            TransferStatus status{task.status, 0};
            if (task.status == PENDING && !pollTaskStatus(batch, task_id, status).ok())
                continue;
            task.status = status.s;
            done += status.s != PENDING;
        }
        return done == total;
    }

    Status pollTaskStatus(Batch *batch, size_t task_id, TransferStatus &task_status)
    {
        auto &task = batch->task_list[task_id];
        if (task.type == UNSPEC) {
            task_status = TransferStatus{FAILED, 0};
            return Status();
        }
        auto &transport = transport_list_[task.type];
        auto &sub_batch = batch->sub_batch[task.type];
        if (!transport || !sub_batch)
            return Status(Status::Code::kInvalidArgument, "Transport not available", -EINVAL);
        return transport->getTransferStatus(sub_batch, task.sub_task_id, task_status);
    }

    Status prepareSubmit(Batch *batch, const std::vector<Request> &request_list, PreparedSubmit &prepared);
    Status commitPreparedSubmit(Batch *batch, const PreparedSubmit &prepared);
    void assignTask(Batch *batch, TaskInfo &task, const PreparedSubmit::Owner &owner,
                    const std::chrono::steady_clock::time_point &submit_time);
    SelectionResult getTransportType(const Request &request, int transport_index);

    // TransferEngineImpl::resolveTransport: one retry after invalidating
    // the cached descriptor.
    SelectionResult resolveTransport(const Request &req, int transport_index)
    {
        auto result = getTransportType(req, transport_index);
        if (result.transport == UNSPEC) {
            metadata_->invalidateRemote(req.target_id);
            result = getTransportType(req, transport_index);
        }
        return result;
    }

    // TransferEngineImpl::startTransportAttempt with metrics off.
    static void startTransportAttempt(TaskInfo &task, TransportType type,
                                      std::chrono::steady_clock::time_point post_time)
    {
        if (task.derived)
            return;
        if (task.post_time.time_since_epoch().count() == 0)
            task.post_time = post_time;
        task.attempt_post_time = post_time;
        task.attempt_type = type;
        task.attempt_active = true;
    }

    // notifyBatchMaybeReady: the progress worker is off by default.
    void notifyBatchMaybeReady(BatchID) {}

    std::shared_ptr<SegmentManager> metadata_;
    std::shared_ptr<ShmSubmitTransport> shm_;
    TransportList transport_list_;
    TransportSelector selector_;
    BatchSet batch_set_;
    std::recursive_mutex progress_mutex_;
    std::unordered_set<BatchID> alive_batches_;
};

// TransferEngineImpl::getTransportType in the selector mode (the default:
// use_legacy_transport_selection is false).
SelectionResult TransferEngine::getTransportType(const Request &request, int transport_index)
{
    SegmentDescRef desc;
    if (request.target_id == LOCAL_SEGMENT_ID)
        desc = metadata_->getLocal();
    else if (!metadata_->getRemoteCached(desc, request.target_id).ok())
        return SelectionResult{};
    auto local_mtype = Platform::getLoader().getMemoryType(request.source);
    SelectionContext ctx;
    ctx.transfer_size = request.length;
    ctx.priority_level = request.priority;
    ctx.policy_name = request.policy_name;
    ctx.intent_type = request.intent_type;
    auto entry = desc->findBuffer(request.target_offset, request.length);
    if (!entry)
        return SelectionResult{};
    ShmSubmitTransport::call().selected_buffer = entry->addr;
    bool same_machine = desc->machine_id == metadata_->getLocal()->machine_id;
    auto remote_mtype = getTypeEnum(LocationParser(entry->location).type());
    ctx.segment_type = SegmentType::Memory;
    ctx.same_machine = same_machine;
    ctx.local_memory_type = local_mtype;
    ctx.remote_memory_type = remote_mtype;
    ctx.buffer_transports = &entry->transports;
    return selector_.select(ctx, transport_list_, transport_index, request.transport_hint);
}

// TransferEngineImpl::prepareSubmit (merge_requests on; a TCP route's
// staging policy never applies to SHM).
Status TransferEngine::prepareSubmit(Batch *batch, const std::vector<Request> &request_list, PreparedSubmit &prepared)
{
    for (size_t i = 0; i < request_list.size(); ++i)
        if (request_list[i].transport_hint != UNSPEC)
            return Status(Status::Code::kInvalidArgument, "transport_hint is not modelled", -EINVAL);
    prepared = PreparedSubmit{};
    const size_t start_task_id = batch->task_list.size();
    prepared.submit_time = std::chrono::steady_clock::now();
    auto merge_boundaries = resolveRequestBoundaries(*metadata_, request_list);
    auto merged = mergeRequests(request_list, merge_boundaries);
    prepared.owners.reserve(merged.request_list.size());
    for (const auto &request : merged.request_list) {
        PreparedSubmit::Owner owner;
        owner.request = request;
        owner.route = resolveTransport(owner.request, 0);
        prepared.owners.push_back(std::move(owner));
    }
    prepared.tasks.reserve(merged.task_lookup.size());
    for (const auto &kv : merged.task_lookup) {
        const size_t task_id = start_task_id + kv.first;
        auto &owner = prepared.owners[kv.second];
        if (!owner.has_owner_task_id) {
            owner.owner_task_id = task_id;
            owner.has_owner_task_id = true;
        } else {
            owner.derived_task_ids.push_back(task_id);
        }
        prepared.tasks.push_back({kv.second, task_id});
    }
    return Status();
}

void TransferEngine::assignTask(Batch *, TaskInfo &task, const PreparedSubmit::Owner &owner,
                                const std::chrono::steady_clock::time_point &submit_time)
{
    task.failover_count = 0;
    task.xport_priority = 0;
    task.status = PENDING;
    task.request = owner.request;
    task.staging = false;
    task.start_time = submit_time;
    task.dispatch_time = submit_time;
    task.type = owner.route.transport;
    task.device_mask = owner.route.device_mask;
    if (owner.route.qp_pool)
        task.qp_pool = *owner.route.qp_pool;
}

// TransferEngineImpl::commitPreparedSubmit: tasks classified per transport,
// each transport's sub-batch submitted at once.
Status TransferEngine::commitPreparedSubmit(Batch *batch, const PreparedSubmit &prepared)
{
    if (batch->task_list.size() > batch->max_size || prepared.tasks.size() > batch->max_size - batch->task_list.size())
        return Status(Status::Code::kTooManyRequests, "batch public task capacity exceeded", -EOVERFLOW);
    std::vector<Request> classified_request_list[kSupportedTransportTypes];
    std::vector<size_t> task_id_list[kSupportedTransportTypes];
    std::unordered_map<size_t, TaskInfo> merged_task_id_map;
    batch->task_list.insert(batch->task_list.end(), prepared.tasks.size(), TaskInfo{});
    std::unordered_map<TransportType, size_t> next_sub_task_id;
    for (const auto &task_plan : prepared.tasks) {
        auto &task = batch->task_list[task_plan.task_id];
        const auto &owner = prepared.owners[task_plan.merged_task_index];
        if (merged_task_id_map.count(task_plan.merged_task_index)) {
            task = merged_task_id_map[task_plan.merged_task_index];
            task.derived = true;
            if (task.type != UNSPEC)
                task_id_list[task.type].push_back(task_plan.task_id);
            continue;
        }
        assignTask(batch, task, owner, prepared.submit_time);
        if (task.type == UNSPEC) {
            merged_task_id_map[task_plan.merged_task_index] = task;
            continue;
        }
        if (!batch->sub_batch[task.type]) {
            auto &transport = transport_list_[task.type];
            if (!transport->allocateSubBatch(batch->sub_batch[task.type], batch->max_size).ok()) {
                merged_task_id_map[task_plan.merged_task_index] = task;
                continue;
            }
            batch->sub_batch[task.type]->progress_batch_id = BatchID(reinterpret_cast<uintptr_t>(batch));
            batch->sub_batch[task.type]->notify_progress = [this](BatchID id) { notifyBatchMaybeReady(id); };
        }
        if (!next_sub_task_id.count(task.type))
            next_sub_task_id[task.type] = batch->sub_batch[task.type]->size();
        size_t sub_task_id = next_sub_task_id[task.type]++;
        classified_request_list[task.type].push_back(owner.request);
        task.sub_task_id = int(sub_task_id);
        task.derived = false;
        task_id_list[task.type].push_back(task_plan.task_id);
        merged_task_id_map[task_plan.merged_task_index] = task;
    }
    for (size_t type = 0; type < size_t(kSupportedTransportTypes); ++type) {
        if (classified_request_list[type].empty())
            continue;
        auto attempt_start = std::chrono::steady_clock::now();
        for (auto &task_id : task_id_list[type])
            startTransportAttempt(batch->task_list[task_id], TransportType(type), attempt_start);
        auto status = transport_list_[type]->submitTransferTasks(batch->sub_batch[type], classified_request_list[type]);
        if (!status.ok())
            for (auto &task_id : task_id_list[type])
                batch->task_list[task_id].type = UNSPEC;
    }
    return Status();
}

} // namespace tent
} // namespace
