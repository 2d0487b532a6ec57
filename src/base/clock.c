/* clock: the monotonic clock's measured overhead and resolution
 * (shmbench/clock.h). */
#include "shmbench/clock.h"

#include <errno.h>
#include <stdlib.h>

#define READS_PER_RUN 10000
#define RUNS 9

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double shmb_clock_overhead_ns(void)
{
    double per_read[RUNS];
    for (int r = 0; r < RUNS; r++) {
        uint64_t sink = 0;
        uint64_t start = shmb_clock_now_ns();
        for (int i = 0; i < READS_PER_RUN; i++)
            sink += shmb_clock_now_ns();
        uint64_t end = shmb_clock_now_ns();
        shmb_escape(&sink);
        per_read[r] = (double)(end - start) / READS_PER_RUN;
    }
    qsort(per_read, RUNS, sizeof(per_read[0]), compare_double);
    return per_read[RUNS / 2] < 1.0 ? 1.0 : per_read[RUNS / 2];
}

int shmb_clock_resolution_ns(uint64_t *out_ns)
{
    struct timespec ts;
    if (clock_getres(CLOCK_MONOTONIC, &ts) != 0)
        return -errno;
    *out_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return 0;
}
