/* clock: nanoseconds of CLOCK_MONOTONIC, the clock's overhead, and the
 * barriers that keep measured work from being optimised away. */
#ifndef SHMBENCH_CLOCK_H
#define SHMBENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nanoseconds since a fixed point; inline: a timed region pays only the vDSO call. */
static inline uint64_t shmb_clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The compiler must assume *p is read and written: it cannot be optimised away. */
static inline void shmb_escape(const void *p)
{
    __asm__ __volatile__("" : : "g"(p) : "memory");
}

/* The compiler must assume all memory is read and written here. */
static inline void shmb_clobber(void)
{
    __asm__ __volatile__("" : : : "memory");
}

/* What one shmb_clock_now_ns() costs (median of back-to-back reads), >= 1 ns. */
double shmb_clock_overhead_ns(void);

/* The resolution clock_getres states, in ns. 0 or -errno. */
int shmb_clock_resolution_ns(uint64_t *out_ns);

#ifdef __cplusplus
}
#endif

#endif
