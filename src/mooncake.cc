// mooncake: Mooncake's per-request SHM relocate paths and the request path
// around them (a system model, C++17 behind shmbench/mooncake.h).
//
// Two upstream versions of kvcache-ai/Mooncake's transfer engine:
// - pr192: the commit that adds ShmTransport (24893a21e, "[TransferEngine]
//   Support Shared Memory Transports", PR #192): mooncake-transfer-engine/
//   src/transport/shm_transport/shm_transport.cpp, include/transfer_metadata.h,
//   src/transfer_metadata.cpp, src/config.cpp and include/common.h;
// - tent: the TENT engine upstream ships today (3b5a59413):
//   mooncake-transfer-engine/tent/src/transport/shm/shm_transport.cpp,
//   tent/src/runtime/{segment_manager,segment,transfer_engine_impl,
//   transport_selector,slab}.cpp and their headers under tent/include/tent.
// The types below keep upstream's members, in upstream's order, so that the
// objects a request touches have upstream's sizes.
#include "shmbench/mooncake.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

inline void cpu_pause()
{
#if defined(__x86_64__)
    _mm_pause(); // common.h: PAUSE()
#endif
}

namespace pr192 {
// RWSpinlock (include/common.h): a ticket reader-writer spinlock after
// folly's RWTicketSpinLock. A reader takes a ticket with one 64-bit CAS that
// bumps read and users, and returns it with a 16-bit fetch-and-add on write.
// Upstream's loads and stores are plain accesses next to a compiler barrier,
// which x86's ordering makes acquire and release; here they are
// __atomic_load_n(ACQUIRE) and __atomic_store_n(RELEASE), which compile to the
// same plain mov on x86 but are atomics in C++'s memory model (so that
// ThreadSanitizer sees no race where upstream relies on x86). Upstream's union has an anonymous struct (not ISO C++); here it is
// named `t`. The trailing bytes stand for upstream's unused
// std::atomic<int64_t> lock_ and uint64_t padding_[15], so the lock keeps its
// 136 bytes and the map beside it its offset.
class RWSpinlock {
public:
    RWSpinlock() = default;
    RWSpinlock(const RWSpinlock &) = delete;
    RWSpinlock &operator=(const RWSpinlock &) = delete;

    void lock()
    {
        uint32_t count = 0;
        while (!tryLock()) {
            cpu_pause();
            if (++count > 1000)
                std::this_thread::yield();
        }
    }

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

    void lockShared()
    {
        uint_fast32_t count = 0;
        while (!tryLockShared()) {
            cpu_pause();
            if (++count > 1000)
                std::this_thread::yield();
        }
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

    struct WriteGuard {
        explicit WriteGuard(RWSpinlock &l) : lock(l) { lock.lock(); }
        WriteGuard(const WriteGuard &) = delete;
        WriteGuard &operator=(const WriteGuard &) = delete;
        ~WriteGuard() { lock.unlock(); }
        RWSpinlock &lock;
    };

    struct ReadGuard {
        explicit ReadGuard(RWSpinlock &l) : lock(l) { lock.lockShared(); }
        ReadGuard(const ReadGuard &) = delete;
        ReadGuard &operator=(const ReadGuard &) = delete;
        ~ReadGuard() { lock.unlockShared(); }
        RWSpinlock &lock;
    };

    unsigned char upstream_tail[128] = {}; // lock_ (8 bytes) + padding_[15]

private:
    union RWTicket {
        constexpr RWTicket() : whole(0) {}
        uint64_t whole;
        uint32_t readWrite;
        struct {
            uint16_t write;
            uint16_t read;
            uint16_t users;
        } t;
    };

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

// GlobalConfig / globalConfig() (include/config.h, src/config.cpp): a
// function-local static behind std::call_once, consulted by every
// getSegmentDescByID of a remote segment. loadGlobalConfig reads MC_*
// environment variables, none of which changes metacache (default true).
struct GlobalConfig {
    bool metacache = true;
};

GlobalConfig &globalConfig()
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

// The TENT engine (kvcache-ai/Mooncake, mooncake-transfer-engine/tent/, as of
// 3b5a59413, August 2026). Types keep upstream's members in upstream's order
// where a request touches them.
namespace tent {

// RWSpinlock (include/tent/common/concurrent/rw_spinlock.h): the same ticket
// layout as the PR's lock, but every step is a compare-and-swap on an
// std::atomic<uint64_t>: a reader's unlock and a writer's unlock are CAS
// loops, not a fetch-and-add and a plain store. The ticket union's anonymous
// struct (not ISO C++) is named `t`.
class RWSpinlock {
public:
    RWSpinlock() = default;
    RWSpinlock(const RWSpinlock &) = delete;
    RWSpinlock &operator=(const RWSpinlock &) = delete;

    void lock()
    {
        uint32_t count = 0;
        while (!tryLock()) {
            cpu_pause();
            if (++count > 1000)
                std::this_thread::yield();
        }
    }

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

    void lockShared()
    {
        uint_fast32_t count = 0;
        while (!tryLockShared()) {
            cpu_pause();
            if (++count > 1000)
                std::this_thread::yield();
        }
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

    struct WriteGuard {
        explicit WriteGuard(RWSpinlock &l) : lock(l) { lock.lock(); }
        WriteGuard(const WriteGuard &) = delete;
        WriteGuard &operator=(const WriteGuard &) = delete;
        ~WriteGuard() { lock.unlock(); }
        RWSpinlock &lock;
    };

    struct ReadGuard {
        explicit ReadGuard(RWSpinlock &l) : lock(l) { lock.lockShared(); }
        ReadGuard(const ReadGuard &) = delete;
        ReadGuard &operator=(const ReadGuard &) = delete;
        ~ReadGuard() { lock.unlockShared(); }
        RWSpinlock &lock;
    };

private:
    union RWTicket {
        constexpr RWTicket() : whole(0) {}
        uint64_t whole;
        uint32_t readWrite;
        struct {
            uint16_t write;
            uint16_t read;
            uint16_t users;
        } t;
    };

    std::atomic<uint64_t> ticket_{0};

public:
    std::atomic<int64_t> lock_{0}; // unused, as upstream: the lock keeps its 136 bytes
    uint64_t padding_[15] = {};
};

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
// the target segment and `other_segments` more, as pr192's build lays them out.
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
    metadata->addRemote(target_id, pr192::segment_name(target_id),
                        make_segment(pr192::segment_name(target_id), std::move(descs)));
    SegmentID id = 1;
    for (size_t i = 0; i < other_segments; i++, id++) {
        if (id == target_id)
            id++;
        std::vector<BufferDesc> one{make_buffer(0x7f0000000000ull + (id << 20), 4096, "")};
        metadata->addRemote(id, pr192::segment_name(id), make_segment(pr192::segment_name(id), std::move(one)));
    }
    return metadata;
}

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

    const shmb_mooncake_hooks_t *hooks = nullptr;
    int last_error = 0;       // the model's: the translation's -errno, for the C boundary
    uint64_t last_target = 0; // the model's: the last task's target, for the caller

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
        for (auto &request : request_list) {
            shm_batch->task_list.push_back(ShmTask{});
            auto &task = shm_batch->task_list[shm_batch->task_list.size() - 1];
            uint64_t target_addr = request.target_offset;
            bool translated = request.target_id == LOCAL_SEGMENT_ID;
            if (request.target_id != LOCAL_SEGMENT_ID && hooks && hooks->translate) {
                void *local = nullptr;
                int rc = hooks->translate(hooks->ctx, request.target_id, target_addr, request.length, &local);
                if (rc < 0) {
                    last_error = rc;
                    return Status(Status::Code::kInternalError, "Failed to relocate", rc);
                }
                target_addr = reinterpret_cast<uint64_t>(local);
                translated = true;
            }
            task.target_addr = target_addr;
            last_target = target_addr;
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
    uint64_t selected_buffer() const { return selected_buffer_; }

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
    uint64_t selected_buffer_ = 0; // the model's: what the selection found
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
    selected_buffer_ = entry->addr;
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

// One model, one path: exactly one of the two transports is set.
struct shmb_mooncake {
    shmb_mooncake_path_t path;
    std::unique_ptr<pr192::ShmTransport> pr192;
    std::unique_ptr<tent::ShmTransport> tent;
};

struct shmb_mooncake_engine {
    explicit shmb_mooncake_engine(std::shared_ptr<tent::SegmentManager> metadata) : engine(std::move(metadata)) {}
    tent::TransferEngine engine;
};

namespace {

const char *const path_names[SHMB_MOONCAKE_PATHS] = {"tent", "pr192"};

bool valid_buffers(const shmb_mooncake_buffer_t *buffers, size_t n)
{
    if (!buffers || n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (buffers[i].length == 0 || !buffers[i].shm_path)
            return false;
    return true;
}

int build(shmb_mooncake_path_t path, const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
          size_t other_segments, const shmb_mooncake_ops_t *ops, shmb_mooncake_t **out)
{
    auto m = std::make_unique<shmb_mooncake>();
    m->path = path;
    if (path == SHMB_MOONCAKE_PR192)
        m->pr192 = pr192::build(buffers, n, target_id, other_segments, *ops);
    else
        m->tent = std::make_unique<tent::ShmTransport>(
            tent::make_metadata(buffers, n, target_id, other_segments, nullptr, 0), *ops);
    *out = m.release();
    return 0;
}

int relocate_one(shmb_mooncake_t *m, uint64_t target_id, uint64_t addr, uint64_t len, void **out) noexcept
{
    try {
        uint64_t dest = addr;
        if (m->path == SHMB_MOONCAKE_PR192) {
            int rc = m->pr192->relocateSharedMemoryAddress(dest, len, target_id);
            if (rc < 0)
                return rc;
        } else {
            tent::Status status = m->tent->relocateSharedMemoryAddress(dest, len, target_id);
            if (!status.ok())
                return status.errnum();
        }
        *out = reinterpret_cast<void *>(dest);
        return 0;
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

// A C caller may store any int in the opcode; loading an enum outside its
// enumerators' range is undefined in C++, so it is read as the int it is.
unsigned opcode_of(const shmb_mooncake_request_t *req)
{
    static_assert(sizeof(shmb_mooncake_opcode_t) == sizeof(int), "a C enum is an int");
    int op;
    std::memcpy(&op, &req->opcode, sizeof(op));
    return unsigned(op);
}

// Why a request failed: the translation's error, an unknown segment, or no
// registered buffer holding the target. Only a failed request asks.
int failure(tent::TransferEngine &engine, uint64_t target_id)
{
    if (engine.shm().last_error < 0)
        return engine.shm().last_error;
    return engine.segments().known(target_id) ? -EINVAL : -ENOENT;
}

// One descriptor as a caller of TENT sends it alone: a batch of one,
// submitted, polled once (the SHM copy is synchronous) and freed. The caller
// builds the std::vector<Request> that submitTransfer takes.
int submit_one(tent::TransferEngine &engine, const shmb_mooncake_request_t *req, const shmb_mooncake_hooks_t *hooks,
               shmb_mooncake_submitted_t *out)
{
    tent::BatchID batch = engine.allocateBatch(1);
    if (!batch)
        return -ENOMEM;
    tent::Request request{};
    request.opcode = opcode_of(req) == unsigned(SHMB_MOONCAKE_READ) ? tent::Request::READ : tent::Request::WRITE;
    request.source = req->source;
    request.target_id = req->target_id;
    request.target_offset = req->target_offset;
    request.length = size_t(req->length);
    engine.shm().hooks = hooks;
    engine.shm().last_error = 0;
    engine.shm().last_target = 0;
    std::vector<tent::Request> request_list{request};
    tent::Status status = engine.submitTransfer(batch, request_list);
    tent::TransferStatus transfer{tent::PENDING, 0};
    if (status.ok())
        status = engine.getTransferStatus(batch, 0, transfer);
    engine.freeBatch(batch);
    if (!status.ok())
        return status.errnum();
    if (transfer.s != tent::COMPLETED)
        return failure(engine, req->target_id);
    if (out) {
        out->target = reinterpret_cast<void *>(engine.shm().last_target);
        out->buffer_addr = engine.selected_buffer();
        out->transferred_bytes = transfer.transferred_bytes;
    }
    return 0;
}

} // namespace

// The entry points catch every exception; they cannot be declared noexcept
// because the C header's declarations are not.
extern "C" {

const char *shmb_mooncake_path_name(shmb_mooncake_path_t path)
{
    return unsigned(path) < SHMB_MOONCAKE_PATHS ? path_names[path] : nullptr;
}

int shmb_mooncake_path_parse(const char *name, shmb_mooncake_path_t *out)
{
    if (!name || !out)
        return -EINVAL;
    for (unsigned i = 0; i < SHMB_MOONCAKE_PATHS; i++)
        if (std::strcmp(name, path_names[i]) == 0) {
            *out = shmb_mooncake_path_t(i);
            return 0;
        }
    return -EINVAL;
}

int shmb_mooncake_create_path(shmb_mooncake_path_t path, const shmb_mooncake_buffer_t *buffers, size_t n,
                              uint64_t target_id, size_t other_segments, const shmb_mooncake_ops_t *ops,
                              shmb_mooncake_t **out)
{
    if (unsigned(path) >= SHMB_MOONCAKE_PATHS || !valid_buffers(buffers, n) || !ops || !ops->attach || !out)
        return -EINVAL;
    try {
        return build(path, buffers, n, target_id, other_segments, ops, out);
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

shmb_mooncake_path_t shmb_mooncake_path_of(const shmb_mooncake_t *m)
{
    return m ? m->path : SHMB_MOONCAKE_DEFAULT_PATH;
}

void shmb_mooncake_destroy(shmb_mooncake_t *m)
{
    delete m;
}

int shmb_mooncake_relocate(shmb_mooncake_t *m, uint64_t target_id, uint64_t addr, uint64_t len,
                           void **out)
{
    if (!m || !out || len == 0)
        return -EINVAL;
    return relocate_one(m, target_id, addr, len, out);
}

uint64_t shmb_mooncake_relocate_batch(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        void *p;
        if (shmb_mooncake_relocate(m, target_id, requests[i].addr, requests[i].len, &p) == 0)
            sum += reinterpret_cast<uint64_t>(p);
    }
    return sum;
}

uint64_t shmb_mooncake_relocate_chain(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests,
                                      const uint64_t *expected, size_t n)
{
    uint64_t sum = 0, delta = 0;
    for (size_t i = 0; i < n; i++) {
        void *p = nullptr;
        shmb_mooncake_relocate(m, target_id, requests[i].addr + delta, requests[i].len, &p);
        const uint64_t got = reinterpret_cast<uint64_t>(p);
        delta = got - expected[i];
        sum += got;
    }
    return sum;
}

size_t shmb_mooncake_attached(const shmb_mooncake_t *m)
{
    if (!m)
        return 0;
    return m->path == SHMB_MOONCAKE_PR192 ? m->pr192->attached() : m->tent->attached();
}

int shmb_mooncake_translate(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local)
{
    return shmb_mooncake_relocate(static_cast<shmb_mooncake_t *>(ctx), target_id, addr, len, local);
}

int shmb_mooncake_engine_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
                                size_t other_segments, void *local_addr, uint64_t local_length,
                                shmb_mooncake_engine_t **out)
{
    if (!valid_buffers(buffers, n) || target_id == tent::LOCAL_SEGMENT_ID || (local_length && !local_addr) || !out)
        return -EINVAL;
    try {
        *out = new shmb_mooncake_engine(
            tent::make_metadata(buffers, n, target_id, other_segments, local_addr, local_length));
        return 0;
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

void shmb_mooncake_engine_destroy(shmb_mooncake_engine_t *e)
{
    delete e;
}

int shmb_mooncake_engine_submit(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *req,
                                const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out)
{
    if (!e || !req || req->length == 0 || opcode_of(req) > unsigned(SHMB_MOONCAKE_WRITE))
        return -EINVAL;
    try {
        return submit_one(e->engine, req, hooks, out);
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}

uint64_t shmb_mooncake_engine_submit_batch(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *requests,
                                           size_t n, const shmb_mooncake_hooks_t *hooks)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        shmb_mooncake_submitted_t done;
        if (shmb_mooncake_engine_submit(e, &requests[i], hooks, &done) == 0)
            sum += reinterpret_cast<uint64_t>(done.target) + done.buffer_addr;
    }
    return sum;
}

} // extern "C"
