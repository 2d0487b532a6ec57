/*
 * transfer_bench: the transfer driver's run and rows (the contract is in
 * shmbench/transfer_bench.h; the peer's side in transfer_peer.c).
 *
 * src and dst are SHM segments of the largest size, reserved with
 * posix_fallocate (their first write is not timed: a full /dev/shm is
 * reported at set-up, not as SIGBUS mid-copy), src filled with a
 * position-dependent pattern, both touched before timing. At each size and
 * method: dst poisoned, one untimed transfer whose result is verified (no
 * method is timed unless it copies right), then exactly num_transfers
 * transfers in batches as even as possible, each at least as long as 100
 * timer overheads (so the timer is under 1% of it; with fewer transfers than
 * that, one shorter batch), unless time_per_size_ms runs out first (at least
 * one batch is always timed). Every transfer copies src[0, size) to
 * dst[0, size): small sizes stay in the caches, as they do for perf bench
 * mem memcpy.
 *
 * With a system, each transfer first translates its destination through
 * that system's per-request path, as a request does, then copies: mooncake's
 * relocate over num_segments registered buffers (dst among them, mapped on
 * the untimed first translation), flowipc_classic's base + offset,
 * flowipc_jemalloc's to_address over num_segments pools. One translation
 * alone is timed too (the median of batches), for the row's note.
 *
 * Cold rows: each transfer writes a fresh segment created as Mooncake's
 * createSharedMemory does (shm_open + ftruncate + mmap, nothing reserved),
 * timed one by one. The segment must hold no page before the copy and all
 * after (fstat st_blocks), else -EPROTO. The copy is guarded
 * (shmb_copy_first_write): a /dev/shm that fills up during it gives -ENOSPC,
 * never a SIGBUS; the caller's up-front space check makes that rare.
 *
 * With a peer, this process still creates, reserves, fills, poisons and
 * verifies every buffer; the copy steps (shmb_transfer_bench_copy and
 * shmb_transfer_bench_first_write) run in the peer instead
 * (shmb_transfer_peer_*), and dst is also verified after the timed ones.
 */
#include "transfer_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POISON 0xA5
#define MIN_BATCH_OVERHEADS 100 /* a batch lasts >= 100 timer overheads */
#define MIN_BATCH_NS 2000.0
#define TRANSLATION_BATCH 1000  /* translations timed alone, per batch */
#define TRANSLATION_BATCHES 101 /* batches; their median is the figure */

typedef shmb_transfer_run_t run_t;

int shmb_transfer_bench_sizes(const shmb_transfer_config_t *cfg, uint64_t *sizes, size_t cap)
{
    uint64_t first = cfg->transfer_size_kb, last_kb = cfg->max_transfer_size_kb;
    if (first == 0 || last_kb == 0 || last_kb > SHMB_TRANSFER_MAX_KB || first > last_kb)
        return -EINVAL;
    size_t n = 0;
    for (uint64_t kb = first; kb < last_kb; kb *= 2) {
        if (n + 1 >= cap)
            return -EINVAL;
        sizes[n++] = kb * 1024;
    }
    sizes[n++] = last_kb * 1024;
    return (int)n;
}

int shmb_transfer_bench_shm_bytes(const shmb_transfer_config_t *cfg, uint64_t *bytes)
{
    if (cfg->max_transfer_size_kb > SHMB_TRANSFER_MAX_KB)
        return -EOVERFLOW;
    uint64_t max = cfg->max_transfer_size_kb << 10;
    *bytes = max * (cfg->cold ? 3 : 2);
    if (cfg->peer) /* the control segment: a head of at most a page, then the data area */
        *bytes += (uint64_t)sysconf(_SC_PAGESIZE) + SHMB_TRANSFER_PEER_DATA_BYTES;
    return 0;
}

int shmb_transfer_bench_config_check(const shmb_transfer_config_t *cfg)
{
    uint64_t sizes[SHMB_TRANSFER_MAX_SIZES];
    if (shmb_transfer_bench_sizes(cfg, sizes, SHMB_TRANSFER_MAX_SIZES) < 0 || cfg->num_transfers == 0 ||
        cfg->threads < 1 || cfg->threads > SHMB_TRANSFER_MAX_THREADS)
        return -EINVAL;
    if (cfg->translate && ((unsigned)cfg->system >= SHMB_LOOKUP_SYSTEMS || cfg->cold || cfg->num_segments == 0 ||
                           cfg->num_segments > UINT32_MAX))
        return -EINVAL;
    return 0;
}

void shmb_transfer_bench_run_init(run_t *r, const shmb_transfer_config_t *cfg, char *why, size_t why_cap)
{
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    r->why = why;
    r->why_cap = why_cap;
    r->src.fd = r->dst.fd = -1;
    r->src.slot = r->dst.slot = -1;
    r->translation.system = cfg && cfg->translate ? (int)cfg->system : -1;
}

static int verify_copy(run_t *r, shmb_copy_method_t m, const void *dst, uint64_t size, const char *when)
{
    size_t bad;
    if (!shmb_copy_verify(dst, (size_t)size, &bad))
        return 0;
    snprintf(r->why, r->why_cap, "%s copy of %llu bytes (%s): first differing byte at offset %zu",
             shmb_copy_method_name(m), (unsigned long long)size, when, bad);
    return -EPROTO;
}

/* dst for a transfer of size bytes, as the system's per-request path gives it. */
static void *translated_dst(const run_t *r, uint64_t size)
{
    const shmb_transfer_translation_t *t = &r->translation;
    void *out = NULL;
    switch (t->system) {
    case SHMB_LOOKUP_MOONCAKE:
        shmb_mooncake_relocate(t->mooncake, SHMB_LOOKUP_MOONCAKE_TARGET_ID, t->remote_addr, size, &out);
        return out;
    case SHMB_LOOKUP_FLOWIPC_CLASSIC:
        return shmb_fipc_classic_to_address(r->dst.addr, r->dst.size, 0, size);
    default:
        return shmb_fipc_repo_to_address(t->repo, (uint32_t)t->index, 0, size);
    }
}

/* -EPROTO, with the reason in why, once any translation of dst missed it. */
static int verify_translations(run_t *r)
{
    if (r->translation.missed == 0)
        return 0;
    snprintf(r->why, r->why_cap, "%s: %llu translations of dst did not give its address",
             shmb_lookup_system_name((shmb_lookup_system_t)r->translation.system),
             (unsigned long long)r->translation.missed);
    return -EPROTO;
}

/* count transfers of size bytes into dst; with a system, each translates
 * its destination first, and one that does not land on dst is not copied
 * but counted. */
static void transfer(run_t *r, shmb_copy_fn fn, void *dst, uint64_t size, uint64_t count)
{
    if (r->translation.system < 0) {
        shmb_copy_batch(r->crew, fn, dst, r->src.addr, (size_t)size, count);
        return;
    }
    for (uint64_t i = 0; i < count; i++) {
        void *d = translated_dst(r, size);
        if (d == dst)
            shmb_copy_batch(r->crew, fn, d, r->src.addr, (size_t)size, 1);
        else
            r->translation.missed++;
    }
}

/* Mooncake's attach of a remote buffer: dst is the only one it may ask for. */
static int attach_dst(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    run_t *r = ctx;
    if (index != r->translation.index || strcmp(shm_path, r->dst.name) != 0 || length != r->dst.size)
        return shmb_error_record("shm_open", ENOENT, shm_path);
    *local = r->dst.addr;
    return 0;
}

/* The system's view of the remote side: num_segments registrations of dst's
 * size, dst the middle one; the others are never used, so they need no SHM. */
static int translation_setup(run_t *r)
{
    shmb_transfer_translation_t *t = &r->translation;
    const uint64_t n = r->cfg->num_segments, size = r->dst.size;
    const uint64_t slot = (size + 4095) / 4096 * 4096;
    t->index = n / 2;
    t->remote_addr = SHMB_LOOKUP_PEER_START + t->index * slot;
    if (t->system == SHMB_LOOKUP_FLOWIPC_CLASSIC)
        return 0;
    if (t->system == SHMB_LOOKUP_FLOWIPC_JEMALLOC) {
        int ret = shmb_fipc_repo_create(&t->repo);
        for (uint64_t i = 0; i < n && ret == 0; i++)
            ret = shmb_fipc_repo_insert(t->repo, (uint32_t)i,
                                        i == t->index ? r->dst.addr : (void *)(uintptr_t)(SHMB_LOOKUP_PEER_START + i * slot),
                                        (size_t)size);
        return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
    }
    shmb_mooncake_buffer_t *b = calloc((size_t)n, sizeof(*b));
    if (!b)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < n; i++) {
        b[i].addr = SHMB_LOOKUP_PEER_START + i * slot;
        b[i].length = size;
        b[i].shm_path = i == t->index ? r->dst.name : "/peer_buffer_not_used";
    }
    const shmb_mooncake_ops_t ops = {attach_dst, NULL, r};
    int ret = shmb_mooncake_create(b, (size_t)n, SHMB_LOOKUP_MOONCAKE_TARGET_ID, SHMB_LOOKUP_MOONCAKE_OTHER_SEGMENTS, &ops,
                                   &t->mooncake);
    free(b);
    return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
}

/* One translation alone, after the first (which attaches, for mooncake): the
 * median of TRANSLATION_BATCHES batch means, so that a preemption does not
 * decide it. Every translated address that is not dst's counts as missed. */
static void translation_time(run_t *r)
{
    const uint64_t want = (uint64_t)(uintptr_t)r->dst.addr;
    r->translation.missed += (uint64_t)(uintptr_t)translated_dst(r, 1) != want;
    double ns[TRANSLATION_BATCHES];
    for (int b = 0; b < TRANSLATION_BATCHES; b++) {
        uint64_t sum = 0;
        uint64_t t0 = shmb_clock_now_ns();
        for (int i = 0; i < TRANSLATION_BATCH; i++)
            sum += (uint64_t)(uintptr_t)translated_dst(r, 1);
        uint64_t t1 = shmb_clock_now_ns();
        r->translation.missed += sum != TRANSLATION_BATCH * want;
        ns[b] = (double)(t1 - t0) / TRANSLATION_BATCH;
    }
    shmb_stats_t s;
    shmb_stats_compute(ns, TRANSLATION_BATCHES, &s);
    r->translation.ns = s.p50;
}

/* How many transfers make a batch that dwarfs the timer. */
static uint64_t batch_size(run_t *r, shmb_copy_fn fn, uint64_t size)
{
    double min_ns = r->cfg->timer_overhead_ns * MIN_BATCH_OVERHEADS;
    if (min_ns < MIN_BATCH_NS)
        min_ns = MIN_BATCH_NS;
    for (uint64_t count = 1;; count *= 2) {
        uint64_t t0 = shmb_clock_now_ns();
        transfer(r, fn, r->dst.addr, size, count);
        if ((double)(shmb_clock_now_ns() - t0) >= min_ns || count >= (1u << 20))
            return count;
    }
}

int shmb_transfer_bench_add_sample(run_t *r, double ns)
{
    if (shmb_stats_append(&r->samples, ns) < 0)
        return shmb_error_record("malloc", ENOMEM, NULL);
    return 0;
}

/* The row of r->samples: rates from the median; with a system, the note
 * gives one translation's time and its share of the median transfer. */
static int push_row(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size, const char *step,
                    uint64_t transfers)
{
    shmb_row_t row = shmb_row_make(shmb_copy_method_name(m), "size_kb", size / 1024, r->cfg->repetition);
    snprintf(row.step, sizeof(row.step), "%s", step);
    row.threads = r->cfg->threads;
    row.iterations = transfers;
    snprintf(row.note, sizeof(row.note), "%s", shmb_copy_kernel_variant(m));
    int ret = shmb_rows_push_samples(rows, &row, r->samples.v, r->samples.n);
    if (ret < 0)
        return ret;
    shmb_row_t *pushed = &rows->v[rows->n - 1];
    if (r->translation.system >= 0)
        snprintf(pushed->note, sizeof(pushed->note), "translate %.3g ns = %.3g%%", r->translation.ns,
                 100.0 * r->translation.ns / pushed->ns.p50);
    pushed->bytes_per_second = (double)size * 1e9 / pushed->ns.p50;
    pushed->items_per_second = 1e9 / pushed->ns.p50;
    return 0;
}

/* num_transfers exactly, in batches as even as can be, each at least
 * min_batch long (unless num_transfers is fewer: then one batch), until the
 * budget runs out; their times into r->samples, their count into *done. */
static int timed_transfers(run_t *r, shmb_copy_method_t m, uint64_t size, uint64_t *done)
{
    shmb_copy_fn fn = shmb_copy_kernel(m);
    const uint64_t num = r->cfg->num_transfers, min_batch = batch_size(r, fn, size);
    const uint64_t batches = num / min_batch ? num / min_batch : 1;
    const uint64_t budget = (uint64_t)(r->cfg->time_per_size_ms * 1e6);
    uint64_t spent = 0;
    int ret;
    *done = 0;
    r->samples.n = 0;
    for (uint64_t b = 0; b < batches && (b == 0 || spent < budget); b++) {
        const uint64_t count = num / batches + (b < num % batches);
        uint64_t t0 = shmb_clock_now_ns();
        transfer(r, fn, r->dst.addr, size, count);
        uint64_t t1 = shmb_clock_now_ns();
        if ((ret = shmb_transfer_bench_add_sample(r, (double)(t1 - t0) / (double)count)) < 0)
            return ret;
        *done += count;
        spent += t1 - t0;
    }
    return 0;
}

int shmb_transfer_bench_copy(run_t *r, shmb_copy_method_t m, uint64_t size, int timed, uint64_t *done)
{
    if (timed)
        return timed_transfers(r, m, size, done);
    transfer(r, shmb_copy_kernel(m), r->dst.addr, size, 1);
    *done = 1;
    return 0;
}

/* Warm rows: dst poisoned, one transfer verified, the timed transfers, then
 * (with verify, or a peer: its copies are verified here, across processes)
 * dst poisoned before them and verified after. */
static int measure_warm(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size)
{
    int (*copy)(run_t *, shmb_copy_method_t, uint64_t, int, uint64_t *) =
        r->cfg->peer ? shmb_transfer_peer_copy : shmb_transfer_bench_copy;
    const int verify_after = r->cfg->verify || r->cfg->peer;
    uint64_t done;
    memset(r->dst.addr, POISON, (size_t)size);
    int ret = copy(r, m, size, 0, &done);
    if (ret == 0)
        ret = verify_translations(r); /* a missed translation copied nothing */
    if (ret == 0)
        ret = verify_copy(r, m, r->dst.addr, size, "before timing");
    if (ret < 0)
        return ret;
    if (verify_after)
        memset(r->dst.addr, POISON, (size_t)size);
    if ((ret = copy(r, m, size, 1, &done)) < 0)
        return ret;
    if (verify_after && (ret = verify_copy(r, m, r->dst.addr, size, "after timing")) < 0)
        return ret;
    if ((ret = verify_translations(r)) < 0)
        return ret;
    return push_row(r, rows, m, size, "", done);
}

/* The pages a fresh segment holds before its first write (after = 0) or
 * after it: none before, all after, else the cold row would not be what it
 * says (the page allocation inside the timed copy). The check after shows
 * that this file system counts pages at all. */
static int check_pages(run_t *r, const shmb_segment_t *fresh, int after)
{
    uint64_t bytes;
    int ret = shmb_segment_allocated(fresh, &bytes);
    if (ret < 0 || (after ? bytes >= fresh->size : bytes == 0))
        return ret;
    snprintf(r->why, r->why_cap, "cold: a fresh segment of %zu bytes holds %llu bytes of pages %s its "
             "first write (expected %s)", fresh->size, (unsigned long long)bytes, after ? "after" : "before",
             after ? "all" : "none");
    return -EPROTO;
}

int shmb_transfer_bench_first_write(run_t *r, shmb_copy_method_t m, void *dst, uint64_t size, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_copy_first_write(r->crew, shmb_copy_kernel(m), dst, r->src.addr, (size_t)size);
    *ns = shmb_clock_now_ns() - t0;
    return ret;
}

/* One cold transfer into `fresh`, here or in the peer: pages checked before
 * and after, the time a sample, the bytes verified on the first (or with
 * verify, every) transfer. */
static int cold_transfer(run_t *r, shmb_copy_method_t m, shmb_segment_t *fresh, uint64_t size, uint64_t *ns)
{
    int ret = check_pages(r, fresh, 0);
    if (ret == 0)
        ret = r->cfg->peer ? shmb_transfer_peer_first_write(r, m, fresh->name, size, ns)
                           : shmb_transfer_bench_first_write(r, m, fresh->addr, size, ns);
    if (ret == 0)
        ret = shmb_transfer_bench_add_sample(r, (double)*ns);
    if (ret == 0)
        ret = check_pages(r, fresh, 1);
    if (ret == 0 && (r->samples.n == 1 || r->cfg->verify))
        ret = verify_copy(r, m, fresh->addr, size, "cold");
    return ret;
}

/* Cold rows: each transfer into a segment created for it (shm_open +
 * ftruncate + mmap, nothing reserved), timed one by one until
 * num_transfers or the budget. */
static int measure_cold(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size)
{
    const uint64_t budget = (uint64_t)(r->cfg->time_per_size_ms * 1e6);
    uint64_t spent = 0;
    int ret = 0;
    r->samples.n = 0;
    while (ret == 0 && r->samples.n < r->cfg->num_transfers && (r->samples.n == 0 || spent < budget)) {
        shmb_segment_t fresh;
        if ((ret = shmb_segment_create(&fresh, r->cfg->shm_prefix, (size_t)size, NULL, NULL)) < 0)
            break;
        uint64_t ns = 0;
        ret = shmb_segment_map(&fresh, NULL);
        if (ret == 0)
            ret = cold_transfer(r, m, &fresh, size, &ns);
        spent += ns;
        int r2 = shmb_segment_destroy(&fresh, NULL);
        ret = ret < 0 ? ret : r2;
    }
    return ret < 0 ? ret : push_row(r, rows, m, size, "cold", r->samples.n);
}

int shmb_transfer_bench_copier_start(run_t *r)
{
    int ret = 0;
    if (r->cfg->threads > 1 && (ret = shmb_copy_crew_start(&r->crew, r->cfg->threads, r->cfg->cpu)) < 0)
        return ret; /* recorded by the crew: pthread_create or sched_setaffinity */
    if (r->translation.system >= 0 && (ret = translation_setup(r)) == 0)
        translation_time(r);
    return ret;
}

void shmb_transfer_bench_copier_stop(run_t *r)
{
    shmb_copy_crew_stop(r->crew);
    shmb_stats_release(&r->samples);
    shmb_mooncake_destroy(r->translation.mooncake);
    shmb_fipc_repo_destroy(r->translation.repo);
    r->crew = NULL;
    r->translation.mooncake = NULL;
    r->translation.repo = NULL;
}

/* src and dst created, reserved, mapped, src filled and dst poisoned; the
 * copier started here or in the peer. */
static int prepare(run_t *r, uint64_t max)
{
    int ret = shmb_segment_create(&r->src, r->cfg->shm_prefix, (size_t)max, NULL, NULL);
    if (ret < 0)
        return ret;
    ret = shmb_segment_create(&r->dst, r->cfg->shm_prefix, (size_t)max, NULL, NULL);
    if (ret < 0)
        return ret;
    if ((ret = shmb_segment_reserve(&r->src)) < 0 || (ret = shmb_segment_reserve(&r->dst)) < 0 ||
        (ret = shmb_segment_map(&r->src, NULL)) < 0 || (ret = shmb_segment_map(&r->dst, NULL)) < 0)
        return ret;
    shmb_copy_fill_pattern(r->src.addr, (size_t)max);
    memset(r->dst.addr, POISON, (size_t)max);
    ret = r->cfg->peer ? shmb_transfer_peer_attach(r, max) : shmb_transfer_bench_copier_start(r);
    return ret < 0 ? ret : verify_translations(r);
}

/* Each row's speedup against the warm memcpy row of the same size, cold
 * rows' too: what the first write costs against a copy into touched pages. */
static void speedups(shmb_rows_t *rows, size_t first)
{
    for (size_t i = first; i < rows->n; i++) {
        shmb_row_t *row = &rows->v[i];
        const shmb_row_t *base = shmb_rows_find(rows, "memcpy", "", row->arg, row->repetition);
        if (base)
            row->speedup = row->bytes_per_second / base->bytes_per_second;
    }
}

int shmb_transfer_bench_run(const shmb_transfer_config_t *cfg, shmb_rows_t *rows, char *why,
                            size_t why_cap)
{
    uint64_t sizes[SHMB_TRANSFER_MAX_SIZES];
    int nsizes = shmb_transfer_bench_sizes(cfg, sizes, SHMB_TRANSFER_MAX_SIZES);
    if (shmb_transfer_bench_config_check(cfg) < 0)
        return -EINVAL;
    for (int m = 0; m < SHMB_COPY_METHODS; m++)
        if (cfg->run[m] && !shmb_copy_kernel((shmb_copy_method_t)m))
            return -ENOTSUP;

    run_t r;
    shmb_transfer_bench_run_init(&r, cfg, why, why_cap);
    const size_t first = rows->n;
    int ret = prepare(&r, sizes[nsizes - 1]);
    for (int i = 0; i < nsizes && ret == 0; i++) {
        for (int m = 0; m < SHMB_COPY_METHODS && ret == 0; m++) {
            if (!cfg->run[m])
                continue;
            ret = measure_warm(&r, rows, (shmb_copy_method_t)m, sizes[i]);
            if (ret == 0 && cfg->cold)
                ret = measure_cold(&r, rows, (shmb_copy_method_t)m, sizes[i]);
        }
    }
    if (r.peer_holds) {
        int rd = shmb_transfer_peer_detach(&r);
        ret = ret < 0 ? ret : rd;
    }
    shmb_transfer_bench_copier_stop(&r);
    if (ret == 0)
        speedups(rows, first);
    int r1 = r.dst.fd >= 0 ? shmb_segment_destroy(&r.dst, NULL) : 0;
    int r2 = r.src.fd >= 0 ? shmb_segment_destroy(&r.src, NULL) : 0;
    return ret < 0 ? ret : r1 < 0 ? r1 : r2;
}
