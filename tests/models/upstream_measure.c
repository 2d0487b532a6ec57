/* upstream_measure: ns per call of upstream OffsetAllocator's allocate and free, and of TENT's submit path
 * when built (docs/upstream.md). Built only with -DSHMB_MOONCAKE_SOURCE.
 *   upstream_measure [WORKING_SET [MIN_OPS]]   (pin it: taskset -c CPU) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shmbench/clock.h"
#include "shmbench/rng.h"
#include "shmbench/stats.h"
#include "shmbench/upstream.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int one_size(size_t bytes, uint32_t n, uint64_t rounds)
{
    const size_t range = (size_t)n * bytes + (bytes << 4);
    void *base = mmap(NULL, range, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void **addr = calloc(n, sizeof(*addr));
    size_t *size = calloc(n, sizeof(*size));
    uint64_t *order = calloc(n, sizeof(*order));
    double *ns[2] = {calloc(rounds, sizeof(double)), calloc(rounds, sizeof(double))};
    shmb_upstream_offset_t *a = NULL;
    int ret = base == MAP_FAILED || !addr || !size || !order || !ns[0] || !ns[1] ? -ENOMEM : 0;
    if (!ret)
        ret = shmb_upstream_offset_create(base, range, n, &a);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 42 ^ bytes);
    for (uint64_t r = 0; !ret && r < rounds; r++) {
        uint64_t t0 = shmb_clock_now_ns();
        for (uint32_t i = 0; i < n && !ret; i++)
            ret = shmb_upstream_offset_alloc(a, i, bytes, &addr[i]);
        uint64_t t1 = shmb_clock_now_ns();
        for (uint32_t i = 0; i < n; i++)
            size[i] = bytes;
        /* Verified every round (outside the timing): the blocks are the handles', in range and disjoint. */
        if (!ret)
            ret = shmb_upstream_offset_check(a, addr, size, n);
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        shmb_rng_shuffle(&rng, order, n);
        uint64_t t2 = shmb_clock_now_ns();
        for (uint32_t i = 0; i < n && !ret; i++)
            ret = shmb_upstream_offset_free(a, (uint32_t)order[i]);
        uint64_t t3 = shmb_clock_now_ns();
        memset(addr, 0, n * sizeof(*addr));
        ns[0][r] = (double)(t1 - t0) / n;
        ns[1][r] = (double)(t3 - t2) / n;
    }
    if (!ret) {
        static const char *step[2] = {"allocate", "free"};
        for (int k = 0; k < 2; k++) {
            qsort(ns[k], rounds, sizeof(double), cmp_double);
            printf("offset_allocator %-8s %7zu KB  median %6.1f ns  p10 %6.1f  p90 %6.1f  (%llu rounds of %u)\n",
                   step[k], bytes / 1024, shmb_stats_percentile(ns[k], rounds, 50),
                   shmb_stats_percentile(ns[k], rounds, 10), shmb_stats_percentile(ns[k], rounds, 90),
                   (unsigned long long)rounds, n);
        }
    }
    shmb_upstream_offset_destroy(a);
    if (base != MAP_FAILED)
        munmap(base, range);
    free(addr), free(size), free(order), free(ns[0]), free(ns[1]);
    return ret;
}

/* TENT at `buffers` registered buffers of 1 MiB: ns per request. */
static int tent_one(uint32_t buffers, uint32_t per_submit, uint64_t requests)
{
    enum { SLICE = 1024, BYTES = 4096 };
    const size_t buffer_bytes = (size_t)1 << 20;
    const uint64_t slices = (requests + SLICE - 1) / SLICE;
    shmb_upstream_tent_t *t = NULL;
    uint32_t *buf = calloc(SLICE, sizeof(*buf));
    uint64_t *off = calloc(SLICE, sizeof(*off));
    double *ns = calloc(slices, sizeof(double));
    int ret = buf && off && ns ? shmb_upstream_tent_create(buffers, buffer_bytes, BYTES, &t) : -ENOMEM;
    /* Every buffer once, checked: the first request maps it (the relocation's
     * miss path, set-up), so the timed ones take the hit path, as a running
     * engine's do. */
    for (uint32_t b = 0; !ret && b < buffers; b++) {
        uint64_t o = (uint64_t)(b % 16) * BYTES;
        void *landed = NULL;
        ret = shmb_upstream_tent_submit(t, &b, &o, 1, BYTES, &landed);
        if (!ret)
            ret = shmb_upstream_tent_check(t, b, o, landed);
    }
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 7 + buffers);
    for (uint64_t s = 0; !ret && s < slices; s++) {
        for (uint32_t i = 0; i < SLICE; i++) {
            buf[i] = (uint32_t)(shmb_rng_next(&rng) % buffers);
            off[i] = (shmb_rng_next(&rng) % (buffer_bytes / BYTES)) * BYTES;
        }
        uint64_t t0 = shmb_clock_now_ns();
        for (uint32_t i = 0; i < SLICE && !ret; i += per_submit)
            ret = shmb_upstream_tent_submit(t, buf + i, off + i, per_submit, BYTES, NULL);
        ns[s] = (double)(shmb_clock_now_ns() - t0) / SLICE;
    }
    /* Relocation alone, once per buffer drawn (its hit path: each buffer mapped and checked first, as above). */
    double *rel = per_submit == 1 ? calloc(slices, sizeof(double)) : NULL;
    for (uint32_t b = 0; !ret && rel && b < buffers; b++) {
        uint64_t o = (uint64_t)(b % 16) * BYTES;
        void *local = NULL;
        ret = shmb_upstream_tent_relocate(t, b, o, BYTES, &local);
        if (!ret)
            ret = shmb_upstream_tent_check(t, b, o, local);
    }
    for (uint64_t s = 0; !ret && rel && s < slices; s++) {
        for (uint32_t i = 0; i < SLICE; i++) {
            buf[i] = (uint32_t)(shmb_rng_next(&rng) % buffers);
            off[i] = (shmb_rng_next(&rng) % (buffer_bytes / BYTES)) * BYTES;
        }
        uintptr_t sum = 0;
        uint64_t t0 = shmb_clock_now_ns();
        for (uint32_t i = 0; i < SLICE && !ret; i++) {
            void *local = NULL;
            ret = shmb_upstream_tent_relocate(t, buf[i], off[i], BYTES, &local);
            sum += (uintptr_t)local;
        }
        rel[s] = (double)(shmb_clock_now_ns() - t0) / SLICE;
        shmb_escape(&sum);
    }
    if (!ret && rel) {
        qsort(rel, slices, sizeof(double), cmp_double);
        printf("tent relocate    %4u buffers:                median %7.1f ns per request  p10 %7.1f  p90 %7.1f\n",
               buffers, shmb_stats_percentile(rel, slices, 50), shmb_stats_percentile(rel, slices, 10),
               shmb_stats_percentile(rel, slices, 90));
    }
    free(rel);
    if (!ret) {
        qsort(ns, slices, sizeof(double), cmp_double);
        printf("tent submit path %4u buffers, %2u per submit: median %7.1f ns per request  p10 %7.1f  p90 %7.1f  "
               "(%llu slices of %d)\n",
               buffers, per_submit, shmb_stats_percentile(ns, slices, 50), shmb_stats_percentile(ns, slices, 10),
               shmb_stats_percentile(ns, slices, 90), (unsigned long long)slices, SLICE);
    }
    shmb_upstream_tent_destroy(t);
    free(buf), free(off), free(ns);
    return ret;
}

int main(int argc, char **argv)
{
    const uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2048;
    const uint64_t min_ops = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
    if (n == 0 || min_ops == 0) {
        fprintf(stderr, "usage: upstream_measure [WORKING_SET [MIN_OPS]]\n");
        return 2;
    }
    printf("upstream Mooncake %s\n", shmb_upstream_commit());
    static const size_t sizes[] = {4096, 65536, 1 << 20};
    for (size_t k = 0; k < 3; k++) {
        int ret = one_size(sizes[k], n, (min_ops + n - 1) / n);
        if (ret) {
            fprintf(stderr, "upstream_measure: %zu KB: %s\n", sizes[k] / 1024, strerror(-ret));
            return 1;
        }
    }
    if (!shmb_upstream_tent_available())
        return 0;
    static const uint32_t counts[] = {10, 100, 1000};
    for (size_t k = 0; k < 3; k++)
        for (uint32_t per = 1; per <= 32; per += 31) {
            int ret = tent_one(counts[k], per, min_ops / 4);
            if (ret) {
                fprintf(stderr, "upstream_measure: TENT at %u buffers: %s\n", counts[k], strerror(-ret));
                return 1;
            }
        }
    return 0;
}
