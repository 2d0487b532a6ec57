// mooncake_common.hpp: what TENT's runtime stands on (kvcache-ai/Mooncake,
// mooncake-transfer-engine/tent/include/tent/common/ at 3b5a59413): its
// spinlock, Status, ids and transport types, per-thread storage and clock.
// Like every Mooncake header here, included by mooncake.cc alone, in an
// anonymous namespace: given external linkage or split into translation
// units, gcc 12 stops inlining functions with one caller and the timed paths
// slow down.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {
namespace tent {

inline void cpu_pause()
{
#if defined(__x86_64__)
    _mm_pause(); // common.h: PAUSE()
#endif
}

// RWSpinlock (include/tent/common/concurrent/rw_spinlock.h), after folly's
// RWTicketSpinLock: write, read and users tickets in one 64-bit word, every
// step a compare-and-swap on it (both unlocks are CAS loops), and a waiter
// that pauses, then yields after 1000 failed tries.
class RWSpinlock {
public:
    RWSpinlock() = default;
    RWSpinlock(const RWSpinlock &) = delete;
    RWSpinlock &operator=(const RWSpinlock &) = delete;

    void lock()
    {
        uint32_t count = 0;
        while (!tryLock())
            backOff(count);
    }

    void lockShared()
    {
        uint_fast32_t count = 0;
        while (!tryLockShared())
            backOff(count);
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
    // Upstream's union has an anonymous struct (not ISO C++); here it is
    // named `t`.
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

    template <class Count> static void backOff(Count &count)
    {
        cpu_pause();
        if (++count > 1000)
            std::this_thread::yield();
    }

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


} // namespace tent
} // namespace
