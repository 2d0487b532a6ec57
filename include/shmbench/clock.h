/*
 * clock: a monotonic nanosecond clock, its measured overhead, and compiler
 * barriers that keep measured work from being optimised away.
 *
 * All times are in nanoseconds of CLOCK_MONOTONIC.
 */
#ifndef SHMBENCH_CLOCK_H
#define SHMBENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nanoseconds since an arbitrary fixed point (CLOCK_MONOTONIC). Inline so that
 * a timed region pays only the vDSO call. */
static inline uint64_t shmb_clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Makes the compiler believe that *p is read and may be written: a value or
 * buffer passed here cannot be optimised away. */
static inline void shmb_escape(const void *p)
{
    __asm__ __volatile__("" : : "g"(p) : "memory");
}

/* Makes the compiler believe that all memory is read and written here: stores
 * before it are not sunk past it, loads after it are not hoisted above it. */
static inline void shmb_clobber(void)
{
    __asm__ __volatile__("" : : : "memory");
}

/* Measures what one shmb_clock_now_ns() costs, in nanoseconds (the median of
 * several runs of back-to-back reads). This is also the smallest interval the
 * clock can time meaningfully. Returns a value >= 1. */
double shmb_clock_overhead_ns(void);

/* Reads the clock's resolution as the kernel states it (clock_getres), in
 * nanoseconds. Returns 0 on success, -errno on failure. */
int shmb_clock_resolution_ns(uint64_t *out_ns);

#ifdef __cplusplus
}
#endif

#endif
