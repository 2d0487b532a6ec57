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
 * With a system, the whole request and its parts, per size: the request
 * path both designs keep (TENT's submit path, shmbench/mooncake.h's engine,
 * with no translation and no copy: request_path), the system's translation
 * of dst alone (translate: the paths table's, src/paths_internal.h:
 * mooncake's relocate over num_segments registered buffers, each one
 * attached by a first request at set-up, dst among them; flowipc_classic's base +
 * offset; flowipc_jemalloc's to_address over num_segments pools), the copy
 * alone (each method's row) and the whole request (request: the request
 * path calling that translation and the copy of the first method through
 * its hooks, each step once). The request path is the same code for every
 * system; only the translation differs. Each part is verified before it is
 * timed: the request path's task carries dst's remote address, the
 * translation lands on dst, the request's bytes arrive. Once every size
 * is measured, each part's note gives its share of the request's p50.
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
#include "shmbench/fipc_jemalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIN_BATCH_OVERHEADS 100 /* a batch lasts >= 100 timer overheads */
#define MIN_BATCH_NS 2000.0
#define UNUSED_BUFFER "/peer_buffer_not_used" /* the SHM name of every registration but dst */

typedef shmb_transfer_run_t run_t;

int shmb_transfer_bench_sizes(const shmb_transfer_config_t *cfg, uint64_t *sizes, size_t cap)
{
    uint64_t first = cfg->transfer_size_kb, last_kb = cfg->max_transfer_size_kb;
    if (first == 0 || last_kb == 0 || last_kb > SHMB_TRANSFER_MAX_KB || first > last_kb)
        return -EINVAL;
    size_t n = 0;
    const uint64_t step = cfg->zero_copy ? 4 : 2; /* the zero-copy rows span 4 KB to 256 MB in a few sizes */
    for (uint64_t kb = first; kb < last_kb; kb *= step) {
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
    *bytes = cfg->backing.kind == SHMB_BACKING_TMPFS ? max * (cfg->cold ? 3 : 2) : 0;
    const int jemalloc = cfg->translate && cfg->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    for (size_t i = 0; i < cfg->nsystems; i++) /* each hand-off flavour: a pool or arena, room for two objects */
        *bytes += cfg->systems[i] != SHMB_SYSTEM_MOONCAKE && (cfg->zero_copy || cfg->systems[i] ==
                                                             SHMB_SYSTEM_FLOWIPC_JEMALLOC) ? 2 * max : 0;
    *bytes += jemalloc ? 2 * max : 0;
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
    if (cfg->translate && ((unsigned)cfg->system >= SHMB_SYSTEMS || cfg->cold))
        return -EINVAL;
    if ((cfg->translate || cfg->nsystems) && (cfg->num_segments == 0 || cfg->num_segments > UINT32_MAX))
        return -EINVAL;
    if (cfg->nsystems == 0)
        return cfg->zero_copy ? -EINVAL : 0;
    /* Paired: in this process, warm rows only, the control the baseline again. */
    if (cfg->nsystems < 2 || cfg->nsystems > SHMB_PAIRED_MAX_SYSTEMS || cfg->translate || cfg->cold || cfg->peer ||
        cfg->systems[cfg->nsystems - 1] != cfg->systems[0])
        return -EINVAL;
    for (size_t s = 0; s < cfg->nsystems; s++)
        if ((unsigned)cfg->systems[s] >= SHMB_SYSTEMS)
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

/* The remote address space a registration of size bytes takes. */
static uint64_t slot_bytes(uint64_t size)
{
    return (size + 4095) / 4096 * 4096;
}

int shmb_transfer_bench_verify_translations(run_t *r)
{
    int ret = shmb_transfer_handoff_verify(r);
    if (ret < 0 || r->translation.missed == 0)
        return ret;
    snprintf(r->why, r->why_cap, "%s: %llu translations or requests of dst did not give its address",
             shmb_system_name((shmb_system_t)r->translation.system),
             (unsigned long long)r->translation.missed);
    return -EPROTO;
}

/* The system's translation, as the request path calls it (hooks->translate)
 * and as the translate row times it: the request's keys for every path
 * (mooncake reads addr and len, flowipc_jemalloc dst's pool and offset,
 * flowipc_classic the offset), then the paths table's translation. */
int shmb_transfer_translate_dst(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local)
{
    run_t *r = ctx;
    (void)target_id;
    const shmb_transfer_translation_t *t = &r->translation;
    const uint64_t offset = addr - t->remote_addr;
    const shmb_lookup_request_t request = {.addr = addr, .len = len, .id = (uint32_t)t->index,
                                           .offset = offset, .pool_offset = offset};
    const shmb_path_t *p = &shmb_path_table[t->system];
    void *out = p->translate(p, &t->path, &request);
    if (!out)
        return -EINVAL;
    *local = out;
    return 0;
}

/* The request's copy (hooks->copy), with the method of the row. */
void shmb_transfer_copy_request(void *ctx, void *dst, const void *src, uint64_t len)
{
    run_t *r = ctx;
    shmb_copy_batch(r->crew, r->translation.copy, dst, src, (size_t)len, 1);
}

void shmb_transfer_bench_part(run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size, uint64_t count)
{
    shmb_transfer_translation_t *t = &r->translation;
    if (part == SHMB_TRANSFER_COPY || part == SHMB_TRANSFER_COPY_OUT) {
        shmb_copy_batch(r->crew, fn, r->dst.addr, r->src.addr, (size_t)size, count);
        return;
    }
    if (shmb_transfer_handoff_runs(r, part)) {
        shmb_transfer_handoff_part(r, part, fn, size, count);
        return;
    }
    if (part == SHMB_TRANSFER_ZERO_COPY) /* mooncake's side of it: the whole request */
        part = SHMB_TRANSFER_REQUEST;
    if (part == SHMB_TRANSFER_TRANSLATE) {
        for (uint64_t i = 0; i < count; i++) {
            void *d = NULL;
            t->missed +=
                shmb_transfer_translate_dst(r, SHMB_LOOKUP_MOONCAKE_TARGET_ID, t->remote_addr, size, &d) != 0 ||
                d != r->dst.addr;
        }
        return;
    }
    const shmb_mooncake_hooks_t hooks = {shmb_transfer_translate_dst, shmb_transfer_copy_request, r};
    const int whole = part == SHMB_TRANSFER_REQUEST;
    const shmb_mooncake_request_t request = {SHMB_MOONCAKE_WRITE, r->src.addr, SHMB_LOOKUP_MOONCAKE_TARGET_ID,
                                             t->remote_addr, size};
    void *want = whole ? r->dst.addr : (void *)(uintptr_t)t->remote_addr;
    t->copy = fn;
    for (uint64_t i = 0; i < count; i++) {
        shmb_mooncake_submitted_t out;
        int ret = shmb_mooncake_engine_submit(t->engine, &request, whole ? &hooks : NULL, &out);
        t->missed += ret != 0 || out.target != want || out.buffer_addr != t->buffer_addr ||
                     (whole && out.transferred_bytes != size);
    }
}

/* Mooncake's attach of a remote buffer: dst is mapped where it is; the
 * others, never written, are "mapped" at their remote address (the model
 * keeps the pointer and never dereferences it). */
static int attach_dst(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    run_t *r = ctx;
    const int is_dst = index == r->translation.index;
    if (strcmp(shm_path, is_dst ? r->translation.dst_path : UNUSED_BUFFER) != 0 || length != r->dst.size)
        return shmb_error_record("shm_open", ENOENT, shm_path);
    *local = is_dst ? r->dst.addr : (void *)(uintptr_t)(SHMB_LOOKUP_PEER_START + index * slot_bytes(length));
    return 0;
}

/* Mooncake as a receiver that has served requests into every buffer of the
 * peer: each one attached by a first request, so that TENT's walk of the
 * mapped buffers covers num_segments of them, as the lookup benchmark's
 * does (only dst mapped, the walk would be one entry long). */
static void use_every_buffer(run_t *r, const shmb_lookup_segment_t *segments, size_t n)
{
    const shmb_path_t *p = &shmb_path_table[SHMB_SYSTEM_MOONCAKE];
    for (size_t i = 0; i < n; i++) {
        const shmb_lookup_request_t request = {.addr = segments[i].peer_base, .len = 1};
        r->translation.missed += p->translate(p, &r->translation.path, &request) == NULL;
    }
}

/* The remote side's registrations: num_segments of dst's size, each in a
 * page-aligned slot, dst the middle one; the others are never written, so
 * they need no SHM. */
static int registrations(run_t *r, shmb_lookup_segment_t **segments, const char ***names,
                         shmb_mooncake_buffer_t **buffers)
{
    shmb_transfer_translation_t *t = &r->translation;
    const uint64_t n = r->cfg->num_segments, size = r->dst.size, slot = slot_bytes(size);
    t->index = n / 2;
    t->remote_addr = SHMB_LOOKUP_PEER_START + t->index * slot;
    /* A memfd has no name: Mooncake's memfd segments (kvcache-ai/Mooncake
     * #3952) are opened by peers through /proc/<pid>/fd/<n>. The request
     * path only needs a path to treat dst as SHM; attach_dst checks it. */
    if (r->dst.name[0])
        snprintf(t->dst_path, sizeof(t->dst_path), "%s", r->dst.name);
    else
        snprintf(t->dst_path, sizeof(t->dst_path), "memfd:%s", shmb_backing_name(r->cfg->backing.kind));
    *segments = calloc((size_t)n, sizeof(**segments));
    *names = calloc((size_t)n, sizeof(**names));
    *buffers = calloc((size_t)n, sizeof(**buffers));
    if (!*segments || !*names || !*buffers)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t peer = SHMB_LOOKUP_PEER_START + i * slot;
        (*names)[i] = i == t->index ? t->dst_path : UNUSED_BUFFER;
        (*segments)[i] = (shmb_lookup_segment_t){peer, size, i == t->index ? r->dst.addr : (void *)(uintptr_t)peer};
        (*buffers)[i] = (shmb_mooncake_buffer_t){peer, size, (*names)[i]};
    }
    return 0;
}

/* The pools SHM-jemalloc's arena makes for n blocks of `size` bytes (its
 * extent hooks create them; the blocks are never touched), into *pools. */
static int jemalloc_pools_for(run_t *r, uint64_t n, uint64_t size, size_t *pools)
{
    shmb_fipc_jemalloc_t *j = NULL;
    int ret = shmb_fipc_jemalloc_create_filled(r->cfg->shm_prefix, n, (size_t)size, &j);
    *pools = ret == 0 ? shmb_fipc_jemalloc_pools(j, NULL) : 0;
    const int r2 = shmb_fipc_jemalloc_destroy(j, 1, NULL);
    return ret < 0 ? ret : r2;
}

/* What the request path's engine registers for the peer, per design (the
 * parts of TENT's submit path that scale with registrations, findBuffer's
 * walks, follow it): mooncake its num_segments buffers; a Flow-IPC flavour
 * the pools that hold those num_segments blocks, as a TENT that adopted it
 * would register them (registerLocalMemory per pool): flowipc_classic its
 * one pool, flowipc_jemalloc as many pools as its arena makes for them,
 * each a contiguous run of the slots, in order. *count and t->buffer_addr
 * (the base the request path must find: the registration holding dst)
 * set; *pools (malloc'ed) holds a Flow-IPC flavour's registrations. */
static int engine_buffers(run_t *r, const shmb_mooncake_buffer_t *buffers, shmb_mooncake_buffer_t **pools,
                          const shmb_mooncake_buffer_t **registered, size_t *count)
{
    shmb_transfer_translation_t *t = &r->translation;
    const uint64_t n = r->cfg->num_segments, slot = slot_bytes(r->dst.size);
    *pools = NULL;
    if (t->system == SHMB_SYSTEM_MOONCAKE) {
        t->buffer_addr = t->remote_addr;
        *count = (size_t)n;
        *registered = buffers;
        return 0;
    }
    size_t np = 1;
    int ret = t->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC ? jemalloc_pools_for(r, n, r->dst.size, &np) : 0;
    if (ret < 0)
        return ret;
    np = np == 0 ? 1 : np > n ? (size_t)n : np;
    *pools = calloc(np, sizeof(**pools));
    if (!*pools)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t i = 0; i < np; i++) {
        const uint64_t first = n * i / np, end = n * (i + 1) / np;
        (*pools)[i] = (shmb_mooncake_buffer_t){SHMB_LOOKUP_PEER_START + first * slot, (end - first) * slot,
                                               t->dst_path};
        if (t->index >= first && t->index < end)
            t->buffer_addr = (*pools)[i].addr;
    }
    *count = np;
    *registered = *pools;
    return 0;
}

int shmb_transfer_bench_translation_start(run_t *r)
{
    shmb_transfer_translation_t *t = &r->translation;
    shmb_lookup_segment_t *segments;
    const char **names;
    shmb_mooncake_buffer_t *buffers, *pools = NULL;
    int ret = registrations(r, &segments, &names, &buffers);
    const shmb_path_view_t view = {.segments = segments, .n = (size_t)r->cfg->num_segments, .shm_names = names,
                                   .mooncake_ops = {attach_dst, NULL, r},
                                   .pool_base = r->dst.addr, .pool_bytes = r->dst.size};
    const shmb_path_t *p = &shmb_path_table[t->system];
    if (ret == 0 && (ret = p->setup(p, &t->path, &view)) == 0)
        t->path_set_up = 1;
    size_t count = 0;
    const shmb_mooncake_buffer_t *registered = NULL;
    if (ret == 0)
        ret = engine_buffers(r, buffers, &pools, &registered, &count);
    if (ret == 0)
        ret = shmb_mooncake_engine_create(registered, count, SHMB_LOOKUP_MOONCAKE_TARGET_ID,
                                          SHMB_LOOKUP_MOONCAKE_OTHER_SEGMENTS, r->src.addr, r->src.size,
                                          &t->engine);
    if (ret == -ENOMEM)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0 && t->system == SHMB_SYSTEM_MOONCAKE)
        use_every_buffer(r, segments, view.n);
    if (ret == 0)
        shmb_transfer_bench_part(r, SHMB_TRANSFER_TRANSLATE, NULL, 1, 1);
    free(segments);
    free(names);
    free(buffers);
    free(pools);
    return ret;
}

const char *shmb_transfer_part_name(shmb_transfer_part_t part)
{
    static const char *const names[SHMB_TRANSFER_PARTS] = {
        [SHMB_TRANSFER_REQUEST_PATH] = "request_path",
        [SHMB_TRANSFER_TRANSLATE] = "translate",
        [SHMB_TRANSFER_REQUEST] = "request",
        [SHMB_TRANSFER_ZERO_COPY] = "zero_copy",
        [SHMB_TRANSFER_COPY_OUT] = "copy_out",
    };
    return (unsigned)part < SHMB_TRANSFER_PARTS ? names[part] : NULL;
}

/* The part moves bytes (or makes them the reader's): its row has a rate. */
static int part_copies(shmb_transfer_part_t part)
{
    return part != SHMB_TRANSFER_REQUEST_PATH && part != SHMB_TRANSFER_TRANSLATE;
}

/* The part writes dst, whose bytes are then verified: a hand-off writes an
 * object of its own instead, which the borrower checks. */
static int moves_dst(const run_t *r, shmb_transfer_part_t part)
{
    return part_copies(part) && !shmb_transfer_handoff_runs(r, part);
}

uint64_t shmb_transfer_bench_batch(run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size)
{
    double min_ns = r->cfg->timer_overhead_ns * MIN_BATCH_OVERHEADS;
    if (min_ns < MIN_BATCH_NS)
        min_ns = MIN_BATCH_NS;
    for (uint64_t count = 1;; count *= 2) {
        uint64_t t0 = shmb_clock_now_ns();
        shmb_transfer_bench_part(r, part, fn, size, count);
        if ((double)(shmb_clock_now_ns() - t0) >= min_ns || count >= (1u << 20))
            return count;
    }
}

const char *shmb_transfer_bench_size_label(char *buf, size_t cap, uint64_t bytes, const char *prefix)
{
    const uint64_t kb = bytes / 1024;
    if (kb >= 1024 && kb % 1024 == 0)
        snprintf(buf, cap, "%s%llu MB", prefix, (unsigned long long)(kb / 1024));
    else
        snprintf(buf, cap, "%s%llu KB", prefix, (unsigned long long)kb);
    return buf;
}

int shmb_transfer_bench_add_sample(run_t *r, double ns)
{
    if (shmb_stats_append(&r->samples, ns) < 0)
        return shmb_error_record("malloc", ENOMEM, NULL);
    return 0;
}

/* The row of r->samples: rates from the median (bytes only for the parts
 * that move them); a copy's note names its kernel, the parts' shares come
 * later (shares). */
int shmb_transfer_bench_push_row(run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part, shmb_copy_method_t m,
                                 uint64_t size, const char *step, uint64_t transfers)
{
    const char *variant = part == SHMB_TRANSFER_COPY ? shmb_copy_method_name(m) : shmb_transfer_part_name(part);
    shmb_row_t row = shmb_row_make(variant, "size_kb", size / 1024, r->cfg->repetition);
    snprintf(row.step, sizeof(row.step), "%s", step);
    row.threads = r->cfg->threads;
    row.iterations = transfers;
    if (part == SHMB_TRANSFER_COPY)
        snprintf(row.note, sizeof(row.note), "%s", shmb_copy_kernel_variant(m));
    if (part == SHMB_TRANSFER_COPY_OUT)
        snprintf(row.note, sizeof(row.note), "reader: borrowed object -> own buffer, %s", shmb_copy_method_name(m));
    int ret = shmb_rows_push_samples(rows, &row, r->samples.v, r->samples.n);
    if (ret < 0)
        return ret;
    shmb_row_t *pushed = &rows->v[rows->n - 1];
    if (part_copies(part))
        pushed->bytes_per_second = (double)size * 1e9 / pushed->ns.p50;
    pushed->items_per_second = 1e9 / pushed->ns.p50;
    return 0;
}

/* num_transfers exactly, in batches as even as can be, each at least
 * min_batch long (unless num_transfers is fewer: then one batch), until the
 * budget runs out; their times into r->samples, their count into *done.
 * A part that moves no bytes (a translation takes a nanosecond or two) runs
 * at least SHMB_TRANSFER_MIN_PART_BATCHES full batches, so that its batches
 * dwarf the timer and its percentiles have samples to come from; with a
 * count given, one full batch at least (the count wins over percentiles,
 * never over the timer's resolution). */
static int timed_transfers(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size,
                           uint64_t *done)
{
    shmb_copy_fn fn = shmb_copy_kernel(m);
    const uint64_t min_batch = shmb_transfer_bench_batch(r, part, fn, size);
    uint64_t num = r->cfg->num_transfers;
    const uint64_t least = r->cfg->count_given ? min_batch : min_batch * SHMB_TRANSFER_MIN_PART_BATCHES;
    if (!part_copies(part) && num < least)
        num = least;
    const uint64_t batches = num / min_batch ? num / min_batch : 1;
    const uint64_t budget = (uint64_t)(r->cfg->time_per_size_ms * 1e6);
    uint64_t spent = 0;
    int ret;
    *done = 0;
    r->samples.n = 0;
    for (uint64_t b = 0; b < batches && (b == 0 || spent < budget); b++) {
        const uint64_t count = num / batches + (b < num % batches);
        uint64_t t0 = shmb_clock_now_ns();
        shmb_transfer_bench_part(r, part, fn, size, count);
        uint64_t t1 = shmb_clock_now_ns();
        if ((ret = shmb_transfer_bench_add_sample(r, (double)(t1 - t0) / (double)count)) < 0)
            return ret;
        *done += count;
        spent += t1 - t0;
    }
    return 0;
}

int shmb_transfer_bench_copy(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size, int timed,
                             uint64_t *done)
{
    if ((unsigned)part >= SHMB_TRANSFER_PARTS || (part != SHMB_TRANSFER_COPY && r->translation.system < 0))
        return -EINVAL;
    if (timed)
        return timed_transfers(r, part, m, size, done);
    shmb_transfer_bench_part(r, part, shmb_copy_kernel(m), size, 1);
    *done = 1;
    return 0;
}

/* The part runs in this process: without a peer, and a hand-off always
 * (the writer is this process, the reader the hand-off's borrower process). */
static int here(const run_t *r, shmb_transfer_part_t part)
{
    return !r->cfg->peer || shmb_transfer_handoff_runs(r, part);
}

int shmb_transfer_bench_check(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size)
{
    uint64_t done;
    memset(r->dst.addr, SHMB_TRANSFER_POISON, (size_t)size);
    r->translation.check_payload = 1; /* a hand-off's borrower checks every byte it got */
    int ret = here(r, part) ? shmb_transfer_bench_copy(r, part, m, size, 0, &done)
                            : shmb_transfer_peer_copy(r, part, m, size, 0, &done);
    r->translation.check_payload = 0;
    if (ret == 0)
        ret = shmb_transfer_bench_verify_translations(r); /* a missed translation copied nothing */
    if (ret == 0 && moves_dst(r, part))
        ret = verify_copy(r, m, r->dst.addr, size, "before timing");
    return ret;
}

int shmb_transfer_bench_warm(run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part, shmb_copy_method_t m,
                             uint64_t size)
{
    int (*copy)(run_t *, shmb_transfer_part_t, shmb_copy_method_t, uint64_t, int, uint64_t *) =
        here(r, part) ? shmb_transfer_bench_copy : shmb_transfer_peer_copy;
    const int verify_after = moves_dst(r, part) && (r->cfg->verify || r->cfg->peer);
    uint64_t done;
    int ret = shmb_transfer_bench_check(r, part, m, size);
    if (ret < 0)
        return ret;
    if (verify_after)
        memset(r->dst.addr, SHMB_TRANSFER_POISON, (size_t)size);
    if ((ret = copy(r, part, m, size, 1, &done)) < 0)
        return ret;
    if (verify_after && (ret = verify_copy(r, m, r->dst.addr, size, "after timing")) < 0)
        return ret;
    if ((ret = shmb_transfer_bench_verify_translations(r)) < 0)
        return ret;
    return shmb_transfer_bench_push_row(r, rows, part, m, size, "", done);
}

/* The pages a fresh segment holds before its first write (after = 0) or
 * after it: none before, all after, else the cold row would not be what it
 * says (the page allocation inside the timed copy). The check after shows
 * that this file system counts pages at all. */
static int check_pages(run_t *r, const shmb_segment_t *fresh, uint64_t size, int after)
{
    uint64_t bytes;
    int ret = shmb_segment_allocated(fresh, &bytes);
    if (ret < 0 || (after ? bytes >= size : bytes == 0))
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
    int ret = check_pages(r, fresh, size, 0);
    if (ret == 0)
        ret = r->cfg->peer ? shmb_transfer_peer_first_write(r, m, fresh, size, ns)
                           : shmb_transfer_bench_first_write(r, m, fresh->addr, size, ns);
    if (ret == 0)
        ret = shmb_transfer_bench_add_sample(r, (double)*ns);
    if (ret == 0)
        ret = check_pages(r, fresh, size, 1);
    if (ret == 0 && (r->samples.n == 1 || r->cfg->verify))
        ret = verify_copy(r, m, fresh->addr, size, "cold");
    return ret;
}

/* A buffer of at least bytes on cfg's backing, mapped: tmpfs as
 * Mooncake's createSharedMemory (shm_open + ftruncate + mmap); the others
 * through the backing module (thp advised before any touch). With ready,
 * every page is in place: tmpfs reserved with posix_fallocate before the
 * mapping, the others written once per page, guarded (a full backing is
 * -ENOSPC, never a SIGBUS). On failure nothing is left. */
static int create_buffer(run_t *r, shmb_segment_t *seg, uint64_t bytes, int ready)
{
    shmb_backing_config_t bc = r->cfg->backing;
    bc.shm_prefix = r->cfg->shm_prefix;
    shmb_backing_t b;
    int ret = shmb_backing_create(&b, &bc, bytes, NULL);
    if (ret < 0)
        return ret;
    if (ready && bc.kind == SHMB_BACKING_TMPFS)
        ret = shmb_segment_reserve(&b.seg);
    if (ret == 0)
        ret = shmb_backing_map(&b, 0, NULL);
    if (ret == 0 && ready && bc.kind != SHMB_BACKING_TMPFS)
        ret = shmb_backing_prefault(&b, SHMB_PREFAULT_TOUCH, 1);
    if (ret < 0) {
        shmb_backing_destroy(&b);
        return ret;
    }
    *seg = b.seg;
    return 0;
}

/* Cold rows: each transfer into a buffer created for it (tmpfs: shm_open +
 * ftruncate + mmap; nothing reserved or touched), timed one by one until
 * num_transfers or the budget. */
static int measure_cold(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size)
{
    const uint64_t budget = (uint64_t)(r->cfg->time_per_size_ms * 1e6);
    uint64_t spent = 0;
    int ret = 0;
    r->samples.n = 0;
    while (ret == 0 && r->samples.n < r->cfg->num_transfers && (r->samples.n == 0 || spent < budget)) {
        shmb_segment_t fresh;
        if ((ret = create_buffer(r, &fresh, size, 0)) < 0)
            break;
        uint64_t ns = 0;
        ret = cold_transfer(r, m, &fresh, size, &ns);
        spent += ns;
        int r2 = shmb_segment_destroy(&fresh, NULL);
        ret = ret < 0 ? ret : r2;
    }
    return ret < 0 ? ret : shmb_transfer_bench_push_row(r, rows, SHMB_TRANSFER_COPY, m, size, "cold", r->samples.n);
}

int shmb_transfer_bench_copier_start(run_t *r)
{
    int ret = 0;
    if (r->cfg->threads > 1 && (ret = shmb_copy_crew_start(&r->crew, r->cfg->threads, r->cfg->cpu)) < 0)
        return ret; /* recorded by the crew: pthread_create or sched_setaffinity */
    return r->translation.system >= 0 ? shmb_transfer_bench_translation_start(r) : 0;
}

void shmb_transfer_bench_translation_stop(run_t *r)
{
    shmb_transfer_translation_t *t = &r->translation;
    if (t->path_set_up)
        shmb_path_table[t->system].teardown(&shmb_path_table[t->system], &t->path);
    shmb_mooncake_engine_destroy(t->engine);
    t->path_set_up = 0;
    t->engine = NULL;
}

void shmb_transfer_bench_copier_stop(run_t *r)
{
    shmb_copy_crew_stop(r->crew);
    shmb_stats_release(&r->samples);
    shmb_transfer_bench_translation_stop(r);
    r->crew = NULL;
}

/* src's and dst's residency, summed, read back from the kernel. */
static int granted(const run_t *r, shmb_backing_residency_t *out)
{
    shmb_backing_residency_t sum = {0, 0, 0};
    const shmb_segment_t *segs[2] = {&r->src, &r->dst};
    for (int i = 0; i < 2; i++) {
        shmb_backing_t b = shmb_transfer_bench_backing(r, segs[i]);
        shmb_backing_residency_t one;
        int ret = shmb_backing_residency(&b, &one);
        if (ret < 0)
            return ret;
        sum.resident_bytes += one.resident_bytes;
        sum.huge_bytes += one.huge_bytes;
        sum.allocated_bytes += one.allocated_bytes;
    }
    *out = sum;
    return 0;
}

shmb_backing_t shmb_transfer_bench_backing(const run_t *r, const shmb_segment_t *seg)
{
    shmb_backing_t b;
    memset(&b, 0, sizeof(b));
    b.kind = r->cfg->backing.kind;
    b.seg = *seg;
    b.owner = 1;
    shmb_backing_page_size(&r->cfg->backing, &b.page_size);
    return b;
}

/* src and dst created, reserved (or prefaulted), mapped, src filled and dst
 * poisoned; the copier started here or in the peer. */
int shmb_transfer_bench_prepare(run_t *r, uint64_t max)
{
    int ret = create_buffer(r, &r->src, max, 1);
    if (ret == 0)
        ret = create_buffer(r, &r->dst, max, 1);
    if (ret < 0)
        return ret;
    shmb_copy_fill_pattern(r->src.addr, (size_t)max);
    memset(r->dst.addr, SHMB_TRANSFER_POISON, (size_t)max);
    if (r->cfg->granted && (ret = granted(r, r->cfg->granted)) < 0)
        return ret;
    ret = r->cfg->peer ? shmb_transfer_peer_attach(r, max) : shmb_transfer_bench_copier_start(r);
    return ret < 0 ? ret : shmb_transfer_bench_verify_translations(r);
}

void shmb_transfer_bench_speedups(shmb_rows_t *rows, size_t first)
{
    for (size_t i = first; i < rows->n; i++) {
        shmb_row_t *row = &rows->v[i];
        const shmb_row_t *base = shmb_rows_find(rows, "memcpy", "", row->arg, row->repetition);
        if (base && !row->vs[0])
            row->speedup = row->bytes_per_second / base->bytes_per_second;
    }
}

/* With a system, each part's share of the request's p50 of the same size
 * (the copy: the method the request copied with), and on the request's row
 * that method and what the parts add up to; fixed-point, so that a tiny
 * share never prints in e-notation and the note's shape stays the same. */
static void shares(shmb_rows_t *rows, size_t first, shmb_copy_method_t m, int system)
{
    const char *parts[] = {"request_path", "translate", shmb_copy_method_name(m)};
    for (size_t i = first; i < rows->n; i++) {
        shmb_row_t *req = &rows->v[i];
        if (strcmp(req->variant, "request") != 0)
            continue;
        double sum = 0;
        for (int k = 0; k < 3; k++) {
            shmb_row_t *part = shmb_rows_find(rows, parts[k], "", req->arg, req->repetition);
            if (!part)
                continue;
            sum += part->ns.p50;
            snprintf(part->note, sizeof(part->note), "%.2f%% of request p50", 100.0 * part->ns.p50 / req->ns.p50);
        }
        snprintf(req->note, sizeof(req->note), "copy %s; parts add up to %.1f%%", parts[2],
                 100.0 * sum / req->ns.p50);
        if (system == SHMB_SYSTEM_FLOWIPC_JEMALLOC)
            shmb_transfer_handoff_notes(req, shmb_rows_find(rows, "translate", "", req->arg, req->repetition));
    }
}

/* The rows of one size: with a system, the request path and the
 * translation, then each method's copy (and cold row), then the request
 * copying with the first method. */
static int measure_size(run_t *r, shmb_rows_t *rows, uint64_t size, shmb_copy_method_t first_method)
{
    const int system = r->translation.system >= 0;
    int ret = 0;
    if (system)
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_REQUEST_PATH, first_method, size);
    if (ret == 0 && system)
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_TRANSLATE, first_method, size);
    for (int m = 0; m < SHMB_COPY_METHODS && ret == 0; m++) {
        if (!r->cfg->run[m])
            continue;
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_COPY, (shmb_copy_method_t)m, size);
        if (ret == 0 && r->cfg->cold)
            ret = measure_cold(r, rows, (shmb_copy_method_t)m, size);
    }
    if (ret == 0 && system)
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_REQUEST, first_method, size);
    if (ret == 0 && r->translation.handoff)
        ret = shmb_transfer_handoff_copy_out(r, rows, first_method, size);
    else if (ret == 0 && system) { /* unmeasured: every system's run has the row, so that they pair */
        shmb_row_t row = shmb_row_make(shmb_transfer_part_name(SHMB_TRANSFER_COPY_OUT), "size_kb", size / 1024,
                                       r->cfg->repetition);
        row.threads = r->cfg->threads;
        ret = shmb_rows_push(rows, &row);
    }
    return ret;
}

/* Steps in KB: a size's time grows with it, so the share done is the bytes done. */
void shmb_transfer_progress_plan(shmb_progress_t *progress, const uint64_t *sizes, size_t n)
{
    uint64_t kb = 0;
    for (size_t i = 0; i < n; i++)
        kb += sizes[i] / 1024;
    shmb_progress_plan(progress, kb);
}

void shmb_transfer_progress_size(shmb_progress_t *progress, uint64_t *kb, uint64_t size, const char *prefix)
{
    char label[64];
    shmb_progress_step(progress, *kb, shmb_transfer_bench_size_label(label, sizeof(label), size, prefix));
    *kb += size / 1024;
}

int shmb_transfer_bench_run(const shmb_transfer_config_t *cfg, shmb_rows_t *rows, char *why,
                            size_t why_cap)
{
    uint64_t sizes[SHMB_TRANSFER_MAX_SIZES];
    int nsizes = shmb_transfer_bench_sizes(cfg, sizes, SHMB_TRANSFER_MAX_SIZES);
    if (shmb_transfer_bench_config_check(cfg) < 0)
        return -EINVAL;
    int first_method = -1;
    for (int m = 0; m < SHMB_COPY_METHODS; m++) {
        if (cfg->run[m] && !shmb_copy_kernel((shmb_copy_method_t)m))
            return -ENOTSUP;
        if (cfg->run[m] && first_method < 0)
            first_method = m;
    }
    if (first_method < 0)
        return -EINVAL;
    if (cfg->nsystems)
        return shmb_transfer_bench_paired(cfg, sizes, (size_t)nsizes, (shmb_copy_method_t)first_method, rows, why,
                                          why_cap);

    run_t r;
    shmb_transfer_bench_run_init(&r, cfg, why, why_cap);
    const size_t first = rows->n;
    int ret = shmb_transfer_bench_prepare(&r, sizes[nsizes - 1]);
    if (ret == 0 && r.translation.system == SHMB_SYSTEM_FLOWIPC_JEMALLOC) {
        /* The writer is this process: with a peer, it needs the request path here too. */
        const int flavour[SHMB_SYSTEMS] = {[SHMB_SYSTEM_FLOWIPC_JEMALLOC] = 1};
        if (cfg->peer)
            ret = shmb_transfer_bench_translation_start(&r);
        if (ret == 0)
            ret = shmb_transfer_handoff_open(cfg, flavour, sizes[nsizes - 1], &r.translation.handoff, why,
                                             why_cap);
    }
    uint64_t kb = 0;
    shmb_transfer_progress_plan(cfg->progress, sizes, (size_t)nsizes);
    for (int i = 0; i < nsizes && ret == 0; i++) {
        shmb_transfer_progress_size(cfg->progress, &kb, sizes[i], "");
        ret = measure_size(&r, rows, sizes[i], (shmb_copy_method_t)first_method);
    }
    if (r.peer_holds) {
        int rd = shmb_transfer_peer_detach(&r);
        ret = ret < 0 ? ret : rd;
    }
    shmb_transfer_bench_copier_stop(&r);
    ret = shmb_transfer_handoff_close(r.translation.handoff, ret);
    if (ret == 0)
        shmb_transfer_bench_speedups(rows, first);
    if (ret == 0 && r.translation.system >= 0)
        shares(rows, first, (shmb_copy_method_t)first_method, r.translation.system);
    int r1 = r.dst.fd >= 0 ? shmb_segment_destroy(&r.dst, NULL) : 0;
    int r2 = r.src.fd >= 0 ? shmb_segment_destroy(&r.src, NULL) : 0;
    return ret < 0 ? ret : r1 < 0 ? r1 : r2;
}
