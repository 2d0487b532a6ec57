// mooncake_submit.hpp: what TENT's engine makes of a submitted request: the
// TransportSelector with its two default policies, the task and batch
// records, resolveRequestBoundaries and mergeRequests (tent/ at 3b5a59413).
#pragma once

#include "mooncake_transport.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {
namespace tent {

// TransportSelector (include/tent/runtime/transport_selector.h,
// src/runtime/transport_selector.cpp) with its two default policies.
struct SelectionContext {
    SegmentType segment_type;
    bool same_machine;
    MemoryType local_memory_type;
    MemoryType remote_memory_type;
    const std::vector<TransportType> *buffer_transports;
    size_t transfer_size;
    int priority_level;
    std::optional<std::string> policy_name;
    IntentType intent_type{IntentType::INTENT_UNSPEC};
};

struct SelectionPolicy {
    std::string name;
    SegmentType segment_type;
    std::optional<bool> same_machine;
    std::optional<std::string> local_memory_pattern;
    std::optional<std::string> remote_memory_pattern;
    std::optional<uint64_t> min_size;
    std::optional<uint64_t> max_size;
    std::optional<int> priority;
    std::vector<std::string> devices;
    std::vector<TransportType> transports;
    std::optional<int> service_level;
    std::optional<int> traffic_class;
    std::optional<std::string> qp_pool;
    std::optional<IntentType> intent_type;
    uint64_t resolved_device_mask{~0ULL};
};

struct SelectionResult {
    TransportType transport = UNSPEC;
    uint64_t device_mask = ~0ULL;
    std::optional<int> service_level;
    std::optional<int> traffic_class;
    std::optional<std::string> qp_pool;
};

using TransportList = std::array<std::shared_ptr<Transport>, kSupportedTransportTypes>;

class TransportSelector {
public:
    TransportSelector()
    {
        policies_.push_back(SelectionPolicy{"file_storage", SegmentType::File, {}, {}, {}, {}, {}, {}, {},
                                            {GDS, IOURING}, {}, {}, {}, {}, ~0ULL});
        policies_.push_back(SelectionPolicy{"memory_default", SegmentType::Memory, {}, {}, {}, {}, {}, {}, {}, {},
                                            {}, {}, {}, {}, ~0ULL});
    }

    // TransportSelector::select: the first matching policy, then the
    // buffer's transports (reorderWithHint copies them) filtered by
    // availability. The VLOG(1) line is not compiled into the measured
    // build's verbosity and is left out.
    SelectionResult select(const SelectionContext &context, const TransportList &available, int transport_index,
                           TransportType hint)
    {
        SelectionResult result;
        const SelectionPolicy *matching_policy = nullptr;
        for (const auto &policy : policies_)
            if (matchesPolicy(policy, context)) {
                matching_policy = &policy;
                break;
            }
        if (!matching_policy)
            return result;
        result.service_level = matching_policy->service_level;
        result.traffic_class = matching_policy->traffic_class;
        result.qp_pool = matching_policy->qp_pool;
        result.device_mask = matching_policy->resolved_device_mask;
        static const std::vector<TransportType> kEmpty;
        const auto &raw = !matching_policy->transports.empty() ? matching_policy->transports
                          : context.buffer_transports            ? *context.buffer_transports
                                                                 : kEmpty;
        if (transport_index < 0)
            return result;
        auto candidates = reorderWithHint(raw, hint);
        if (!candidates)
            return result;
        const bool has_hint = hint != UNSPEC;
        for (size_t i = 0; i < candidates->size(); ++i) {
            TransportType type = (*candidates)[i];
            if (!isTransportAvailable(type, context, available)) {
                if (has_hint && i == 0)
                    return result;
                continue;
            }
            if (transport_index == 0) {
                result.transport = type;
                break;
            }
            --transport_index;
        }
        return result;
    }

private:
    static std::optional<std::vector<TransportType>> reorderWithHint(const std::vector<TransportType> &raw,
                                                                     TransportType hint)
    {
        if (hint == UNSPEC)
            return raw;
        if (std::find(raw.begin(), raw.end(), hint) == raw.end())
            return std::nullopt;
        std::vector<TransportType> out;
        out.reserve(raw.size());
        out.push_back(hint);
        for (TransportType t : raw)
            if (t != hint)
                out.push_back(t);
        return out;
    }

    // matchesPolicy; the default policies carry none of the optional
    // filters, so only the segment type decides.
    static bool matchesPolicy(const SelectionPolicy &policy, const SelectionContext &context)
    {
        if (context.policy_name.has_value())
            return context.policy_name.value() == policy.name && policy.segment_type == context.segment_type;
        if (policy.segment_type != context.segment_type)
            return false;
        if (policy.same_machine.has_value() && policy.same_machine.value() != context.same_machine)
            return false;
        if (policy.min_size.has_value() && context.transfer_size < policy.min_size.value())
            return false;
        if (policy.max_size.has_value() && context.transfer_size > policy.max_size.value())
            return false;
        if (policy.priority.has_value() && context.priority_level != policy.priority.value())
            return false;
        return !policy.intent_type.has_value() || context.intent_type == policy.intent_type.value();
    }

    static bool isTransportAvailable(TransportType type, const SelectionContext &context,
                                     const TransportList &available)
    {
        if (type < 0 || type >= kSupportedTransportTypes)
            return false;
        const auto &transport = available[type];
        if (!transport)
            return false;
        if ((type == NVLINK || type == SHM || type == TPU) && !context.same_machine)
            return false;
        const auto &caps = transport->capabilities();
        if (context.local_memory_type == MTYPE_CPU && context.remote_memory_type == MTYPE_CPU)
            return caps.dram_to_dram;
        return false;
    }

    std::vector<SelectionPolicy> policies_;
};

// TaskInfo (transfer_engine_impl.h). Upstream writes its copy operations out
// because staging_status is an std::atomic copied with relaxed loads and
// stores; RelaxedStatus does the same so that the defaults serve.
struct RelaxedStatus {
    RelaxedStatus() = default;
    RelaxedStatus(const RelaxedStatus &o) : v(o.v.load(std::memory_order_relaxed)) {}
    RelaxedStatus &operator=(const RelaxedStatus &o)
    {
        v.store(o.v.load(std::memory_order_relaxed), std::memory_order_relaxed);
        return *this;
    }
    std::atomic<TransferStatusEnum> v{PENDING};
};

struct TaskInfo {
    TransportType type{UNSPEC};
    int sub_task_id{-1};
    bool derived{false};
    int xport_priority{0};
    int failover_count{0};
    uint64_t device_mask{~0ULL};
    std::string qp_pool;
    Request request;
    bool staging{false};
    bool cancel_requested{false};
    TransferStatusEnum status{PENDING};
    RelaxedStatus staging_status;
    std::chrono::steady_clock::time_point start_time{};
    std::chrono::steady_clock::time_point dispatch_time{};
    std::chrono::steady_clock::time_point post_time{};
    std::chrono::steady_clock::time_point attempt_post_time{};
    TransportType attempt_type{UNSPEC};
    bool attempt_active{false};
};

struct Notification {
    std::string name;
    std::string msg;
};

// Batch (transfer_engine_impl.cpp).
struct Batch {
    Batch() : max_size(0) { sub_batch.fill(nullptr); }
    std::array<Transport::SubBatchRef, kSupportedTransportTypes> sub_batch;
    std::vector<TaskInfo> task_list;
    size_t max_size;
    size_t runtime_refs{0};
    bool free_requested{false};
    uint64_t queue_token{0};
    struct SubmitHook {
        size_t start_task_id{0};
        size_t end_task_id{0};
        Notification notifi;
        bool fired{false};
        std::unordered_set<SegmentID> targets;
    };
    std::vector<SubmitHook> submit_hooks;
};

// resolveRequestBoundaries and mergeRequests (transfer_engine_impl.cpp).
struct BufferKey {
    uint64_t addr{0};
    uint64_t length{0};
    bool operator==(const BufferKey &o) const { return addr == o.addr && length == o.length; }
    bool operator!=(const BufferKey &o) const { return !(*this == o); }
};

struct RequestBoundaryInfo {
    std::optional<BufferKey> source_key;
    std::optional<BufferKey> target_key;
};

struct MergeResult {
    std::vector<Request> request_list;
    std::map<size_t, size_t> task_lookup;
};

std::optional<BufferKey> toBufferKey(BufferDesc *buffer)
{
    if (!buffer)
        return std::nullopt;
    return BufferKey{buffer->addr, buffer->length};
}

uint64_t requestSourceAddr(const Request &request)
{
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(request.source));
}

std::vector<RequestBoundaryInfo> resolveRequestBoundaries(SegmentManager &manager,
                                                          const std::vector<Request> &requests)
{
    std::vector<RequestBoundaryInfo> boundaries(requests.size());
    auto local_desc = manager.getLocal();
    if (local_desc)
        for (size_t i = 0; i < requests.size(); ++i)
            boundaries[i].source_key = toBufferKey(local_desc->findBuffer(requestSourceAddr(requests[i]),
                                                                          requests[i].length));
    std::unordered_map<SegmentID, std::vector<size_t>> by_target;
    for (size_t i = 0; i < requests.size(); ++i)
        by_target[requests[i].target_id].push_back(i);
    for (auto &group : by_target) {
        auto &idxs = group.second;
        SegmentDescRef pin;
        manager.withCachedSegment(group.first, pin, [&](SegmentDesc *target_desc) {
            bool any_missing = false;
            for (size_t i : idxs) {
                auto *buffer = target_desc->findBuffer(requests[i].target_offset, requests[i].length);
                boundaries[i].target_key = toBufferKey(buffer);
                any_missing |= !buffer;
            }
            if (any_missing) {
                for (size_t i : idxs)
                    boundaries[i].target_key = std::nullopt;
                return Status(Status::Code::kNeedsRefreshCache, "Requested address is not in registered buffer",
                              -EINVAL);
            }
            return Status();
        });
    }
    return boundaries;
}

bool tryAddUint64(uint64_t lhs, uint64_t rhs, uint64_t &out)
{
    if (rhs > UINT64_MAX - lhs)
        return false;
    out = lhs + rhs;
    return true;
}

struct MergeItem {
    Request req;
    RequestBoundaryInfo boundary;
    size_t orig_idx;
};

bool can_merge(const MergeItem &last, const MergeItem &curr)
{
    if (last.req.opcode != curr.req.opcode || last.req.target_id != curr.req.target_id ||
        last.req.transport_hint != curr.req.transport_hint)
        return false;
    if (!last.boundary.source_key || !curr.boundary.source_key || !last.boundary.target_key ||
        !curr.boundary.target_key)
        return false;
    if (last.boundary.source_key != curr.boundary.source_key || last.boundary.target_key != curr.boundary.target_key)
        return false;
    if (curr.req.length > SIZE_MAX - last.req.length)
        return false;
    uint64_t last_source_end = 0, last_target_end = 0;
    if (!tryAddUint64(requestSourceAddr(last.req), last.req.length, last_source_end) ||
        !tryAddUint64(last.req.target_offset, last.req.length, last_target_end))
        return false;
    return last_source_end == requestSourceAddr(curr.req) && last_target_end == curr.req.target_offset;
}

MergeResult mergeRequests(const std::vector<Request> &requests, const std::vector<RequestBoundaryInfo> &boundaries)
{
    std::vector<MergeItem> items;
    items.reserve(requests.size());
    for (size_t i = 0; i < requests.size(); ++i)
        items.push_back({requests[i], boundaries[i], i});
    std::sort(items.begin(), items.end(), [](const MergeItem &a, const MergeItem &b) {
        if (a.req.opcode != b.req.opcode)
            return a.req.opcode < b.req.opcode;
        if (a.req.target_id != b.req.target_id)
            return a.req.target_id < b.req.target_id;
        if (a.req.transport_hint != b.req.transport_hint)
            return a.req.transport_hint < b.req.transport_hint;
        if (a.req.target_offset != b.req.target_offset)
            return a.req.target_offset < b.req.target_offset;
        return requestSourceAddr(a.req) < requestSourceAddr(b.req);
    });
    std::vector<MergeItem> merged_items;
    merged_items.reserve(items.size());
    MergeResult result;
    for (const auto &item : items) {
        if (merged_items.empty() || !can_merge(merged_items.back(), item))
            merged_items.push_back(item);
        else
            merged_items.back().req.length += item.req.length;
        result.task_lookup[item.orig_idx] = merged_items.size() - 1;
    }
    result.request_list.reserve(merged_items.size());
    for (const auto &item : merged_items)
        result.request_list.push_back(item.req);
    return result;
}

struct PreparedSubmit {
    struct Task {
        size_t merged_task_index{0};
        size_t task_id{0};
    };
    struct Owner {
        size_t owner_task_id{0};
        bool has_owner_task_id{false};
        std::vector<size_t> derived_task_ids;
        Request request{};
        SelectionResult route{};
        bool staging{false};
        std::vector<std::string> staging_params;
    };
    std::chrono::steady_clock::time_point submit_time{};
    std::vector<Task> tasks;
    std::vector<Owner> owners;
};

} // namespace tent
} // namespace
