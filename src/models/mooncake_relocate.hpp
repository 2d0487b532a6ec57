// mooncake_relocate.hpp: TENT's ShmTransport::relocateSharedMemoryAddress
// (include/tent/transport/shm/shm_transport.h, src/transport/shm/
// shm_transport.cpp), what a relocation runs.
#pragma once

#include "mooncake_segment.hpp"

#include <memory>
#include <unordered_map>
#include <utility>

namespace {
namespace tent {

// ShmTransport's relocate path (include/tent/transport/shm/shm_transport.h,
// src/transport/shm/shm_transport.cpp).
class ShmTransport {
public:
    ShmTransport(std::shared_ptr<SegmentManager> metadata, const shmb_mooncake_ops_t &ops)
        : metadata_(std::move(metadata)), ops_(ops)
    {
    }
    ShmTransport(const ShmTransport &) = delete;
    ShmTransport &operator=(const ShmTransport &) = delete;

    // ShmTransport::uninstall: every mapping undone under the write lock.
    ~ShmTransport()
    {
        RWSpinlock::WriteGuard guard(relocate_lock_);
        for (auto &relocate_map : relocate_map_)
            for (auto &entry : relocate_map.second)
                if (ops_.detach)
                    ops_.detach(ops_.ctx, entry.second.shm_addr, entry.second.length);
    }

    // ShmTransport::relocateSharedMemoryAddress. Departures: tryResolve's
    // range test cannot wrap (upstream computes dest_addr + length <=
    // entry.first + entry.second.length, which a length near 2^64 passes);
    // the CUDA location check on a first use is left out (a CPU buffer
    // passes it); ops->attach stands for shm_open + fstat + mmap + close.
    Status relocateSharedMemoryAddress(uint64_t &dest_addr, uint64_t length, uint64_t target_id)
    {
        {
            RWSpinlock::ReadGuard guard(relocate_lock_);
            auto target = relocate_map_.find(target_id);
            if (target != relocate_map_.end() && tryResolve(target->second, dest_addr, length))
                return Status();
        }
        RWSpinlock::WriteGuard guard(relocate_lock_);
        auto target = relocate_map_.find(target_id);
        if (target != relocate_map_.end() && tryResolve(target->second, dest_addr, length))
            return Status();
        BufferDesc *buffer = nullptr;
        size_t index = 0;
        SegmentDescRef pin;
        TENT_CHECK_STATUS(metadata_->withCachedSegment(target_id, pin, [&](SegmentDesc *segment) {
            buffer = segment->findBuffer(dest_addr, length);
            if (!buffer || buffer->shm_path.empty())
                return Status(Status::Code::kNeedsRefreshCache, "Requested address is not in registered buffer",
                              -EINVAL);
            index = size_t(buffer - segment->getMemory().buffers.data());
            return Status();
        }));
        void *shm_addr = nullptr;
        bool mapping_found = false;
        if (target != relocate_map_.end()) {
            auto mapping = target->second.find(buffer->addr);
            if (mapping != target->second.end()) {
                shm_addr = mapping->second.shm_addr;
                mapping_found = true;
            }
        }
        if (!mapping_found) {
            int rc = ops_.attach(ops_.ctx, index, buffer->shm_path.c_str(), buffer->length, &shm_addr);
            if (rc < 0)
                return Status(Status::Code::kInternalError, "Failed to open shared memory file", rc);
            relocate_map_[target_id][buffer->addr] = OpenedShmEntry{shm_addr, buffer->length};
        }
        dest_addr = dest_addr - buffer->addr + reinterpret_cast<uint64_t>(shm_addr);
        return Status();
    }

    size_t attached() const
    {
        size_t n = 0;
        for (auto &relocate_map : relocate_map_)
            n += relocate_map.second.size();
        return n;
    }

private:
    struct OpenedShmEntry {
        void *shm_addr;
        uint64_t length;
    };
    using RelocateMap = std::unordered_map<uint64_t, OpenedShmEntry>;
    using HashMap = std::unordered_map<SegmentID, RelocateMap>;

    // ShmTransport::tryResolve: every mapped entry of the segment, in the
    // hash map's iteration order, until one holds the range.
    static bool tryResolve(const RelocateMap &relocate_map, uint64_t &dest_addr, uint64_t length)
    {
        for (const auto &entry : relocate_map) {
            if (entry.first <= dest_addr && length <= entry.second.length &&
                dest_addr - entry.first <= entry.second.length - length) {
                dest_addr = dest_addr - entry.first + reinterpret_cast<uint64_t>(entry.second.shm_addr);
                return true;
            }
        }
        return false;
    }

    std::shared_ptr<SegmentManager> metadata_;
    shmb_mooncake_ops_t ops_;
    RWSpinlock relocate_lock_;
    HashMap relocate_map_;
};


} // namespace tent
} // namespace
