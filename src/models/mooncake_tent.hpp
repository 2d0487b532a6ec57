// mooncake_tent.hpp: TENT's relocate path (C++17, private to the library):
// the engine kvcache-ai/Mooncake ships today (mooncake-transfer-engine/tent/
// as of 3b5a59413, August 2026): its ticket spinlock, Status, the segment
// descriptors (include/tent/runtime/segment.h), the per-thread storage, the
// SegmentManager's look-ups (src/runtime/segment_manager.cpp) and
// ShmTransport::relocateSharedMemoryAddress (src/transport/shm/
// shm_transport.cpp). Types keep upstream's members in upstream's order
// where a request touches them; and the peer's segments as the model
// registers them. A relocation and a request (mooncake.cc) run it.
#pragma once

#include "mooncake_model.hpp"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace {
namespace tent {

// RWSpinlock (include/tent/common/concurrent/rw_spinlock.h): every step is a
// compare-and-swap on an std::atomic<uint64_t>; both unlocks are CAS loops.
class RWSpinlock : public TicketSpinlock<RWSpinlock> {
public:
    bool tryLock()
    {
        RWTicket t, expected;
        expected.whole = ticket_.load(std::memory_order_acquire);
        t.whole = expected.whole;
        if (t.t.users != t.t.write)
            return false;
        ++t.t.users;
        return ticket_.compare_exchange_weak(expected.whole, t.whole, std::memory_order_acquire);
    }

    void unlock()
    {
        uint64_t expected = ticket_.load(std::memory_order_relaxed);
        RWTicket t;
        do {
            t.whole = expected;
            ++t.t.read;
            ++t.t.write;
        } while (!ticket_.compare_exchange_weak(expected, t.whole, std::memory_order_release,
                                                std::memory_order_relaxed));
    }

    bool tryLockShared()
    {
        RWTicket t, expected;
        expected.whole = ticket_.load(std::memory_order_acquire);
        t.whole = expected.whole;
        expected.t.users = expected.t.read;
        ++t.t.read;
        ++t.t.users;
        return ticket_.compare_exchange_weak(expected.whole, t.whole, std::memory_order_acquire);
    }

    void unlockShared()
    {
        uint64_t expected = ticket_.load(std::memory_order_relaxed);
        RWTicket t;
        do {
            t.whole = expected;
            ++t.t.write;
        } while (!ticket_.compare_exchange_weak(expected, t.whole, std::memory_order_release));
    }

private:
    std::atomic<uint64_t> ticket_{0};

public:
    std::atomic<int64_t> lock_{0}; // unused, as upstream: the lock keeps its 136 bytes
    uint64_t padding_[15] = {};
};
static_assert(sizeof(RWSpinlock) == 136, "upstream's lock is 136 bytes");

// Status (include/tent/common/status.h): OK carries no message; an error
// copies its message to the heap. errnum is the model's: the -errno the C
// boundary returns for it.
class Status {
public:
    enum class Code : uint16_t { kOk = 0, kInvalidArgument = 1, kTooManyRequests = 2, kInvalidEntry = 5,
                                 kNeedsRefreshCache = 7, kInternalError = 199 };

    Status() = default;
    Status(Code code, const char *message, int errnum) : code_(code), errnum_(errnum)
    {
        const size_t n = std::strlen(message) + 1;
        message_.reset(new char[n]);
        std::memcpy(message_.get(), message, n);
    }

    bool ok() const { return code_ == Code::kOk; }
    bool IsNeedsRefreshCache() const { return code_ == Code::kNeedsRefreshCache; }
    int errnum() const { return ok() ? 0 : errnum_; }

private:
    Code code_ = Code::kOk;
    int errnum_ = 0;
    std::unique_ptr<char[]> message_;
};

#define TENT_CHECK_STATUS(call)                                                                            \
    do {                                                                                                  \
        Status status_ = (call);                                                                          \
        if (!status_.ok())                                                                                \
            return status_;                                                                               \
    } while (0)

using SegmentID = uint64_t;
using BatchID = uint64_t;
constexpr SegmentID LOCAL_SEGMENT_ID = 0;

// include/tent/common/types.h
enum TransportType : int { UNSPEC = 0, RDMA, MNNVL, SHM, NVLINK, GDS, IOURING, TCP, AscendDirect,
                           SUNRISE_LINK, TPU, UB, MPCOMM, kNumTransportTypes };
constexpr int kSupportedTransportTypes = int(kNumTransportTypes);

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

// ThreadLocalStorage<T> (include/tent/common/concurrent/thread_local_storage.h):
// the hot path is upstream's, one thread_local access and an id compare
// against a one-entry cache. The cold path (first use per instance and
// thread) keeps the values in the owner under a mutex, where upstream keeps
// them in a per-thread map and registers them with the owner; both end with
// the one-entry cache pointing at the thread's value.
inline uint64_t nextThreadLocalStorageId()
{
    static std::atomic<uint64_t> counter{1};
    return counter.fetch_add(1, std::memory_order_relaxed);
}

template <class T> class ThreadLocalStorage {
public:
    ThreadLocalStorage() = default;
    ThreadLocalStorage(const ThreadLocalStorage &) = delete;
    ThreadLocalStorage &operator=(const ThreadLocalStorage &) = delete;

    T &get()
    {
        ThreadState &state = threadState();
        if (state.cached_id == id_)
            return *state.cached_value;
        std::lock_guard<std::mutex> lock(mutex_);
        auto &slot = values_[std::this_thread::get_id()];
        if (!slot)
            slot = std::make_unique<T>();
        state.cached_id = id_;
        state.cached_value = slot.get();
        return *slot;
    }

private:
    struct ThreadState {
        uint64_t cached_id = 0;
        T *cached_value = nullptr;
    };

    static ThreadState &threadState()
    {
        thread_local ThreadState state;
        return state;
    }

    const uint64_t id_ = nextThreadLocalStorageId();
    std::mutex mutex_;
    std::unordered_map<std::thread::id, std::unique_ptr<T>> values_;
};

// include/tent/common/utils/os.h
inline int64_t getCurrentTimeInNano()
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts))
        return -1;
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

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
