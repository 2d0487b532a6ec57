#include "shmbench/transfer_bench.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/mooncake.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define POISON 0xA5
#define MIN_BATCH_OVERHEADS 100 /* a batch lasts >= 100 timer overheads */
#define MIN_BATCH_NS 2000.0
#define XLATE_BATCH 1000   /* translations timed alone, per batch */
#define XLATE_BATCHES 101  /* batches; their median is the figure */
#define PEER_CHUNK (SHMB_TRANSFER_PEER_DATA_BYTES / sizeof(double)) /* samples per OP_SAMPLES reply */

/* The commands of the peer (shmb_transfer_bench_peer_start). */
enum {
    OP_ATTACH = 1, /* name, arg0 = 0 (src) or 1 (dst), arg1 = bytes: attach and touch */
    OP_SETUP,      /* the owner's config in the data area: team and translation; results: ns bits, wrong */
    OP_COPY,       /* arg0 = method, arg1 = bytes, arg2 = 1: timed (else one transfer);
                    * results: transfers, samples, translations that missed dst */
    OP_SAMPLES,    /* arg0 = first: samples from there into the data area; result: how many */
    OP_COLD,       /* name, arg0 = method, arg1 = bytes: attach a fresh segment, time its first write;
                    * result: ns */
    OP_DETACH,     /* everything OP_ATTACH and OP_SETUP made is undone */
};

/* dst seen through a system's per-request path: dst is buffer (or pool)
 * `index` of `n`, the others are the peer's further registrations. */
typedef struct xlate {
    int system;                 /* -1: none */
    uint64_t index;
    uint64_t peer;              /* dst's address in the peer's space (mooncake) */
    shmb_mooncake_t *mooncake;
    shmb_fipc_repo_t *repo;
    double ns;                  /* one translation, timed alone: median of batch means */
    uint64_t wrong;             /* translations that did not give dst */
} xlate_t;

typedef struct run {
    const shmb_transfer_config_t *cfg;
    shmb_segment_t src, dst;
    xlate_t x;
    shmb_copy_team_t *team;
    shmb_samples_t samples; /* of the size and method being measured */
    int peer_holds;         /* the owner's peer may hold attachments and a team: detach it */
    char *why;
    size_t why_cap;
} run_t;

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

static int check(run_t *r, shmb_copy_method_t m, const void *dst, uint64_t size, const char *when)
{
    size_t bad;
    if (!shmb_copy_verify(dst, (size_t)size, &bad))
        return 0;
    snprintf(r->why, r->why_cap, "%s copy of %llu bytes (%s): first differing byte at offset %zu",
             shmb_copy_method_name(m), (unsigned long long)size, when, bad);
    return -EPROTO;
}

static void *translate(const run_t *r, uint64_t size)
{
    void *out = NULL;
    switch (r->x.system) {
    case SHMB_LOOKUP_MOONCAKE:
        shmb_mooncake_relocate(r->x.mooncake, SHMB_LOOKUP_MOONCAKE_TARGET_ID, r->x.peer, size, &out);
        return out;
    case SHMB_LOOKUP_FLOWIPC_CLASSIC:
        return shmb_fipc_classic_to_address(r->dst.addr, r->dst.size, 0, size);
    default:
        return shmb_fipc_repo_to_address(r->x.repo, (uint32_t)r->x.index, 0, size);
    }
}

/* -EPROTO, with the reason in why, once any translation of dst missed it. */
static int check_translations(run_t *r)
{
    if (r->x.wrong == 0)
        return 0;
    snprintf(r->why, r->why_cap, "%s: %llu translations of dst did not give its address",
             shmb_lookup_system_name((shmb_lookup_system_t)r->x.system), (unsigned long long)r->x.wrong);
    return -EPROTO;
}

/* count transfers of size bytes into dst; with a system, each translates
 * its destination first, and one that does not land on dst is not copied
 * but counted. */
static void transfer(run_t *r, shmb_copy_fn fn, void *dst, uint64_t size, uint64_t count)
{
    if (r->x.system < 0) {
        shmb_copy_batch(r->team, fn, dst, r->src.addr, (size_t)size, count);
        return;
    }
    for (uint64_t i = 0; i < count; i++) {
        void *d = translate(r, size);
        if (d == dst)
            shmb_copy_batch(r->team, fn, d, r->src.addr, (size_t)size, 1);
        else
            r->x.wrong++;
    }
}

static int attach_dst(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    run_t *r = ctx;
    if (index != r->x.index || strcmp(shm_path, r->dst.name) != 0 || length != r->dst.size)
        return shmb_error_record("shm_open", ENOENT, shm_path);
    *local = r->dst.addr;
    return 0;
}

/* The system's view of the peer: num_segments registrations of dst's size,
 * dst the middle one; the others are never used, so they need no SHM. */
static int xlate_setup(run_t *r)
{
    const uint64_t n = r->cfg->num_segments, size = r->dst.size;
    const uint64_t slot = (size + 4095) / 4096 * 4096;
    r->x.index = n / 2;
    r->x.peer = SHMB_LOOKUP_PEER_START + r->x.index * slot;
    if (r->x.system == SHMB_LOOKUP_FLOWIPC_CLASSIC)
        return 0;
    if (r->x.system == SHMB_LOOKUP_FLOWIPC_JEMALLOC) {
        int ret = shmb_fipc_repo_create(&r->x.repo);
        for (uint64_t i = 0; i < n && ret == 0; i++)
            ret = shmb_fipc_repo_insert(r->x.repo, (uint32_t)i,
                                        i == r->x.index ? r->dst.addr : (void *)(uintptr_t)(SHMB_LOOKUP_PEER_START + i * slot),
                                        (size_t)size);
        return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
    }
    shmb_mooncake_buffer_t *b = calloc((size_t)n, sizeof(*b));
    if (!b)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < n; i++) {
        b[i].addr = SHMB_LOOKUP_PEER_START + i * slot;
        b[i].length = size;
        b[i].shm_path = i == r->x.index ? r->dst.name : "/peer_buffer_not_used";
    }
    const shmb_mooncake_ops_t ops = {attach_dst, NULL, r};
    int ret = shmb_mooncake_create(b, (size_t)n, SHMB_LOOKUP_MOONCAKE_TARGET_ID, SHMB_LOOKUP_MOONCAKE_OTHER_SEGMENTS, &ops,
                                   &r->x.mooncake);
    free(b);
    return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
}

/* One translation alone, after the first (which attaches, for mooncake): the
 * median of XLATE_BATCHES batch means, so that a preemption does not decide
 * it. Every translated address that is not dst's counts in x.wrong. */
static void xlate_time(run_t *r)
{
    const uint64_t want = (uint64_t)(uintptr_t)r->dst.addr;
    r->x.wrong += (uint64_t)(uintptr_t)translate(r, 1) != want;
    double ns[XLATE_BATCHES];
    for (int b = 0; b < XLATE_BATCHES; b++) {
        uint64_t sum = 0;
        uint64_t t0 = shmb_clock_now_ns();
        for (int i = 0; i < XLATE_BATCH; i++)
            sum += (uint64_t)(uintptr_t)translate(r, 1);
        uint64_t t1 = shmb_clock_now_ns();
        r->x.wrong += sum != XLATE_BATCH * want;
        ns[b] = (double)(t1 - t0) / XLATE_BATCH;
    }
    shmb_stats_t s;
    shmb_stats_compute(ns, XLATE_BATCHES, &s);
    r->x.ns = s.p50;
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

static int append(run_t *r, double ns)
{
    if (shmb_stats_append(&r->samples, ns) < 0)
        return shmb_error_record("malloc", ENOMEM, NULL);
    return 0;
}

static int push(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size, const char *step,
                uint64_t transfers)
{
    shmb_row_t row = shmb_row_make(shmb_copy_method_name(m), "size_kb", size / 1024, r->cfg->repetition);
    snprintf(row.step, sizeof(row.step), "%s", step);
    row.threads = r->cfg->threads;
    row.iterations = transfers;
    snprintf(row.note, sizeof(row.note), "%s", shmb_copy_kernel_variant(m));
    int ret = shmb_rows_push_samples(rows, &row, r->samples.v, r->samples.n);
    if (ret == 0 && r->x.system >= 0)
        snprintf(rows->v[rows->n - 1].note, sizeof(row.note), "translate %.3g ns = %.3g%%", r->x.ns,
                 100.0 * r->x.ns / rows->v[rows->n - 1].ns.p50);
    if (ret == 0) {
        shmb_row_t *pushed = &rows->v[rows->n - 1];
        pushed->bytes_per_second = (double)size * 1e9 / pushed->ns.p50;
        pushed->items_per_second = 1e9 / pushed->ns.p50;
    }
    return ret;
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
        if ((ret = append(r, (double)(t1 - t0) / (double)count)) < 0)
            return ret;
        *done += count;
        spent += t1 - t0;
    }
    return 0;
}

/* In the process that copies: one transfer (timed = 0), the one checked
 * before timing, or the timed transfers (timed = 1). */
static int local_step(run_t *r, shmb_copy_method_t m, uint64_t size, int timed, uint64_t *done)
{
    if (timed)
        return timed_transfers(r, m, size, done);
    transfer(r, shmb_copy_kernel(m), r->dst.addr, size, 1);
    *done = 1;
    return 0;
}

static int peer_call(const run_t *r, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, const char *name,
                     uint64_t result[SHMB_PEER_RESULTS])
{
    return shmb_peer_command(r->cfg->peer, op, a0, a1, a2, 0, name, result);
}

/* local_step run by the peer: its samples come back in chunks of the data
 * area, and its count of missed translations. */
static int peer_step(run_t *r, shmb_copy_method_t m, uint64_t size, int timed, uint64_t *done)
{
    uint64_t res[SHMB_PEER_RESULTS];
    int ret = peer_call(r, OP_COPY, (uint64_t)m, size, (uint64_t)timed, NULL, res);
    if (ret < 0)
        return ret;
    *done = res[0];
    r->x.wrong = res[2];
    r->samples.n = 0;
    while (r->samples.n < res[1]) {
        uint64_t got[SHMB_PEER_RESULTS];
        if ((ret = peer_call(r, OP_SAMPLES, r->samples.n, 0, 0, NULL, got)) < 0)
            return ret;
        if (got[0] == 0 || got[0] > PEER_CHUNK || got[0] > res[1] - r->samples.n)
            return shmb_error_record("peer samples", EPROTO, NULL);
        const double *v = r->cfg->peer->data;
        for (uint64_t i = 0; i < got[0]; i++)
            if ((ret = append(r, v[i])) < 0)
                return ret;
    }
    return 0;
}

/* Warm rows: dst poisoned, one transfer checked, the timed transfers, then
 * (with verify, or a peer: its copies are checked here, across processes)
 * dst poisoned before them and checked after. */
static int hot(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size)
{
    int (*step)(run_t *, shmb_copy_method_t, uint64_t, int, uint64_t *) = r->cfg->peer ? peer_step : local_step;
    const int verify_after = r->cfg->verify || r->cfg->peer;
    uint64_t done;
    memset(r->dst.addr, POISON, (size_t)size);
    int ret = step(r, m, size, 0, &done);
    if (ret == 0)
        ret = check_translations(r); /* a missed translation copied nothing */
    if (ret == 0)
        ret = check(r, m, r->dst.addr, size, "before timing");
    if (ret < 0)
        return ret;
    if (verify_after)
        memset(r->dst.addr, POISON, (size_t)size);
    if ((ret = step(r, m, size, 1, &done)) < 0)
        return ret;
    if (verify_after && (ret = check(r, m, r->dst.addr, size, "after timing")) < 0)
        return ret;
    if ((ret = check_translations(r)) < 0)
        return ret;
    return push(r, rows, m, size, "", done);
}

/* The pages a fresh segment holds before its first write (after = 0) or
 * after it: none before, all after, else the cold row would not be what it
 * says (the page allocation inside the timed copy). The check after shows
 * that this file system counts pages at all. */
static int check_allocated(run_t *r, const shmb_segment_t *fresh, int after)
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

/* The timed first write of size bytes of src into fresh pages at dst, in
 * the process that copies; its time into *ns. */
static int first_write(run_t *r, shmb_copy_method_t m, void *dst, uint64_t size, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_copy_first_write(r->team, shmb_copy_kernel(m), dst, r->src.addr, (size_t)size);
    *ns = shmb_clock_now_ns() - t0;
    return ret;
}

/* Each transfer into a segment created for it as Mooncake's
 * createSharedMemory creates one (shm_open + ftruncate + mmap, nothing
 * reserved), so the first write's tmpfs page allocation and page faults are
 * timed; guarded against a /dev/shm that fills up meanwhile (-ENOSPC). With
 * a peer, the peer attaches the fresh segment by name and writes it first. */
static int cold(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size)
{
    const uint64_t budget = (uint64_t)(r->cfg->time_per_size_ms * 1e6);
    uint64_t spent = 0;
    int ret = 0;
    r->samples.n = 0;
    while (ret == 0 && r->samples.n < r->cfg->num_transfers && (r->samples.n == 0 || spent < budget)) {
        shmb_segment_t fresh;
        if ((ret = shmb_segment_create(&fresh, r->cfg->shm_prefix, (size_t)size, NULL, NULL)) < 0)
            break;
        ret = shmb_segment_map(&fresh, NULL);
        if (ret == 0)
            ret = check_allocated(r, &fresh, 0);
        if (ret == 0) {
            uint64_t ns = 0, res[SHMB_PEER_RESULTS];
            if (!r->cfg->peer)
                ret = first_write(r, m, fresh.addr, size, &ns);
            else if ((ret = peer_call(r, OP_COLD, (uint64_t)m, size, 0, fresh.name, res)) == 0)
                ns = res[0];
            spent += ns;
            if (ret == 0)
                ret = append(r, (double)ns);
            if (ret == 0)
                ret = check_allocated(r, &fresh, 1);
            if (ret == 0 && (r->samples.n == 1 || r->cfg->verify))
                ret = check(r, m, fresh.addr, size, "cold");
        }
        int r2 = shmb_segment_destroy(&fresh, NULL);
        ret = ret < 0 ? ret : r2;
    }
    return ret < 0 ? ret : push(r, rows, m, size, "cold", r->samples.n);
}

/* The copying side's team and view of the system: in this process, or in
 * the peer. */
static int start_copier(run_t *r)
{
    int ret = 0;
    if (r->cfg->threads > 1 && (ret = shmb_copy_team_start(&r->team, r->cfg->threads, r->cfg->cpu)) < 0)
        return ret; /* recorded by the team: pthread_create or sched_setaffinity */
    if (r->x.system >= 0 && (ret = xlate_setup(r)) == 0)
        xlate_time(r);
    return ret;
}

static void stop_copier(run_t *r)
{
    shmb_copy_team_stop(r->team);
    shmb_stats_release(&r->samples);
    shmb_mooncake_destroy(r->x.mooncake);
    shmb_fipc_repo_destroy(r->x.repo);
    r->team = NULL;
    r->x.mooncake = NULL;
    r->x.repo = NULL;
}

/* The peer attaches src and dst by name and starts its copier with our
 * config (sent in the data area); its one-translation time and missed
 * translations come back. */
static int setup_peer(run_t *r, uint64_t max)
{
    uint64_t res[SHMB_PEER_RESULTS];
    r->peer_holds = 1;
    int ret = peer_call(r, OP_ATTACH, 0, max, 0, r->src.name, res);
    if (ret == 0)
        ret = peer_call(r, OP_ATTACH, 1, max, 0, r->dst.name, res);
    if (ret < 0)
        return ret;
    memcpy(r->cfg->peer->data, r->cfg, sizeof(*r->cfg));
    if ((ret = peer_call(r, OP_SETUP, 0, 0, 0, NULL, res)) < 0)
        return ret;
    memcpy(&r->x.ns, &res[0], sizeof(r->x.ns));
    r->x.wrong = res[1];
    return 0;
}

static int setup(run_t *r, uint64_t max)
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
    ret = r->cfg->peer ? setup_peer(r, max) : start_copier(r);
    return ret < 0 ? ret : check_translations(r);
}

int shmb_transfer_bench_run(const shmb_transfer_config_t *cfg, shmb_rows_t *rows, char *why,
                            size_t why_cap)
{
    uint64_t sizes[SHMB_TRANSFER_MAX_SIZES];
    int nsizes = shmb_transfer_bench_sizes(cfg, sizes, SHMB_TRANSFER_MAX_SIZES);
    if (nsizes < 0 || cfg->num_transfers == 0 || cfg->threads < 1 ||
        cfg->threads > SHMB_TRANSFER_MAX_THREADS ||
        (cfg->translate && ((unsigned)cfg->system >= SHMB_LOOKUP_SYSTEMS || cfg->cold || cfg->num_segments == 0 || cfg->num_segments > UINT32_MAX)))
        return -EINVAL;
    for (int m = 0; m < SHMB_COPY_METHODS; m++)
        if (cfg->run[m] && !shmb_copy_kernel((shmb_copy_method_t)m))
            return -ENOTSUP;

    run_t r;
    memset(&r, 0, sizeof(r));
    r.cfg = cfg;
    r.why = why;
    r.why_cap = why_cap;
    r.src.fd = r.dst.fd = -1;
    r.x.system = cfg->translate ? (int)cfg->system : -1;
    const size_t first = rows->n;
    int ret = setup(&r, sizes[nsizes - 1]);
    for (int i = 0; i < nsizes && ret == 0; i++) {
        for (int m = 0; m < SHMB_COPY_METHODS && ret == 0; m++) {
            if (!cfg->run[m])
                continue;
            ret = hot(&r, rows, (shmb_copy_method_t)m, sizes[i]);
            if (ret == 0 && cfg->cold)
                ret = cold(&r, rows, (shmb_copy_method_t)m, sizes[i]);
        }
    }
    if (r.peer_holds) {
        int rd = peer_call(&r, OP_DETACH, 0, 0, 0, NULL, NULL);
        ret = ret < 0 ? ret : rd;
    }
    stop_copier(&r);
    for (size_t i = first; ret == 0 && i < rows->n; i++) {
        shmb_row_t *row = &rows->v[i];
        /* against the warm memcpy of the same size, cold rows too */
        const shmb_row_t *base = shmb_rows_find(rows, "memcpy", "", row->arg, row->repetition);
        if (base)
            row->speedup = row->bytes_per_second / base->bytes_per_second;
    }
    int r1 = r.dst.fd >= 0 ? shmb_segment_destroy(&r.dst, NULL) : 0;
    int r2 = r.src.fd >= 0 ? shmb_segment_destroy(&r.src, NULL) : 0;
    return ret < 0 ? ret : r1 < 0 ? r1 : r2;
}

/* ---- the peer (shmb_transfer_bench_peer_start) ---- */

typedef struct peer_side {
    shmb_transfer_config_t cfg; /* the owner's, as OP_SETUP sent it */
    run_t r;                    /* r.cfg is &cfg once set up */
    char why[8];                /* the owner writes the reasons */
} peer_side_t;

static void peer_reset(peer_side_t *p)
{
    memset(&p->r, 0, sizeof(p->r));
    p->r.src.fd = p->r.dst.fd = -1;
    p->r.src.slot = p->r.dst.slot = -1;
    p->r.x.system = -1;
    p->r.why = p->why;
    p->r.why_cap = sizeof(p->why);
}

/* Attaches the owner's segment `name` as an unrelated process would:
 * shm_open(O_RDWR), an fstat size check, mmap; the descriptor is closed once
 * mapped. Not registered: the peer never unlinks the owner's names. */
static int attach(shmb_segment_t *seg, const char *name, uint64_t size)
{
    snprintf(seg->name, sizeof(seg->name), "%s", name);
    seg->size = (size_t)size;
    seg->fd = shmb_segment_open_existing(name, size);
    if (seg->fd < 0) {
        int ret = seg->fd;
        seg->fd = -1;
        return ret;
    }
    int ret = shmb_segment_map(seg, NULL);
    int rc = shmb_segment_close(seg, NULL);
    return ret < 0 ? ret : rc;
}

/* Reads one byte in every page of [addr, addr + bytes): the peer's first
 * touch of src, whose pattern must stay. */
static void touch_read(const void *addr, size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const volatile unsigned char *p = addr;
    for (size_t off = 0; off < bytes; off += page)
        (void)p[off];
}

static int peer_attach(run_t *r, const shmb_peer_cmd_t *cmd)
{
    shmb_segment_t *seg = cmd->arg[0] ? &r->dst : &r->src;
    if (cmd->arg[0] > 1 || seg->addr || cmd->arg[1] == 0)
        return -EINVAL;
    int ret = attach(seg, cmd->name, cmd->arg[1]);
    if (ret == 0 && seg == &r->dst)
        shmb_segment_touch(seg->addr, seg->size);
    else if (ret == 0)
        touch_read(seg->addr, seg->size);
    return ret;
}

static int peer_setup(peer_side_t *p, const void *data, size_t data_bytes, uint64_t result[SHMB_PEER_RESULTS])
{
    run_t *r = &p->r;
    if (r->cfg || !r->src.addr || !r->dst.addr || data_bytes < sizeof(p->cfg))
        return -EINVAL;
    memcpy(&p->cfg, data, sizeof(p->cfg));
    p->cfg.shm_prefix = NULL;
    p->cfg.peer = NULL;
    if (p->cfg.threads < 1 || p->cfg.threads > SHMB_TRANSFER_MAX_THREADS || p->cfg.num_transfers == 0 ||
        (p->cfg.translate && ((unsigned)p->cfg.system >= SHMB_LOOKUP_SYSTEMS || p->cfg.num_segments == 0 ||
                              p->cfg.num_segments > UINT32_MAX)))
        return -EINVAL;
    r->cfg = &p->cfg;
    r->x.system = p->cfg.translate ? (int)p->cfg.system : -1;
    int ret = start_copier(r);
    memcpy(&result[0], &r->x.ns, sizeof(r->x.ns));
    result[1] = r->x.wrong;
    return ret;
}

static int peer_copy(run_t *r, const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS])
{
    const uint64_t m = cmd->arg[0], size = cmd->arg[1], timed = cmd->arg[2];
    if (!r->cfg || m >= SHMB_COPY_METHODS || !shmb_copy_kernel((shmb_copy_method_t)m) || size == 0 ||
        size > r->src.size || size > r->dst.size || timed > 1)
        return -EINVAL;
    uint64_t done = 0;
    int ret = local_step(r, (shmb_copy_method_t)m, size, (int)timed, &done);
    result[0] = done;
    result[1] = timed ? r->samples.n : 0;
    result[2] = r->x.wrong;
    return ret;
}

/* A fresh segment the owner just created, attached by name (not touched)
 * and written first here, timed as in this process. */
static int peer_cold(run_t *r, const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS])
{
    const uint64_t m = cmd->arg[0], size = cmd->arg[1];
    if (!r->cfg || m >= SHMB_COPY_METHODS || !shmb_copy_kernel((shmb_copy_method_t)m) || size == 0 ||
        size > r->src.size)
        return -EINVAL;
    shmb_segment_t fresh = {.fd = -1, .slot = -1};
    int ret = attach(&fresh, cmd->name, size);
    if (ret == 0)
        ret = first_write(r, (shmb_copy_method_t)m, fresh.addr, size, &result[0]);
    int rc = fresh.addr ? shmb_segment_unmap(&fresh, NULL) : 0;
    return ret < 0 ? ret : rc;
}

static int peer_samples(const run_t *r, uint64_t first, void *data, size_t data_bytes,
                        uint64_t result[SHMB_PEER_RESULTS])
{
    if (first >= r->samples.n)
        return -EINVAL;
    size_t n = r->samples.n - (size_t)first;
    if (n > data_bytes / sizeof(double))
        n = data_bytes / sizeof(double);
    memcpy(data, r->samples.v + first, n * sizeof(double));
    result[0] = n;
    return 0;
}

static int peer_detach(peer_side_t *p)
{
    stop_copier(&p->r);
    int ret = 0;
    shmb_segment_t *segs[2] = {&p->r.src, &p->r.dst};
    for (int i = 0; i < 2; i++) {
        int rc = segs[i]->addr ? shmb_segment_unmap(segs[i], NULL) : 0;
        ret = ret < 0 ? ret : rc;
    }
    peer_reset(p);
    return ret;
}

/* The peer's handler: it holds at most one run's src, dst, team and
 * translation at a time, in ctx (its own copy of the owner's calloc). */
static int peer_handle(void *ctx, const shmb_peer_cmd_t *cmd, void *data, size_t data_bytes,
                       uint64_t result[SHMB_PEER_RESULTS])
{
    peer_side_t *p = ctx;
    switch (cmd->op) {
    case OP_ATTACH: return peer_attach(&p->r, cmd);
    case OP_SETUP: return peer_setup(p, data, data_bytes, result);
    case OP_COPY: return peer_copy(&p->r, cmd, result);
    case OP_SAMPLES: return peer_samples(&p->r, cmd->arg[0], data, data_bytes, result);
    case OP_COLD: return peer_cold(&p->r, cmd, result);
    case OP_DETACH: return peer_detach(p);
    default: return -EINVAL;
    }
}

int shmb_transfer_bench_peer_start(shmb_peer_t *peer, const char *prefix)
{
    peer_side_t *side = calloc(1, sizeof(*side));
    if (!side)
        return -ENOMEM;
    peer_reset(side);
    int ret = shmb_peer_start(peer, prefix, SHMB_TRANSFER_PEER_DATA_BYTES, peer_handle, side);
    free(side); /* the peer has its own copy */
    return ret;
}
