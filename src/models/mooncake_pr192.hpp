// mooncake_pr192.hpp: PR #192's relocate path (C++17, private to the
// library): the ticket spinlock, the segment descriptors, TransferMetadata's
// segment cache and ShmTransport::relocateSharedMemoryAddress, as upstream
// kvcache-ai/Mooncake has them at commit 24893a21e ("[TransferEngine]
// Support Shared Memory Transports"): mooncake-transfer-engine/
// src/transport/shm_transport/shm_transport.cpp, include/transfer_metadata.h,
// src/transfer_metadata.cpp, src/config.cpp and include/common.h. The types
// keep upstream's members, in upstream's order, so that the objects a
// request touches have upstream's sizes; and how the model builds the path
// for a peer. Only mooncake.cc includes it.
#pragma once

#include "mooncake_model.hpp"

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace {
namespace pr192 {

// RWSpinlock (include/common.h): a ticket reader-writer spinlock after
// folly's RWTicketSpinLock. A reader takes a ticket with one 64-bit CAS that
// bumps read and users, and returns it with a 16-bit fetch-and-add on write.
// Upstream's loads and stores are plain accesses next to a compiler barrier,
// which x86's ordering makes acquire and release; here they are
// __atomic_load_n(ACQUIRE) and __atomic_store_n(RELEASE), which compile to the
// same plain mov on x86 but are atomics in C++'s memory model (so that
// ThreadSanitizer sees no race where upstream relies on x86). The trailing
// bytes stand for upstream's unused
// std::atomic<int64_t> lock_ and uint64_t padding_[15], so the lock keeps its
// 136 bytes and the map beside it its offset.
class RWSpinlock : public TicketSpinlock<RWSpinlock> {
public:
    bool tryLock()
    {
        RWTicket t;
        uint64_t old = t.whole = load_acquire(&ticket_.whole);
        if (t.t.users != t.t.write)
            return false;
        ++t.t.users;
        return __sync_bool_compare_and_swap(&ticket_.whole, old, t.whole);
    }

    void unlock()
    {
        RWTicket t;
        t.whole = load_acquire(&ticket_.whole);
        ++t.t.read;
        ++t.t.write;
        store_release(&ticket_.readWrite, t.readWrite);
    }

    bool tryLockShared()
    {
        RWTicket t, old;
        old.whole = t.whole = load_acquire(&ticket_.whole);
        old.t.users = old.t.read;
        ++t.t.read;
        ++t.t.users;
        return __sync_bool_compare_and_swap(&ticket_.whole, old.whole, t.whole);
    }

    void unlockShared() { __sync_fetch_and_add(&ticket_.t.write, 1); }

    unsigned char upstream_tail[128] = {}; // lock_ (8 bytes) + padding_[15]

private:
    template <class T> static T load_acquire(T *addr)
    {
        T v = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
        asm volatile("" ::: "memory");
        return v;
    }

    template <class T> static void store_release(T *addr, T v)
    {
        asm volatile("" ::: "memory");
        __atomic_store_n(addr, v, __ATOMIC_RELEASE);
    }

    RWTicket ticket_;
};
static_assert(sizeof(RWSpinlock) == 136, "upstream's lock is 136 bytes");

// GlobalConfig / globalConfig() (include/config.h, src/config.cpp): a
// function-local static behind std::call_once, consulted by every
// getSegmentDescByID of a remote segment. loadGlobalConfig reads MC_*
// environment variables, none of which changes metacache (default true).
struct GlobalConfig {
    bool metacache = true;
};

inline GlobalConfig &globalConfig()
{
    static GlobalConfig config;
    static std::once_flag once;
    std::call_once(once, [] {});
    return config;
}

// include/transfer_metadata.h
struct DeviceDesc {
    std::string name;
    uint16_t lid;
    std::string gid;
};

struct BufferDesc {
    std::string location;
    uint64_t addr;
    uint64_t length;
    std::vector<uint32_t> lkey;
    std::vector<uint32_t> rkey;
    std::string shm_path;
};

struct FileBufferDesc {
    uint64_t length;
    std::string original_path;
    std::unordered_map<std::string, std::string> mounted_path_map;
};

// include/topology.h: Topology's members (TopologyMatrix matrix_,
// hca_list_, resolved_matrix_); empty for a CPU-only peer.
struct TopologyEntry {
    std::string name;
    std::vector<std::string> preferred_hca;
    std::vector<std::string> avail_hca;
};

struct ResolvedTopologyEntry {
    std::vector<int> preferred_hca;
    std::vector<int> avail_hca;
};

struct Topology {
    std::unordered_map<std::string, TopologyEntry> matrix_;
    std::vector<std::string> hca_list_;
    std::unordered_map<std::string, ResolvedTopologyEntry> resolved_matrix_;
};

struct MemorySegmentDesc {
    Topology topology;
    std::vector<DeviceDesc> devices;
    std::vector<BufferDesc> buffers;
};

struct FileSegmentDesc {
    std::vector<FileBufferDesc> buffers;
};

struct SegmentDesc {
    std::string name;
    std::string protocol;
    std::variant<MemorySegmentDesc, FileSegmentDesc> detail;
};

using SegmentID = uint64_t;
constexpr SegmentID LOCAL_SEGMENT_ID = 0; // include/common.h

// TransferMetadata's segment cache (include/transfer_metadata.h,
// src/transfer_metadata.cpp).
class TransferMetadata {
public:
    // TransferMetadata::addLocalSegment
    void addLocalSegment(SegmentID segment_id, const std::string &segment_name,
                         std::shared_ptr<SegmentDesc> &&desc)
    {
        RWSpinlock::WriteGuard guard(segment_lock_);
        segment_id_to_desc_map_[segment_id] = desc;
        segment_name_to_id_map_[segment_name] = segment_id;
    }

    // TransferMetadata::getSegmentDescByID with force_update = false. The
    // branch taken with metacache off (re-read from the metadata store) is
    // not modelled: it answers nothing here.
    std::shared_ptr<SegmentDesc> getSegmentDescByID(SegmentID segment_id)
    {
        if (segment_id != LOCAL_SEGMENT_ID && !globalConfig().metacache)
            return nullptr;
        RWSpinlock::ReadGuard guard(segment_lock_);
        if (!segment_id_to_desc_map_.count(segment_id))
            return nullptr;
        return segment_id_to_desc_map_[segment_id];
    }

private:
    RWSpinlock segment_lock_;
    std::unordered_map<uint64_t, std::shared_ptr<SegmentDesc>> segment_id_to_desc_map_;
    std::unordered_map<std::string, uint64_t> segment_name_to_id_map_;
};

// ShmTransport (include/transport/shm_transport/shm_transport.h,
// src/transport/shm_transport/shm_transport.cpp). Upstream holds no lock
// around remap_entries_.
class ShmTransport {
public:
    ShmTransport(std::shared_ptr<TransferMetadata> metadata, const shmb_mooncake_ops_t &ops)
        : metadata_(std::move(metadata)), ops_(ops)
    {
    }
    ShmTransport(const ShmTransport &) = delete;
    ShmTransport &operator=(const ShmTransport &) = delete;

    // ShmTransport::~ShmTransport: munmap + close of every entry, here
    // ops->detach.
    ~ShmTransport()
    {
        for (auto &entry : remap_entries_)
            if (ops_.detach)
                ops_.detach(ops_.ctx, entry.second.shm_addr, entry.second.length);
    }

    // ShmTransport::relocateSharedMemoryAddress. Departures, each for a
    // contract upstream breaks: a null descriptor is -ENOENT (upstream
    // dereferences it); the range test cannot wrap (upstream computes
    // dest_addr + length <= entry.addr + entry.length); the first use maps
    // the buffer's length (upstream maps the request's `length`, so a later
    // request further in the buffer would land past the mapping).
    int relocateSharedMemoryAddress(uint64_t &dest_addr, uint64_t length, uint64_t target_id)
    {
        auto desc = metadata_->getSegmentDescByID(target_id);
        if (!desc)
            return -ENOENT;
        int index = 0;
        auto &detail = std::get<MemorySegmentDesc>(desc->detail);
        for (auto &entry : detail.buffers) {
            if (!entry.shm_path.empty() && entry.addr <= dest_addr && length <= entry.length &&
                dest_addr - entry.addr <= entry.length - length) {
                if (!remap_entries_.count(entry.addr)) {
                    void *shm_addr = nullptr;
                    int rc = ops_.attach(ops_.ctx, size_t(index), entry.shm_path.c_str(), entry.length,
                                         &shm_addr);
                    if (rc < 0)
                        return rc;
                    OpenedShmEntry shm_entry;
                    shm_entry.shm_fd = -1; // the descriptor stays with ops
                    shm_entry.shm_addr = shm_addr;
                    shm_entry.length = entry.length;
                    remap_entries_[entry.addr] = shm_entry;
                }
                auto shm_addr = remap_entries_[entry.addr].shm_addr;
                dest_addr = dest_addr - entry.addr + reinterpret_cast<uint64_t>(shm_addr);
                return 0;
            }
            index++;
        }
        return -EINVAL;
    }

    size_t attached() const { return remap_entries_.size(); }

private:
    struct OpenedShmEntry {
        int shm_fd;
        void *shm_addr;
        uint64_t length;
    };

    std::shared_ptr<TransferMetadata> metadata_;
    shmb_mooncake_ops_t ops_;
    std::unordered_map<uint64_t, OpenedShmEntry> remap_entries_;
};

// What parsing a peer's segment description would build: one
// MemorySegmentDesc whose buffers carry what ShmTransport::registerLocalMemory
// fills in (location, addr, length, shm_path; no rkeys for SHM).
std::shared_ptr<SegmentDesc> make_segment(const std::string &name, const std::vector<BufferDesc> &buffers)
{
    auto desc = std::make_shared<SegmentDesc>();
    desc->name = name;
    desc->protocol = "shm";
    MemorySegmentDesc memory;
    memory.buffers = buffers;
    desc->detail = std::move(memory);
    return desc;
}

BufferDesc make_buffer(uint64_t addr, uint64_t length, const char *shm_path)
{
    BufferDesc b;
    b.location = "cpu:0";
    b.addr = addr;
    b.length = length;
    b.shm_path = shm_path;
    return b;
}


std::string segment_name(SegmentID id)
{
    char name[48];
    std::snprintf(name, sizeof(name), "10.0.%u.%u:%u", unsigned(id >> 8 & 0xff), unsigned(id & 0xff),
                  12345u + unsigned(id >> 16 & 0xfff));
    return name;
}

// The pr192 path for a peer: its segment descriptors in TransferMetadata's
// cache, as parsing its published description would leave them.
std::unique_ptr<ShmTransport> build(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
                                    size_t other_segments, const shmb_mooncake_ops_t &ops)
{
    auto metadata = std::make_shared<TransferMetadata>();
    std::vector<BufferDesc> descs;
    descs.reserve(n);
    for (size_t i = 0; i < n; i++)
        descs.push_back(make_buffer(buffers[i].addr, buffers[i].length, buffers[i].shm_path));
    metadata->addLocalSegment(target_id, segment_name(target_id), make_segment(segment_name(target_id), descs));
    // Segment ids are handed out from 1 on (next_segment_id_), the target's
    // among them.
    SegmentID id = 1;
    for (size_t i = 0; i < other_segments; i++, id++) {
        if (id == target_id)
            id++;
        std::vector<BufferDesc> one{make_buffer(0x7f0000000000ull + (id << 20), 4096, "")};
        metadata->addLocalSegment(id, segment_name(id), make_segment(segment_name(id), one));
    }
    return std::make_unique<ShmTransport>(std::move(metadata), ops);
}

} // namespace pr192
} // namespace
