// mooncake_model.hpp: the PAUSE of the Mooncake model's spin loops and the
// back-off and guards of its ticket spinlock (C++17, private to the library).
// The model's headers are included by mooncake.cc alone, in an anonymous
// namespace: given external linkage or split into translation units, gcc 12
// stops inlining functions with one caller and the timed paths slow down.
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

// TENT's ticket reader-writer spinlock, after folly's RWTicketSpinLock:
// write, read and users tickets in one 64-bit word, and a waiter that
// pauses, then yields after 1000 failed tries. Lock supplies tryLock,
// unlock, tryLockShared and unlockShared.
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
