// mooncake_model.hpp: what the Mooncake model's two upstream versions share
// (C++17, private to the library): the PAUSE of their spin loops and the
// back-off and guards of the ticket spinlock both of them use.
//
// The model's files, by concern, all of them one translation unit:
// - mooncake.cc: the entry points, the relocate path's dispatch between its
//   two versions, and one request sent through TENT's engine;
// - mooncake_pr192.hpp: PR #192's ShmTransport and TransferMetadata;
// - mooncake_tent.hpp: TENT's ShmTransport, segment manager and per-thread
//   caches (the relocate path, and the look-ups of the request path);
// - mooncake_transport.hpp: requests, transports, slabs and the SHM submit;
// - mooncake_submit.hpp: selection, tasks, batches and the merge;
// - mooncake_engine.hpp: TransferEngineImpl's batch and submit path.
// The headers are included by mooncake.cc alone and define everything in
// an anonymous namespace, as the single file did, so that the compiler sees
// what it saw then and the timed paths compile to the same instructions.
// Tried and measured otherwise: given external linkage, gcc 12 stops
// inlining functions with one caller (both relocateSharedMemoryAddress,
// prepareSubmit, TransportSelector::select); split into two translation
// units, its inlining in each changes and pr192's relocation p50 goes from
// 41 to 47 ns.
#pragma once

#include <cstdint>
#include <thread>

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

// The ticket reader-writer spinlock of both upstream versions, after folly's
// RWTicketSpinLock: write, read and users tickets in one 64-bit word, and a
// waiter that pauses, then yields after 1000 failed tries. Lock supplies
// tryLock, unlock, tryLockShared and unlockShared, the steps the two
// versions do differently.
template <class Lock> class TicketSpinlock {
public:
    TicketSpinlock() = default;
    TicketSpinlock(const TicketSpinlock &) = delete;
    TicketSpinlock &operator=(const TicketSpinlock &) = delete;

    void lock()
    {
        uint32_t count = 0;
        while (!self().tryLock())
            backOff(count);
    }

    void lockShared()
    {
        uint_fast32_t count = 0;
        while (!self().tryLockShared())
            backOff(count);
    }

    struct WriteGuard {
        explicit WriteGuard(Lock &l) : lock(l) { lock.lock(); }
        WriteGuard(const WriteGuard &) = delete;
        WriteGuard &operator=(const WriteGuard &) = delete;
        ~WriteGuard() { lock.unlock(); }
        Lock &lock;
    };

    struct ReadGuard {
        explicit ReadGuard(Lock &l) : lock(l) { lock.lockShared(); }
        ReadGuard(const ReadGuard &) = delete;
        ReadGuard &operator=(const ReadGuard &) = delete;
        ~ReadGuard() { lock.unlockShared(); }
        Lock &lock;
    };

protected:
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

private:
    Lock &self() { return static_cast<Lock &>(*this); }

    template <class Count> static void backOff(Count &count)
    {
        cpu_pause();
        if (++count > 1000)
            std::this_thread::yield();
    }
};

} // namespace
