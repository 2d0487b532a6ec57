/* alloc_ready: the time-to-ready rows (shmbench/alloc_ready.h), each first pool verified
 * through a second mapping. */
#include "shmbench/alloc_ready.h"

#include "shmbench/error.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define VERIFY_STRIDE 4096u /* one word per base page: every page of every backing */

uint64_t shmb_alloc_ready_mappings(const shmb_alloc_ready_config_t *cfg)
{
    return 3 + 2 * (uint64_t)(cfg->threads > 1 ? cfg->threads : 0);
}

int shmb_alloc_ready_pool_bytes(const shmb_alloc_ready_config_t *cfg, shmb_backing_kind_t kind, uint64_t *bytes)
{
    shmb_backing_config_t bc = {kind, cfg->shm_prefix, cfg->hugepage_size};
    return shmb_backing_round(&bc, cfg->pool_bytes, bytes);
}

/* The word written at offset off: it differs per page and per pool. */
static uint64_t pattern(uint64_t off, uint64_t seed)
{
    return (off / VERIFY_STRIDE) * 0x9e3779b97f4a7c15ull ^ seed;
}

static void write_pattern(void *dst, const void *src, size_t n)
{
    uint64_t seed = *(const uint64_t *)src;
    for (size_t off = 0; off < n; off += VERIFY_STRIDE)
        *(volatile uint64_t *)((char *)dst + off) = pattern(off, seed);
}

/* Writes the pattern through the pool's mapping (guarded), maps the file a
 * second time and reads it back there. */
static int verify(shmb_backing_t *b, uint64_t seed, char *why, size_t cap)
{
    int ret = shmb_segment_first_write_copy(b->seg.addr, &seed, b->seg.size, write_pattern);
    if (ret < 0)
        return ret;
    const char *second = mmap(NULL, b->seg.size, PROT_READ, MAP_SHARED, b->seg.fd, 0);
    if (second == MAP_FAILED)
        return shmb_error_record("mmap", errno, "the pool's second mapping");
    for (size_t off = 0; off < b->seg.size && ret == 0; off += VERIFY_STRIDE) {
        uint64_t got = *(const volatile uint64_t *)(second + off);
        if (got != pattern(off, seed)) {
            snprintf(why, cap, "%s pool: offset %zu reads %#llx through a second mapping, %#llx was written",
                     shmb_backing_name(b->kind), off, (unsigned long long)got,
                     (unsigned long long)pattern(off, seed));
            ret = -EPROTO;
        }
    }
    munmap((void *)second, b->seg.size);
    return ret;
}

/* The row's note: "<GB/s at the p50> <faults> faults rss <%> huge <%>", the
 * faults and shares of the first pool as the kernel reports them; a pool
 * only mapped (none) has no rate: "mapped only: <faults> faults ...". */
static void note(shmb_row_t *row, const shmb_backing_ready_t *first, shmb_prefault_t how, uint64_t size)
{
    char rate[24] = "mapped only:";
    if (how != SHMB_PREFAULT_NONE && row->ns.p50 > 0)
        snprintf(rate, sizeof(rate), "%.2fGB/s", (double)size / row->ns.p50); /* bytes per ns = GB/s */
    snprintf(row->note, sizeof(row->note), "%s %llu faults rss %.0f%% huge %.0f%%", rate,
             (unsigned long long)first->faults, 100.0 * (double)first->residency.resident_bytes / (double)size,
             100.0 * (double)first->residency.huge_bytes / (double)size);
}

/* One backing x prefault: `iterations` pools, the first verified. */
static int run_row(const shmb_alloc_ready_config_t *cfg, shmb_backing_kind_t kind, shmb_prefault_t how,
                   double *samples, shmb_rows_t *rows, char *why, size_t cap)
{
    shmb_backing_config_t bc = {kind, cfg->shm_prefix, cfg->hugepage_size};
    char variant[32];
    snprintf(variant, sizeof(variant), "ready/%s", shmb_backing_name(kind));
    shmb_row_t row = shmb_row_make(variant, "pool_mb", cfg->pool_bytes >> 20, cfg->repetition);
    snprintf(row.step, sizeof(row.step), "%s", shmb_prefault_name(how));
    /* none and populate are one mmap call: their rows never claim threads */
    row.threads = how == SHMB_PREFAULT_NONE || how == SHMB_PREFAULT_POPULATE ? 1 : cfg->threads;
    uint64_t size = 0;
    shmb_backing_ready_t first;
    memset(&first, 0, sizeof(first));
    for (uint64_t i = 0; i < cfg->iterations; i++) {
        shmb_backing_t b;
        shmb_backing_ready_t r;
        int ret = shmb_backing_ready(&b, &bc, cfg->pool_bytes, how, cfg->threads, &r);
        if (ret < 0)
            return ret;
        if (i == 0) {
            size = b.seg.size;
            first = r;
            ret = verify(&b, (uint64_t)kind << 8 | (uint64_t)how, why, cap);
        }
        int rc = shmb_backing_destroy(&b);
        if (ret == 0)
            ret = rc;
        if (ret < 0)
            return ret;
        samples[i] = (double)r.total_ns;
    }
    row.iterations = cfg->iterations;
    int ret = shmb_rows_push_samples(rows, &row, samples, (size_t)cfg->iterations);
    if (ret == 0) {
        shmb_row_t *pushed = &rows->v[rows->n - 1];
        pushed->bytes_per_second = pushed->ns.mean > 0 ? (double)size * 1e9 / pushed->ns.mean : 0;
        note(pushed, &first, how, size);
    }
    return ret;
}

static int config_ok(const shmb_alloc_ready_config_t *cfg)
{
    return cfg && cfg->pool_bytes > 0 && cfg->threads >= 1 && cfg->threads <= SHMB_BACKING_MAX_THREADS &&
           cfg->iterations >= 1 && cfg->iterations <= SHMB_ALLOC_READY_MAX_ITERATIONS;
}

int shmb_alloc_ready_run(const shmb_alloc_ready_config_t *cfg, shmb_rows_t *rows, char *why, size_t why_cap)
{
    if (!config_ok(cfg) || !rows)
        return -EINVAL;
    double *samples = calloc((size_t)cfg->iterations, sizeof(*samples));
    if (!samples)
        return -ENOMEM;
    int ret = 0;
    uint64_t total = 0, at = 0;
    for (int k = 0; k < SHMB_BACKING_KINDS; k++)
        for (int h = 0; h < SHMB_PREFAULT_KINDS; h++)
            total += cfg->backing[k] && cfg->prefault[h];
    shmb_progress_plan(cfg->progress, total);
    for (int k = 0; k < SHMB_BACKING_KINDS && ret == 0; k++)
        for (int h = 0; h < SHMB_PREFAULT_KINDS && ret == 0 && cfg->backing[k]; h++) {
            if (!cfg->prefault[h])
                continue;
            char label[64];
            snprintf(label, sizeof(label), "ready %s, prefault %s", shmb_backing_name((shmb_backing_kind_t)k),
                     shmb_prefault_name((shmb_prefault_t)h));
            shmb_progress_step(cfg->progress, at++, label);
            ret = run_row(cfg, (shmb_backing_kind_t)k, (shmb_prefault_t)h, samples, rows, why, why_cap);
        }
    free(samples);
    return ret;
}
