// mooncake_segment.hpp: TENT's segment descriptors and the SegmentManager's
// per-request look-ups (include/tent/runtime/segment.h, segment_manager.h,
// src/runtime/segment.cpp, segment_manager.cpp), and the peer's metadata as
// the model registers it. Types keep upstream's members in upstream's order
// where a request touches them.
#pragma once

#include "mooncake_common.hpp"
#include "shmbench/mooncake.h"

#include <cstdio>
#include <shared_mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace {
namespace tent {

// include/tent/runtime/segment.h. MemorySegmentDesc's Topology is left out: a
// request never reads it on a CPU-only peer.
struct Region {
    uint64_t size;
    std::string location;
};

struct DeviceDesc {
    std::string name;
    std::unordered_map<TransportType, std::string> transport_attrs;
    uint16_t lid;
    std::string gid;
};

struct BufferDesc {
    uint64_t addr;
    uint64_t length;
    std::string location;
    std::vector<TransportType> transports;
    std::vector<Region> regions;
    std::unordered_map<TransportType, std::string> transport_attrs;
    int ref_count{0};
    std::vector<uint32_t> rkey;
    std::string shm_path;
    std::string mnnvl_handle;
    std::vector<uint32_t> lkey;
    bool internal{false};
};

struct FileBufferDesc {
    std::string path;
    uint64_t length;
    uint64_t offset;
};

struct MemorySegmentDesc {
    std::unordered_map<std::string, std::string> device_attrs;
    std::vector<BufferDesc> buffers;
    std::vector<DeviceDesc> devices;
    std::unordered_map<int, std::string> transport_attrs;
};

struct FileSegmentDesc {
    std::vector<FileBufferDesc> buffers;
};

enum class SegmentType { Memory, File };

struct SegmentDesc {
    std::string name;
    SegmentType type = SegmentType::Memory;
    std::string machine_id;
    std::string rpc_server_addr;
    std::variant<MemorySegmentDesc, FileSegmentDesc> detail;
    std::string rdma_server_name;

    // SegmentDesc::findBuffer (src/runtime/segment.cpp): the first buffer in
    // registration order that holds [base, base + length), whatever its
    // transports; overflow-checked as upstream does.
    BufferDesc *findBuffer(uint64_t base, uint64_t length)
    {
        if (type != SegmentType::Memory)
            return nullptr;
        auto &cast = std::get<MemorySegmentDesc>(detail);
        for (auto &entry : cast.buffers) {
            if (base + length < base)
                return nullptr;
            if (entry.addr + entry.length < entry.addr)
                continue;
            if (entry.addr <= base && base + length <= entry.addr + entry.length)
                return &entry;
        }
        return nullptr;
    }

    const MemorySegmentDesc &getMemory() const { return std::get<MemorySegmentDesc>(detail); }
};

using SegmentDescRef = std::shared_ptr<SegmentDesc>;


constexpr uint64_t TENT_SEGMENT_DESC_TTL_MS = 60 * 60 * 1000; // segment_manager.h

// SegmentRegistry::getSegmentDesc stands for the metadata store or the peer's
// RPC server that publishes each segment's descriptor; upstream fetches JSON
// and parses it, the model copies the published descriptor.
class SegmentRegistry {
public:
    void publish(const std::string &name, SegmentDesc desc)
    {
        published_[name] = std::make_shared<const SegmentDesc>(std::move(desc));
    }

    Status getSegmentDesc(SegmentDescRef &desc, const std::string &name) const
    {
        auto it = published_.find(name);
        if (it == published_.end())
            return Status(Status::Code::kInvalidArgument, "Segment not found in registry", -ENOENT);
        desc = std::make_shared<SegmentDesc>(*it->second);
        return Status();
    }

private:
    std::unordered_map<std::string, std::shared_ptr<const SegmentDesc>> published_;
};

inline uint64_t nextManagerId()
{
    static std::atomic<uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed);
}

// SegmentManager (include/tent/runtime/segment_manager.h,
// src/runtime/segment_manager.cpp): the per-request look-ups.
class SegmentManager {
public:
    explicit SegmentManager(SegmentDesc local) : manager_id_(nextManagerId())
    {
        local_desc_ = std::make_shared<SegmentDesc>(std::move(local));
    }
    SegmentManager(const SegmentManager &) = delete;
    SegmentManager &operator=(const SegmentManager &) = delete;

    // openRemote hands out ids from next_id_; the model takes the caller's
    // id so that the driver's target id names the peer.
    void addRemote(SegmentID handle, const std::string &segment_name, SegmentDesc desc)
    {
        registry_.publish(segment_name, std::move(desc));
        RWSpinlock::WriteGuard guard(lock_);
        name_to_id_map_[segment_name] = handle;
        id_to_name_map_[handle] = segment_name;
        version_.fetch_add(1, std::memory_order_relaxed);
    }

    bool known(SegmentID handle)
    {
        RWSpinlock::ReadGuard guard(lock_);
        return handle == LOCAL_SEGMENT_ID || id_to_name_map_.count(handle) != 0;
    }

    // SegmentManager::getLocal: a per-thread snapshot cache keyed by manager
    // id and publication version.
    SegmentDescRef getLocal()
    {
        struct Cache {
            uint64_t manager_id = UINT64_MAX;
            uint64_t version = 0;
            SegmentDescRef ref;
        };
        thread_local Cache cache;
        auto version = local_desc_version_.load(std::memory_order_acquire);
        if (cache.manager_id != manager_id_ || cache.version != version || !cache.ref) {
            std::shared_lock<std::shared_mutex> guard(local_desc_lock_);
            cache.ref = local_desc_;
            cache.manager_id = manager_id_;
            cache.version = version;
        }
        return cache.ref;
    }

    // SegmentManager::getRemoteCached. The subscription RPC sent after a
    // fetch is left out: it is asynchronous and only follows a miss.
    Status getRemoteCached(SegmentDescRef &desc, SegmentID handle)
    {
        auto &cache = tl_remote_cache_.get();
        auto current_ts = uint64_t(getCurrentTimeInNano());
        auto current_version = version_.load(std::memory_order_relaxed);
        if (current_ts - cache.last_refresh > TENT_SEGMENT_DESC_TTL_MS * 1000000 ||
            cache.version != current_version) {
            cache.id_to_desc_map.clear();
            cache.last_refresh = current_ts;
            cache.version = current_version;
        }
        if (!cache.id_to_desc_map.count(handle)) {
            SegmentDescRef desc_ref;
            TENT_CHECK_STATUS(getRemote(desc_ref, handle));
            cache.id_to_desc_map[handle] = desc_ref;
        }
        desc = cache.id_to_desc_map[handle];
        return Status();
    }

    Status invalidateRemote(SegmentID handle)
    {
        if (handle == LOCAL_SEGMENT_ID)
            return Status();
        tl_remote_cache_.get().id_to_desc_map.erase(handle);
        return Status();
    }

    // SegmentManager::withCachedSegment: the cached descriptor, and on
    // NeedsRefreshCache one refetch and retry.
    template <typename Func> Status withCachedSegment(SegmentID segment_id, SegmentDescRef &pin, Func operation)
    {
        if (segment_id == LOCAL_SEGMENT_ID) {
            pin = getLocal();
            return operation(pin.get());
        }
        TENT_CHECK_STATUS(getRemoteCached(pin, segment_id));
        Status res = operation(pin.get());
        if (!res.IsNeedsRefreshCache())
            return res;
        invalidateRemote(segment_id);
        TENT_CHECK_STATUS(getRemoteCached(pin, segment_id));
        res = operation(pin.get());
        if (res.IsNeedsRefreshCache())
            res = Status(Status::Code::kInvalidEntry, "Segment refetched from registry but still invalid",
                         -EINVAL);
        return res;
    }

private:
    struct RemoteSegmentCache {
        uint64_t last_refresh = 0;
        uint64_t version = 0;
        std::unordered_map<SegmentID, SegmentDescRef> id_to_desc_map;
    };

    // SegmentManager::getRemote: only the id-to-name look-up is locked.
    Status getRemote(SegmentDescRef &desc, SegmentID handle)
    {
        std::string segment_name;
        {
            RWSpinlock::ReadGuard guard(lock_);
            auto it = id_to_name_map_.find(handle);
            if (it == id_to_name_map_.end())
                return Status(Status::Code::kInvalidArgument, "Invalid segment handle", -ENOENT);
            segment_name = it->second;
        }
        return registry_.getSegmentDesc(desc, segment_name);
    }

    RWSpinlock lock_;
    std::unordered_map<SegmentID, std::string> id_to_name_map_;
    std::unordered_map<std::string, SegmentID> name_to_id_map_;
    std::atomic<uint64_t> version_{0};
    std::shared_mutex local_desc_lock_;
    SegmentDescRef local_desc_;
    std::atomic<uint64_t> local_desc_version_{0};
    const uint64_t manager_id_;
    ThreadLocalStorage<RemoteSegmentCache> tl_remote_cache_;
    SegmentRegistry registry_;
};


// What ShmTransport::addMemoryBuffer leaves in a registered buffer's
// descriptor (shm_path, SHM among its transports), beside the location the
// engine's registration probes ("cpu:0").
BufferDesc make_buffer(uint64_t addr, uint64_t length, const char *shm_path)
{
    BufferDesc b;
    b.addr = addr;
    b.length = length;
    b.location = "cpu:0";
    b.shm_path = shm_path;
    if (*shm_path)
        b.transports.push_back(SHM);
    return b;
}

// getMachineID: boot_id ":" machine-id; the peer shares our host.
const char *const kMachineId = "6f1c3b9e-2d4a-4e7b-9c1f-0a8b7d6e5f43:3d9c0f6a8b1e4c7d92a5f0e1b3c4d5e6";

// The name a peer's segment is registered under: its RPC server's address.
std::string segment_name(SegmentID id)
{
    char name[48];
    std::snprintf(name, sizeof(name), "10.0.%u.%u:%u", unsigned(id >> 8 & 0xff), unsigned(id & 0xff),
                  12345u + unsigned(id >> 16 & 0xfff));
    return name;
}

SegmentDesc make_segment(const std::string &name, std::vector<BufferDesc> buffers)
{
    SegmentDesc desc;
    desc.name = name;
    desc.type = SegmentType::Memory;
    desc.machine_id = kMachineId;
    desc.rpc_server_addr = name;
    MemorySegmentDesc memory;
    memory.buffers = std::move(buffers);
    desc.detail = std::move(memory);
    return desc;
}


// The peer's metadata as both the relocate path and the request path see it:
// the target segment and `other_segments` more, with ids handed out from 1 on
// (next_id_), the target's among them.
std::shared_ptr<SegmentManager> make_metadata(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
                                              size_t other_segments, void *local_addr, uint64_t local_length)
{
    std::vector<BufferDesc> local;
    if (local_addr)
        local.push_back(make_buffer(reinterpret_cast<uint64_t>(local_addr), local_length, ""));
    auto metadata = std::make_shared<SegmentManager>(make_segment("local", std::move(local)));
    std::vector<BufferDesc> descs;
    descs.reserve(n);
    for (size_t i = 0; i < n; i++)
        descs.push_back(make_buffer(buffers[i].addr, buffers[i].length, buffers[i].shm_path));
    metadata->addRemote(target_id, segment_name(target_id),
                        make_segment(segment_name(target_id), std::move(descs)));
    SegmentID id = 1;
    for (size_t i = 0; i < other_segments; i++, id++) {
        if (id == target_id)
            id++;
        std::vector<BufferDesc> one{make_buffer(0x7f0000000000ull + (id << 20), 4096, "")};
        metadata->addRemote(id, segment_name(id), make_segment(segment_name(id), std::move(one)));
    }
    return metadata;
}

} // namespace tent
} // namespace

