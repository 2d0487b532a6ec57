/* A paired run of the lookup benchmark (--systems, shmbench/paired.h): each
 * system its own instance, measured round by round in shmb_paired_order.
 * With a peer: each round, each system's whole first attach (the peer's, or
 * flowipc_jemalloc's lends timed here); in one process: each round one batch
 * per system over the same window of requests. */
#include "lookup_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rows ---- */

/* One question's rows under the --system row's step; ops = operations a
 * sample stands for. Returns the index of its first row in *first. */
static int push_question(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, const char *step, const char *note,
                         double *const *samples, size_t rounds, uint64_t ops, size_t *first)
{
    shmb_row_t tmpl = shmb_row_make("", "segments", cfg->num_segments, cfg->repetition);
    snprintf(tmpl.step, sizeof(tmpl.step), "%s", step);
    snprintf(tmpl.note, sizeof(tmpl.note), "%s", note);
    tmpl.iterations = ops;
    return shmb_paired_push_rows(rows, &tmpl, cfg->system_names, cfg->nsystems, samples, rounds, first);
}

/* ---- first attach ---- */

/* System sys's objects made, a tag at each buffer's or block's first word,
 * published to the peer (flowipc_jemalloc's blocks go with its lends). */
static int make_system(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, uint64_t sys, shmb_lookup_owned_t *o)
{
    const int group = lookup_group_of(cfg->systems[sys]);
    int ret = shmb_lookup_own(cfg, group, o);
    if (ret == 0)
        ret = shmb_lookup_own_tag_first(cfg, o, sys * cfg->num_segments);
    if (ret == 0)
        ret = shmb_lookup_publish(peer, LOOKUP_OP_OBJECTS, sys | (uint64_t)group << 8, o->objects,
                                  sizeof(*o->objects), o->nobjects);
    if (ret == 0 && group == LOOKUP_GROUP_CLASSIC)
        ret = shmb_lookup_publish(peer, LOOKUP_OP_BLOCKS, sys, o->blocks, sizeof(*o->blocks), cfg->num_segments);
    return ret;
}

typedef struct attach_run {
    const shmb_lookup_config_t *cfg;
    shmb_peer_t *peer;
    const shmb_lookup_owned_t *owned;
    uint64_t attaches[SHMB_PAIRED_MAX_SYSTEMS]; /* per system: buffers or pools it attaches */
    char *why;
    size_t cap;
} attach_run_t;

/* flowipc_jemalloc's first attach: this process lends the peer its arena
 * and every pool (lookup_lend.c), timed here, and the peer reads each
 * block's tag through the lent pools. */
static int lend_slice(attach_run_t *c, size_t which, double *ns)
{
    const shmb_lookup_owned_t *o = &c->owned[which];
    shmb_peer_cmd_t cmd = {.op = LOOKUP_OP_PAIRED_ATTACH, .arg = {which}};
    int ret = shmb_lookup_lend_owner(c->peer, &cmd, o->j, o->blocks, o->tags, c->cfg->num_segments, NULL, ns,
                                     c->why, c->cap);
    if (ret == 0)
        c->attaches[which] = o->nobjects;
    return ret;
}

/* System `which`'s whole first attach: its total. */
static int attach_slice(void *ctx, size_t which, double *ns)
{
    attach_run_t *c = ctx;
    if (lookup_group_of(c->cfg->systems[which]) == LOOKUP_GROUP_JEMALLOC)
        return lend_slice(c, which, ns);
    uint64_t r[SHMB_PEER_RESULTS] = {0};
    int ret = shmb_peer_command(c->peer, LOOKUP_OP_PAIRED_ATTACH, which, 0, 0, 0, NULL, r);
    if (ret == -EPROTO)
        snprintf(c->why, c->cap, "%s", (const char *)c->peer->data);
    if (ret == 0) {
        *ns = r[0] ? (double)r[0] : 1; /* a total under 1 ns cannot be: it keeps the ratio defined */
        c->attaches[which] = r[1];
    }
    return ret;
}

/* The rows of a paired first attach: one total per system and round; each
 * system row's note says how many attaches a total holds. */
static int attach_rows(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, double *const *samples,
                       const attach_run_t *c)
{
    size_t first;
    int ret = push_question(cfg, rows, "attach", "", samples, shmb_lookup_bench_paired_attach_rounds(cfg), 1, &first);
    for (size_t s = 0; ret == 0 && s < cfg->nsystems; s++) {
        const int group = lookup_group_of(cfg->systems[s]);
        snprintf(rows->v[first + s].note, sizeof(rows->v[first + s].note), "receiver's total: %llu %s",
                 (unsigned long long)c->attaches[s],
                 group == LOOKUP_GROUP_SEGMENTS  ? "buffers"
                 : group == LOOKUP_GROUP_CLASSIC ? (c->attaches[s] == 1 ? "pool" : "pools")
                                                 : "pools, lent");
    }
    return ret;
}

int shmb_lookup_bench_paired_first_attach(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, shmb_rows_t *rows,
                                          char *why, size_t cap)
{
    const size_t nsys = cfg->nsystems, rounds = shmb_lookup_bench_paired_attach_rounds(cfg);
    shmb_lookup_owned_t owned[SHMB_PAIRED_MAX_SYSTEMS];
    memset(owned, 0, sizeof(owned));
    double *store = calloc(nsys * rounds, sizeof(double)), *samples[SHMB_PAIRED_MAX_SYSTEMS];
    int ret = store ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t s = 0; s < nsys; s++)
        samples[s] = store ? store + s * rounds : NULL;
    for (size_t s = 0; s < nsys && ret == 0; s++)
        ret = make_system(cfg, peer, s, &owned[s]);
    attach_run_t c = {.cfg = cfg, .peer = peer, .owned = owned, .why = why, .cap = cap};
    if (ret == 0)
        ret = shmb_paired_run(nsys, rounds, attach_slice, &c, samples);
    for (size_t s = 0; s < nsys; s++)
        shmb_lookup_own_drop(&owned[s]);
    if (ret == 0)
        ret = attach_rows(cfg, rows, samples, &c);
    free(store);
    return ret;
}

/* ---- translation, in this process ---- */

typedef struct translate_run {
    shmb_lookup_setup_t *s; /* system s's own set-up */
    const int *path;        /* system s's path */
    size_t nsys;
    int latency;
    uint64_t slices;        /* slices run: slice i is of round i / nsys */
    char *why;
    size_t cap;
} translate_run_t;

/* One batch of system `which`, its checksum checked; every system of a
 * round translates the same window of requests, the next round the next. */
static int translate_slice(void *ctx, size_t which, double *ns)
{
    translate_run_t *c = ctx;
    const shmb_lookup_setup_t *s = &c->s[which];
    const size_t win = (size_t)((c->slices++ / c->nsys) % s->windows);
    const uint64_t t0 = shmb_clock_now_ns();
    const uint64_t sum = shmb_lookup_bench_batch(s, c->path[which], c->latency, win);
    const uint64_t t1 = shmb_clock_now_ns();
    *ns = (double)(t1 - t0) / (double)s->window;
    return shmb_lookup_bench_check_sum(s, c->path[which], c->latency, win, sum, -1, c->why, c->cap);
}

/* Rounds: until the baseline's batches take min_time_ms (its warm-up
 * batch's time the estimate), or a given count's batches (at least
 * SHMB_PAIRED_MIN_ROUNDS), within the bounds, a multiple of 2 x nsys so
 * that the order is balanced (shmb_paired_order). */
static size_t translate_rounds(const shmb_lookup_config_t *cfg, double batch_ns)
{
    const double want = cfg->count_given ? (double)shmb_lookup_bench_batches(cfg)
                                         : cfg->min_time_ms * 1e6 / (batch_ns > 1 ? batch_ns : 1);
    const double least = cfg->count_given ? SHMB_PAIRED_MIN_ROUNDS : SHMB_LOOKUP_PAIRED_MIN_ROUNDS;
    size_t rounds = want < least                           ? (size_t)least
                    : want > SHMB_LOOKUP_PAIRED_MAX_ROUNDS ? SHMB_LOOKUP_PAIRED_MAX_ROUNDS
                                                           : (size_t)want;
    const size_t block = 2 * cfg->nsystems;
    return (rounds + block - 1) / block * block;
}

/* One question (throughput or latency): a warm-up round, then the rounds,
 * then its rows. */
static int translate_question(const shmb_lookup_config_t *cfg, translate_run_t *c, shmb_rows_t *rows)
{
    const size_t nsys = cfg->nsystems;
    double warm[SHMB_PAIRED_MAX_SYSTEMS], *pointers[SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < nsys; s++)
        pointers[s] = &warm[s];
    c->slices = 0;
    int ret = shmb_paired_run(nsys, 1, translate_slice, c, pointers);
    if (ret < 0)
        return ret;
    const size_t rounds = translate_rounds(cfg, warm[0] * (double)c->s[0].window);
    double *store = calloc(nsys * rounds, sizeof(double)), *samples[SHMB_PAIRED_MAX_SYSTEMS];
    if (!store)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t s = 0; s < nsys; s++)
        samples[s] = store + s * rounds;
    ret = shmb_paired_run(nsys, rounds, translate_slice, c, samples);
    const uint64_t pool = c->s[0].window * c->s[0].windows;
    char note[64];
    snprintf(note, sizeof(note), "verified %llu/%llu", (unsigned long long)pool, (unsigned long long)pool);
    size_t first;
    if (ret == 0)
        ret = push_question(cfg, rows, c->latency ? "latency" : "", note, samples, rounds, c->s[0].window, &first);
    free(store);
    return ret;
}

int shmb_lookup_bench_paired_translate(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why, size_t cap)
{
    const size_t nsys = cfg->nsystems;
    shmb_lookup_setup_t setups[SHMB_PAIRED_MAX_SYSTEMS];
    int paths[SHMB_PAIRED_MAX_SYSTEMS];
    size_t prepared = 0;
    int ret = 0;
    for (; prepared < nsys && ret == 0; prepared++) {
        shmb_lookup_setup_t *s = &setups[prepared];
        paths[prepared] = cfg->systems[prepared];
        if ((ret = shmb_lookup_bench_prepare(cfg, s)) < 0)
            break;
        ret = shmb_lookup_bench_setup(cfg, s, paths[prepared], why, cap);
        if (ret == 0) /* correctness first: no system is timed unless it translates every request right */
            ret = shmb_lookup_bench_verify(s, paths[prepared], s->window * s->windows, why, cap);
    }
    translate_run_t c = {.s = setups, .path = paths, .nsys = nsys, .why = why, .cap = cap};
    if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
        ret = translate_question(cfg, &c, rows);
    c.latency = 1;
    if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
        ret = translate_question(cfg, &c, rows);
    for (size_t s = 0; s < prepared; s++)
        shmb_lookup_bench_teardown(&setups[s]);
    return ret;
}

int shmb_lookup_bench_paired_check(const shmb_lookup_config_t *cfg)
{
    if (cfg->nsystems < 2 || cfg->nsystems > SHMB_PAIRED_MAX_SYSTEMS || cfg->threads > 1 || cfg->system_rows ||
        lookup_any_kernel(cfg))
        return -EINVAL;
    for (size_t s = 0; s < cfg->nsystems; s++)
        if (cfg->systems[s] < 0 || cfg->systems[s] >= SHMB_SYSTEMS || !cfg->system_names[s])
            return -EINVAL;
    return 0;
}
