// offset_metrics.hpp: the master's allocated-bytes gauges a request updates
// (mooncake-store/src/master_metric_manager.cpp over alibaba/yalantinglibs'
// ylt::metric at 7801bc9ad: gauge.hpp, thread_local_value.hpp,
// dynamic_metric.hpp, util/map_sharded.hpp). Included by offset_buffer.cc
// alone, in its unnamed namespace.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

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

} // namespace
