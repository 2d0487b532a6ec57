/*
 * handoff_bench: Flow-IPC's object hand-off per object, SHM-classic and
 * SHM-jemalloc (shmbench/handoff_bench.h states the contract): the lender's
 * side in this process (each flavour's pool or arena and its lender
 * session, the objects tagged and handed off, timed), the rows and the run.
 * The borrower's side is handoff_peer.c: called here without a peer, in a
 * forked process with one; handoff_internal.h has the messages between them.
 */
#include "handoff_internal.h"
#include "shmbench/handoff_bench.h"

#include "shmbench/channel.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/segment.h"
#include "shmbench/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t shmb_handoff_bench_wrong_tag;

#define WARMUP 256 /* untimed hand-offs first: the borrower's first touch of each page is not a hand-off */

typedef struct run {
    const shmb_handoff_bench_config_t *cfg;
    size_t bytes, batch;
    shmb_channel_t ch; /* to the borrower process; fd -1 without one */
    pid_t pid;
    shmb_handoff_borrower_t local; /* the borrower without a peer */
    shmb_fipc_classic_t *pool;
    shmb_fipc_classic_arena_t *arena;
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *lender;
    size_t pools_known;
    uint64_t peer_frees; /* SHM-classic: the borrower process's frees, as it acknowledged */
    uint64_t next[SHMB_LOOKUP_SYSTEMS]; /* the lender's next hand-off number, per flavour */
    shmb_samples_t samples, pool_lends;
    char *why;
    size_t why_cap;
} run_t;

static void write_tags(void *addr, size_t bytes, uint64_t tag)
{
    memcpy(addr, &tag, sizeof(tag));
    memcpy((char *)addr + bytes - sizeof(tag), &tag, sizeof(tag));
}

/* ---- messages from the lender ---- */

static int post(run_t *r, unsigned char kind, const void *payload, size_t n)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX];
    msg[0] = kind;
    memcpy(msg + 1, payload, n);
    return shmb_channel_send(&r->ch, msg, n + 1);
}

/* The borrower's reply, which must be of kind want; its payload into out. */
static int await(run_t *r, unsigned char want, void *out, size_t cap, size_t *out_len)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX];
    size_t len = 0;
    int ret = shmb_channel_recv(&r->ch, msg, sizeof(msg), &len);
    if (ret < 0)
        return ret;
    if (msg[0] == HANDOFF_FAIL && len > sizeof(int32_t)) {
        int32_t err;
        memcpy(&err, msg + 1, sizeof(err));
        snprintf(r->why, r->why_cap, "%.*s", (int)(len - 1 - sizeof(err)), (const char *)msg + 1 + sizeof(err));
        return err == EPROTO ? -EPROTO : shmb_error_record("the borrower process", err > 0 ? err : EIO, r->why);
    }
    if (msg[0] != want || len - 1 > cap) {
        snprintf(r->why, r->why_cap, "the borrower process replied with kind 0x%02x, %zu bytes, not 0x%02x", msg[0],
                 len, want);
        return -EPROTO;
    }
    memcpy(out, msg + 1, len - 1);
    *out_len = len - 1;
    return 0;
}

/* A session message (LendArena, LendPool) to the borrower and its Response
 * back to the lender: crossing with a peer, by call without. */
static int session_round_trip(run_t *r, const void *msg, size_t len)
{
    unsigned char reply[SHMB_CHANNEL_MSG_MAX];
    size_t n = 0;
    int ret;
    if (r->pid > 0) {
        ret = post(r, HANDOFF_SESSION, msg, len);
        if (ret == 0)
            ret = await(r, HANDOFF_DONE, reply, sizeof(reply), &n);
    } else {
        ret = shmb_fipc_borrower_receive(r->local.jemalloc, msg, len, reply, sizeof(reply), &n);
    }
    return ret < 0 ? ret : shmb_fipc_lender_on_response(r->lender, reply, n);
}

/* Lends every pool of the arena not lent yet, each round trip timed. */
static int lend_new_pools(run_t *r)
{
    size_t n = shmb_fipc_jemalloc_pools(r->j, NULL);
    if (n == r->pools_known)
        return 0;
    shmb_fipc_pool_t *list = malloc(n * sizeof(*list));
    if (!list)
        return shmb_error_record("malloc", ENOMEM, NULL);
    n = shmb_fipc_jemalloc_pool_list(r->j, list, n);
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        unsigned char msg[SHMB_FIPC_MSG_MAX];
        size_t len = 0;
        const uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_fipc_lender_lend_pool(r->lender, list[i].id, msg, sizeof(msg), &len);
        if (ret == -EEXIST) {
            ret = 0;
            continue;
        }
        if (ret == 0)
            ret = session_round_trip(r, msg, len);
        const uint64_t t1 = shmb_clock_now_ns();
        if (ret == 0 && shmb_stats_append(&r->pool_lends, (double)(t1 - t0)) < 0)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    free(list);
    if (ret == -EREMOTEIO)
        snprintf(r->why, r->why_cap, "flowipc_jemalloc: the borrower refused a pool lent to it");
    r->pools_known = n;
    return ret == -EREMOTEIO ? -EPROTO : ret;
}

/* ---- one flavour's objects and hand-offs ---- */

typedef union object {
    shmb_fipc_object_t j;
    shmb_fipc_classic_object_t c;
} object_t;

/* Object number r->next[f], tagged (the hook writes a wrong tag). */
static int construct(run_t *r, int f, object_t *o)
{
    const uint64_t k = r->next[f]++;
    const uint64_t tag = handoff_tag(r->cfg->seed, f, k) + (shmb_handoff_bench_wrong_tag == k + 1);
    int ret = f == HANDOFF_JEMALLOC ? shmb_fipc_lender_construct(r->lender, r->bytes, &o->j)
                            : shmb_fipc_classic_construct(r->arena, r->bytes, &o->c);
    if (ret < 0)
        return ret;
    write_tags(f == HANDOFF_JEMALLOC ? o->j.addr : o->c.addr, r->bytes, tag);
    return f == HANDOFF_JEMALLOC ? lend_new_pools(r) : 0;
}

/* The lender's reference, if it still holds one. */
static void drop(int f, object_t *o)
{
    unsigned char none[SHMB_FIPC_MSG_MAX];
    size_t len = 0;
    if (f == HANDOFF_JEMALLOC)
        shmb_fipc_object_release(&o->j, none, sizeof(none), &len);
    else
        shmb_fipc_classic_release(&o->c);
}

/* SHM-jemalloc with a peer: lend, the blob out, the lender's reference
 * dropped, the return back, the lender's free. */
static int handoff_jemalloc_peer(run_t *r, object_t *o)
{
    const uint64_t k = r->next[HANDOFF_JEMALLOC] - 1;
    unsigned char blob[SHMB_FIPC_MSG_MAX], msg[SHMB_CHANNEL_MSG_MAX];
    size_t len = 0, n = 0;
    int ret = shmb_fipc_lender_lend(r->lender, &o->j, blob, sizeof(blob), &len);
    if (ret < 0)
        return shmb_handoff_refused(ret, HANDOFF_JEMALLOC, "lend", k, r->why, r->why_cap);
    ret = post(r, HANDOFF_JBLOB, blob, len);
    drop(HANDOFF_JEMALLOC, o);
    if (ret == 0)
        ret = await(r, HANDOFF_RETURN, msg, sizeof(msg), &n);
    if (ret < 0)
        return ret;
    ret = shmb_fipc_lender_on_return(r->lender, msg, n);
    return ret < 0 ? shmb_handoff_refused(ret, HANDOFF_JEMALLOC, "the return", k, r->why, r->why_cap) : 0;
}

/* SHM-classic with a peer: lend, the blob out, the lender's handle
 * dropped, this driver's acknowledgement back (with the borrower's frees). */
static int handoff_classic_peer(run_t *r, object_t *o)
{
    const uint64_t k = r->next[HANDOFF_CLASSIC] - 1;
    unsigned char blob[SHMB_FIPC_CLASSIC_BLOB_BYTES];
    size_t len = 0, n = 0;
    int ret = shmb_fipc_classic_lend(r->arena, &o->c, blob, sizeof(blob), &len);
    if (ret < 0)
        return shmb_handoff_refused(ret, HANDOFF_CLASSIC, "lend", k, r->why, r->why_cap);
    ret = post(r, HANDOFF_CBLOB, blob, len);
    drop(HANDOFF_CLASSIC, o);
    if (ret == 0)
        ret = await(r, HANDOFF_DONE, &r->peer_frees, sizeof(r->peer_frees), &n);
    return ret;
}

/* SHM-jemalloc in one process: the same calls, no message crossing. */
static int batch_jemalloc(run_t *r, object_t *objs, size_t count)
{
    const uint64_t first = r->next[HANDOFF_JEMALLOC] - count;
    for (size_t i = 0; i < count; i++) {
        unsigned char blob[SHMB_FIPC_MSG_MAX], msg[SHMB_FIPC_MSG_MAX];
        size_t len = 0, n = 0;
        int ret = shmb_fipc_lender_lend(r->lender, &objs[i].j, blob, sizeof(blob), &len);
        if (ret < 0)
            return shmb_handoff_refused(ret, HANDOFF_JEMALLOC, "lend", first + i, r->why, r->why_cap);
        drop(HANDOFF_JEMALLOC, &objs[i]);
        ret = shmb_handoff_borrow_jemalloc(&r->local, blob, len, r->bytes, msg, sizeof(msg), &n, r->why, r->why_cap);
        if (ret < 0)
            return ret;
        ret = shmb_fipc_lender_on_return(r->lender, msg, n);
        if (ret < 0)
            return shmb_handoff_refused(ret, HANDOFF_JEMALLOC, "the return", first + i, r->why, r->why_cap);
    }
    return 0;
}

/* SHM-classic in one process. */
static int batch_classic(run_t *r, object_t *objs, size_t count)
{
    const uint64_t first = r->next[HANDOFF_CLASSIC] - count;
    for (size_t i = 0; i < count; i++) {
        unsigned char blob[SHMB_FIPC_CLASSIC_BLOB_BYTES];
        size_t len = 0;
        int ret = shmb_fipc_classic_lend(r->arena, &objs[i].c, blob, sizeof(blob), &len);
        if (ret < 0)
            return shmb_handoff_refused(ret, HANDOFF_CLASSIC, "lend", first + i, r->why, r->why_cap);
        drop(HANDOFF_CLASSIC, &objs[i]);
        ret = shmb_handoff_borrow_classic(&r->local, blob, len, r->bytes, r->why, r->why_cap);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* Every object made so far freed exactly once, none still lent. */
static int check_freed(run_t *r, int f)
{
    uint64_t freed;
    size_t lent = 0;
    if (f == HANDOFF_JEMALLOC) {
        freed = shmb_fipc_lender_frees(r->lender);
        lent = shmb_fipc_lender_lent(r->lender);
    } else {
        freed = shmb_fipc_classic_frees(r->arena) +
                (r->pid > 0 ? r->peer_frees : shmb_fipc_classic_frees(r->local.classic));
    }
    if (freed == r->next[f] && lent == 0)
        return 0;
    snprintf(r->why, r->why_cap, "%s: after %llu hand-offs, %llu objects were freed and %zu are still lent",
             handoff_flavour_name(f), (unsigned long long)r->next[f], (unsigned long long)freed, lent);
    return -EPROTO;
}

/* n hand-offs of fresh objects (1 with a peer): constructed untimed, then
 * handed off timed; ns per hand-off into *ns. */
static int sample(run_t *r, int f, object_t *objs, size_t n, double *ns)
{
    int ret = 0;
    memset(objs, 0, n * sizeof(*objs));
    for (size_t i = 0; i < n && ret == 0; i++)
        ret = construct(r, f, &objs[i]);
    uint64_t t0 = 0, t1 = 0;
    if (ret == 0) {
        t0 = shmb_clock_now_ns();
        if (r->pid > 0)
            ret = f == HANDOFF_JEMALLOC ? handoff_jemalloc_peer(r, &objs[0]) : handoff_classic_peer(r, &objs[0]);
        else
            ret = f == HANDOFF_JEMALLOC ? batch_jemalloc(r, objs, n) : batch_classic(r, objs, n);
        t1 = shmb_clock_now_ns();
    }
    for (size_t i = 0; i < n; i++)
        drop(f, &objs[i]);
    if (ret == 0)
        ret = check_freed(r, f);
    *ns = (double)(t1 - t0) / (double)n;
    return ret;
}

/* Untimed hand-offs first, then samples until count hand-offs and
 * min_time_ms are both reached; *done: the hand-offs timed. */
static int measure(run_t *r, int f, uint64_t *done)
{
    const size_t n = r->pid > 0 ? 1 : r->batch;
    object_t *objs = malloc(n * sizeof(*objs));
    if (!objs)
        return shmb_error_record("malloc", ENOMEM, NULL);
    double ns = 0;
    int ret = 0;
    for (uint64_t k = 0; k < WARMUP && ret == 0; k += n)
        ret = sample(r, f, objs, n, &ns);
    const uint64_t budget = (uint64_t)(r->cfg->min_time_ms * 1e6), start = shmb_clock_now_ns();
    *done = 0;
    while (ret == 0 && (*done < r->cfg->count || shmb_clock_now_ns() - start < budget)) {
        ret = sample(r, f, objs, n, &ns);
        if (ret == 0 && shmb_stats_append(&r->samples, ns) < 0)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
        *done += n;
    }
    free(objs);
    return ret;
}

/* ---- set-up, rows and the run ---- */

/* A model's own step-by-step check refused the hand-off. */
static int verified(run_t *r, int f, int ret)
{
    if (ret != -EFAULT && ret != -EBADMSG && ret != -ESTALE)
        return ret;
    snprintf(r->why, r->why_cap, "%s: the model's step-by-step hand-off check failed: %s", handoff_flavour_name(f),
             strerror(-ret));
    return -EPROTO;
}

/* SHM-classic: the pool (room for a batch), checked, the lender's arena,
 * and the borrower's opened by name. */
static int setup_classic(run_t *r)
{
    const size_t pool_bytes = r->batch * (r->bytes + 4096) + (1u << 20);
    int ret = shmb_fipc_classic_create(r->cfg->shm_prefix, pool_bytes, &r->pool);
    if (ret == 0)
        ret = verified(r, HANDOFF_CLASSIC, shmb_fipc_classic_handoff_verify(r->pool, r->bytes));
    if (ret == 0)
        ret = shmb_fipc_classic_arena_create(r->pool, &r->arena);
    if (ret < 0)
        return ret;
    const char *name = shmb_fipc_classic_name(r->pool);
    if (r->pid <= 0)
        return shmb_fipc_classic_arena_open(name, &r->local.classic);
    unsigned char none[8];
    size_t n = 0;
    ret = post(r, HANDOFF_OPEN, name, strlen(name));
    return ret < 0 ? ret : await(r, HANDOFF_DONE, none, sizeof(none), &n);
}

/* SHM-jemalloc: the arena, checked, the lender's session, the arena lent
 * (untimed) and every pool lent (timed). */
static int setup_jemalloc(run_t *r)
{
    int ret = shmb_fipc_jemalloc_create(r->cfg->shm_prefix, 0, &r->j);
    if (ret == 0)
        ret = verified(r, HANDOFF_JEMALLOC, shmb_fipc_handoff_verify(r->j, r->bytes));
    if (ret == 0)
        ret = shmb_fipc_lender_create(r->j, &r->lender);
    if (ret == 0 && r->pid <= 0)
        ret = shmb_fipc_borrower_create(&r->local.jemalloc);
    unsigned char msg[SHMB_FIPC_MSG_MAX];
    size_t len = 0;
    if (ret == 0)
        ret = shmb_fipc_lender_lend_arena(r->lender, msg, sizeof(msg), &len);
    if (ret == 0)
        ret = session_round_trip(r, msg, len);
    if (ret == -EREMOTEIO) {
        snprintf(r->why, r->why_cap, "flowipc_jemalloc: the borrower refused the arena lent to it");
        ret = -EPROTO;
    }
    return ret == 0 ? lend_new_pools(r) : ret;
}

/* Everything one flavour made, whatever happened. */
static void teardown(run_t *r, int f)
{
    shmb_handoff_borrower_close(&r->local);
    if (f == HANDOFF_JEMALLOC) {
        shmb_fipc_lender_destroy(r->lender);
        shmb_fipc_jemalloc_destroy(r->j, 1, NULL);
    } else {
        shmb_fipc_classic_arena_destroy(r->arena);
        shmb_fipc_classic_destroy(r->pool, 1);
    }
    r->lender = NULL;
    r->j = NULL;
    r->arena = NULL;
    r->pool = NULL;
    r->pools_known = 0;
    shmb_stats_release(&r->samples);
    shmb_stats_release(&r->pool_lends);
}

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
    const char *how = r->pid <= 0 ? "no crossing" : f == HANDOFF_JEMALLOC ? "2 msgs crossed" : "blob + ack crossed";
    snprintf(row.note, sizeof(row.note), "verified %llu/%llu, %s", (unsigned long long)done,
             (unsigned long long)done, how);
    const double base = cfg->system_rows || r->pid > 0 ? 0 : mooncake_p50(cfg, rows);
    int ret = shmb_rows_push_samples(rows, &row, r->samples.v, r->samples.n);
    if (ret == 0 && base > 0)
        rows->v[rows->n - 1].speedup = base / rows->v[rows->n - 1].ns.p50;
    row = make_row(cfg, f, SHMB_HANDOFF_POOL_STEP);
    if (ret < 0 || (f == HANDOFF_CLASSIC && !cfg->system_rows))
        return ret;
    if (f == HANDOFF_CLASSIC)
        return shmb_rows_push(rows, &row);
    row.iterations = r->pool_lends.n;
    snprintf(row.note, sizeof(row.note), "lend round trip per pool, %s", r->pid <= 0 ? "no crossing" : "crossed");
    return shmb_rows_push_samples(rows, &row, r->pool_lends.v, r->pool_lends.n);
}

static int run_flavour(run_t *r, int f, shmb_rows_t *rows)
{
    int ret = f == HANDOFF_JEMALLOC ? setup_jemalloc(r) : setup_classic(r);
    uint64_t done = 0;
    if (ret == 0)
        ret = measure(r, f, &done);
    if (ret == 0)
        ret = push_rows(r, f, done, rows);
    if (ret < 0 && f == HANDOFF_JEMALLOC && r->lender)
        shmb_fipc_lender_disconnect(r->lender);
    teardown(r, f);
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
    for (int s = 0; s < SHMB_LOOKUP_SYSTEMS; s++)
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
    for (int s = 0; s < SHMB_LOOKUP_SYSTEMS; s++) {
        c.run_system[s] = lookup->run_system[s] && (lookup->system_rows || s != SHMB_LOOKUP_MOONCAKE);
        flowipc = flowipc || (s != SHMB_LOOKUP_MOONCAKE && lookup->run_system[s]);
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
    run_t r = {.cfg = cfg, .bytes = (size_t)cfg->object_kb << 10, .ch = {-1}, .why = why, .why_cap = why_cap};
    r.local.seed = cfg->seed;
    r.batch = shmb_handoff_bench_batch(cfg->object_kb);
    const int flowipc = cfg->run_system[HANDOFF_CLASSIC] || cfg->run_system[HANDOFF_JEMALLOC];
    if (cfg->peer_process && flowipc)
        ret = shmb_handoff_peer_start(cfg->seed, r.bytes, &r.ch, &r.pid);
    for (int f = 0; f < SHMB_LOOKUP_SYSTEMS && ret == 0; f++) {
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
    const shmb_error_t saved = *shmb_error_last();
    int stopped = shmb_handoff_peer_stop(&r.ch, &r.pid, ret);
    if (ret == 0 || ret == -EPIPE)
        return stopped < 0 ? stopped : ret;
    shmb_error_clear();
    if (saved.call)
        shmb_error_record(saved.call, saved.err, saved.object);
    return ret;
}
