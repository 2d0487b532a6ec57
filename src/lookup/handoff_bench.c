/* The hand-off rows (shmbench/handoff_bench.h): the lender's side here, the
 * link and the borrower in models/ (handoff_link.c, handoff_peer.c). */
#include "base/runner_internal.h"
#include "models/handoff_internal.h"
#include "shmbench/handoff_bench.h"

#include "shmbench/channel.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/segment.h"
#include "shmbench/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP 256 /* untimed hand-offs first: the borrower's first touch of each page is not a hand-off */

typedef struct run {
    const shmb_handoff_bench_config_t *cfg;
    size_t bytes, batch;
    shmb_handoff_link_t link; /* the lender, and the borrower process or the one in this process */
    shmb_samples_t samples;
} run_t;

/* One batch of the runner: `count` fresh objects (1 with a peer),
 * constructed untimed (before), handed off timed (give), each dropped and
 * the lender's frees checked untimed (after). */
typedef struct batch {
    run_t *r;
    int f;
    shmb_handoff_object_t *objs;
    int failed; /* the hand-offs failed: their why stands, the frees are not checked */
} batch_t;

static int construct(void *ctx, uint64_t count)
{
    batch_t *b = ctx;
    memset(b->objs, 0, count * sizeof(*b->objs));
    int ret = 0;
    for (uint64_t i = 0; i < count && ret == 0; i++)
        ret = shmb_handoff_link_construct(&b->r->link, b->f, b->r->bytes, &b->objs[i]);
    return ret;
}

static int give(void *ctx, uint64_t count)
{
    batch_t *b = ctx;
    int ret = 0;
    for (uint64_t i = 0; i < count && ret == 0; i++)
        ret = shmb_handoff_link_give(&b->r->link, b->f, &b->objs[i], b->r->bytes, 0, 0);
    b->failed = ret < 0;
    return ret;
}

static int drop(void *ctx, uint64_t count)
{
    batch_t *b = ctx;
    for (uint64_t i = 0; i < count; i++)
        shmb_handoff_link_drop(b->f, &b->objs[i]);
    return b->failed ? 0 : shmb_handoff_link_check_freed(&b->r->link, b->f);
}

/* Untimed hand-offs first, then batches until count hand-offs are timed and
 * min_time_ms spent in them; *done: the hand-offs timed. */
static int measure(run_t *r, int f, uint64_t *done)
{
    const uint64_t n = r->link.peer.pid > 0 ? 1 : r->batch;
    batch_t b = {r, f, malloc(n * sizeof(*b.objs)), 0};
    if (!b.objs)
        return shmb_error_record("malloc", ENOMEM, NULL);
    shmb_samples_t warm = {0};
    const shmb_runner_plan_t warmup = {.ops = n, .batches = 0, .budget_ns = 0,
                                       .min_batches = (WARMUP + n - 1) / n, .before = construct, .after = drop};
    const shmb_runner_plan_t plan = {.ops = n, .batches = 0, .budget_ns = (uint64_t)(r->cfg->min_time_ms * 1e6),
                                     .min_batches = (r->cfg->count + n - 1) / n, .before = construct, .after = drop};
    *done = 0;
    int ret = shmb_runner_run(&warmup, give, &b, &warm, NULL);
    if (ret == 0)
        ret = shmb_runner_run(&plan, give, &b, &r->samples, done);
    if (ret == -ENOMEM)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    shmb_stats_release(&warm);
    free(b.objs);
    return ret;
}

/* ---- rows and the run ---- */

/* mooncake's translation p50 at the same count, or 0. */
static double mooncake_p50(const shmb_handoff_bench_config_t *cfg, const shmb_rows_t *rows)
{
    const shmb_row_t *base = shmb_rows_find(rows, "mooncake", "", cfg->segments, cfg->repetition);
    if (!base || base->iterations == 0)
        base = shmb_rows_find(rows, "mooncake", "latency", cfg->segments, cfg->repetition);
    return base && base->iterations ? base->ns.p50 : 0;
}

static shmb_row_t make_row(const shmb_handoff_bench_config_t *cfg, int f, const char *step)
{
    shmb_row_t row = shmb_row_make(cfg->system_rows ? "" : handoff_flavour_name(f), "segments", cfg->segments,
                                   cfg->repetition);
    snprintf(row.step, sizeof(row.step), "%s", step);
    return row;
}

/* The flavour's rows: the hand-off, and SHM-jemalloc's pool lends (an
 * unmeasured row for SHM-classic with system_rows). */
static int push_rows(run_t *r, int f, uint64_t done, shmb_rows_t *rows)
{
    const shmb_handoff_bench_config_t *cfg = r->cfg;
    shmb_row_t row = make_row(cfg, f, SHMB_HANDOFF_STEP);
    row.iterations = done;
    const char *how = r->link.peer.pid <= 0           ? "no crossing"
                      : f == HANDOFF_JEMALLOC ? "2 msgs crossed"
                                              : "blob + ack crossed";
    snprintf(row.note, sizeof(row.note), "verified %llu/%llu, %s", (unsigned long long)done,
             (unsigned long long)done, how);
    const double base = cfg->system_rows || r->link.peer.pid > 0 ? 0 : mooncake_p50(cfg, rows);
    int ret = shmb_rows_push_samples(rows, &row, r->samples.v, r->samples.n);
    if (ret == 0 && base > 0)
        rows->v[rows->n - 1].speedup = base / rows->v[rows->n - 1].ns.p50;
    row = make_row(cfg, f, SHMB_HANDOFF_POOL_STEP);
    if (ret < 0 || (f == HANDOFF_CLASSIC && !cfg->system_rows))
        return ret;
    if (f == HANDOFF_CLASSIC)
        return shmb_rows_push(rows, &row);
    row.iterations = r->link.pool_lends.n;
    snprintf(row.note, sizeof(row.note), "lend round trip per pool, %s",
             r->link.peer.pid <= 0 ? "no crossing" : "crossed");
    return shmb_rows_push_samples(rows, &row, r->link.pool_lends.v, r->link.pool_lends.n);
}

/* One flavour: its lender (SHM-classic's pool with room for a batch),
 * the hand-offs, the rows. */
static int run_flavour(run_t *r, int f, shmb_rows_t *rows)
{
    const size_t pool_bytes = r->batch * (r->bytes + 4096) + (1u << 20);
    int ret = shmb_handoff_link_open(&r->link, f, r->cfg->shm_prefix, pool_bytes, r->bytes);
    uint64_t done = 0;
    if (ret == 0)
        ret = measure(r, f, &done);
    if (ret == 0)
        ret = push_rows(r, f, done, rows);
    shmb_handoff_link_close(&r->link, f, ret < 0);
    shmb_stats_release(&r->samples);
    return ret;
}

size_t shmb_handoff_bench_batch(uint64_t object_kb)
{
    const uint64_t fit = object_kb ? (256ull << 10) / object_kb : SHMB_HANDOFF_BATCH;
    return (size_t)(fit < 16 ? 16 : fit > SHMB_HANDOFF_BATCH ? SHMB_HANDOFF_BATCH : fit);
}

int shmb_handoff_bench_check(const shmb_handoff_bench_config_t *cfg)
{
    int systems = 0;
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        systems += cfg->run_system[s] != 0;
    if (systems == 0 || (cfg->system_rows && systems != 1) || cfg->object_kb == 0 ||
        cfg->object_kb > SHMB_HANDOFF_MAX_OBJECT_KB || cfg->count == 0 || cfg->count > SHMB_HANDOFF_MAX_COUNT ||
        !(cfg->min_time_ms >= 0))
        return -EINVAL;
    return shmb_segment_check_prefix(cfg->shm_prefix);
}

int shmb_handoff_bench_config_from_lookup(const shmb_lookup_config_t *lookup, int enabled,
                                          shmb_handoff_bench_config_t *out)
{
    shmb_handoff_bench_config_t c = {0};
    int flowipc = 0;
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        c.run_system[s] = lookup->run_system[s] && (lookup->system_rows || s != SHMB_SYSTEM_MOONCAKE);
        flowipc = flowipc || (s != SHMB_SYSTEM_MOONCAKE && lookup->run_system[s]);
    }
    if (!enabled || !(flowipc || lookup->system_rows))
        return 0;
    if (lookup->lookup_len_kb > SHMB_HANDOFF_MAX_OBJECT_KB)
        return -EINVAL;
    c.system_rows = lookup->system_rows;
    c.object_kb = lookup->lookup_len_kb;
    c.count = lookup->num_lookups;
    c.min_time_ms = lookup->count_given ? 0 : lookup->min_time_ms; /* a count given is the count */
    c.peer_process = lookup->peer_process;
    c.seed = lookup->seed;
    c.shm_prefix = lookup->shm_prefix;
    c.segments = lookup->num_segments;
    c.repetition = lookup->repetition;
    *out = c;
    return 1;
}

int shmb_handoff_bench_run(const shmb_handoff_bench_config_t *cfg, shmb_rows_t *rows, char *why, size_t why_cap)
{
    int ret = shmb_handoff_bench_check(cfg);
    if (ret < 0)
        return ret;
    run_t r = {.cfg = cfg, .bytes = (size_t)cfg->object_kb << 10};
    shmb_handoff_link_init(&r.link, cfg->seed, why, why_cap);
    r.batch = shmb_handoff_bench_batch(cfg->object_kb);
    const int flowipc = cfg->run_system[HANDOFF_CLASSIC] || cfg->run_system[HANDOFF_JEMALLOC];
    if (cfg->peer_process && flowipc)
        ret = shmb_handoff_link_start_peer(&r.link, cfg->shm_prefix);
    for (int f = 0; f < SHMB_SYSTEMS && ret == 0; f++) {
        if (!cfg->run_system[f])
            continue;
        if (f == HANDOFF_CLASSIC || f == HANDOFF_JEMALLOC) {
            ret = run_flavour(&r, f, rows);
            continue;
        }
        const shmb_row_t handoff = make_row(cfg, f, SHMB_HANDOFF_STEP), pool = make_row(cfg, f, SHMB_HANDOFF_POOL_STEP);
        if (cfg->system_rows && (ret = shmb_rows_push(rows, &handoff)) == 0)
            ret = shmb_rows_push(rows, &pool);
    }
    return shmb_handoff_link_stop_peer(&r.link, ret);
}
