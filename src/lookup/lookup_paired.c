/*
 * lookup_paired: a paired run of the lookup benchmark (--systems,
 * shmbench/paired.h): every system its own instance, the control a second
 * one of the baseline's, measured round by round in shmb_paired_order.
 *
 * First attach (peer_process): the owner makes every system's objects at
 * once (mooncake: num_segments buffers as createSharedMemory makes them;
 * flowipc_classic: one pool with a block per segment; flowipc_jemalloc: an
 * arena with a block per segment, its pools made by its extent hooks),
 * writes a tag at each buffer's or block's first word and publishes them
 * (lookup_internal.h's LOOKUP_OP_PAIRED_*). Each round, each system's whole
 * first attach is one sample: mooncake's and flowipc_classic's in the peer
 * (lookup_peer.c: what the --system attach row times, every buffer or the
 * pool, summed); flowipc_jemalloc's as its session makes it, timed here:
 * LendArena and a LendPool per pool, each a round trip to the peer, which
 * opens and maps the pool before it answers (lookup_lend.c). The peer
 * checks every tag through its mappings, then undoes the attach untimed.
 *
 * Translation (one process): each system's path set up over its own
 * set-up (the same placement and requests, from the seed), every request
 * verified; each round one batch per system, over the same window of
 * requests, its checksum checked.
 */
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

/* ---- first attach: the owner's objects ---- */

typedef struct owned {
    shmb_segment_t *shm; /* mooncake */
    uint64_t created;
    shmb_fipc_classic_t *pool;
    shmb_fipc_jemalloc_t *j;
    shmb_lookup_block_t *blocks; /* flowipc_jemalloc: each block's pool and offset, to lend and check */
    uint64_t *tags;              /* flowipc_jemalloc: the tag at each block's first word */
    uint64_t pools;              /* flowipc_jemalloc: how many it lends */
} owned_t;

static void copy_word(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

/* A tag at the first word of each of the system's n buffers or blocks: not
 * reserved before, so a /dev/shm that fills is -ENOSPC, not a SIGBUS. */
static int tag_all(const shmb_lookup_config_t *cfg, uint64_t sys, unsigned char *const *at)
{
    int ret = 0;
    for (uint64_t id = 0; id < cfg->num_segments && ret == 0; id++) {
        const uint64_t tag = lookup_paired_tag(cfg, sys, id);
        ret = shmb_segment_first_write_copy(at[id], &tag, sizeof(tag), copy_word);
    }
    return ret;
}

/* Sends elements[0..total) of `size` bytes each with op (arg: a0, first,
 * count, total) in chunks through the data area. */
static int publish(shmb_peer_t *peer, uint32_t op, uint64_t a0, const void *elements, size_t size, uint64_t total)
{
    const uint64_t chunk = SHMB_LOOKUP_PEER_DATA_BYTES / size;
    int ret = 0;
    for (uint64_t first = 0; ret == 0 && (first < total || first == 0); first += chunk) {
        const uint64_t count = total - first < chunk ? total - first : chunk;
        memcpy(peer->data, (const unsigned char *)elements + first * size, (size_t)(count * size));
        ret = shmb_peer_command(peer, op, a0, first, count, total, NULL, NULL);
        if (total == 0)
            break;
    }
    return ret;
}

/* Mooncake: num_segments buffers made as createSharedMemory makes them;
 * published as TransferMetadata's BufferDescs (name, address, length). */
static int make_buffers(const shmb_lookup_config_t *cfg, uint64_t sys, owned_t *o, shmb_lookup_object_t *objects,
                        unsigned char **at)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    if (!(o->shm = calloc((size_t)n, sizeof(*o->shm))))
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = 0;
    for (; ret == 0 && o->created < n; o->created++) {
        shmb_segment_t *seg = &o->shm[o->created];
        if ((ret = shmb_segment_create(seg, cfg->shm_prefix, (size_t)size, NULL, NULL)) < 0)
            break;
        if ((ret = shmb_segment_map(seg, NULL)) == 0)
            ret = shmb_segment_close(seg, NULL);
        at[o->created] = seg->addr;
        snprintf(objects[o->created].name, sizeof(objects[o->created].name), "%s", seg->name);
        objects[o->created].key = (uint64_t)(uintptr_t)seg->addr;
        objects[o->created].bytes = size;
    }
    return ret == 0 ? tag_all(cfg, sys, at) : ret;
}

/* flowipc_classic: one pool, a block of a segment's size per segment. */
static int make_classic(const shmb_lookup_config_t *cfg, uint64_t sys, owned_t *o, shmb_lookup_object_t *object,
                        shmb_lookup_block_t *blocks, unsigned char **at)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    /* room for the segment manager and each block's header and alignment */
    int ret = shmb_fipc_classic_create(cfg->shm_prefix, (size_t)(n * (size + 4096) + (1u << 20)), &o->pool);
    unsigned char *base = ret == 0 ? shmb_fipc_classic_base(o->pool) : NULL;
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        if ((ret = shmb_fipc_classic_alloc(o->pool, (size_t)size, &block)) < 0)
            break;
        at[id] = block;
        blocks[id].key = (uint64_t)((unsigned char *)block - base);
    }
    if (ret == 0) {
        snprintf(object->name, sizeof(object->name), "%s", shmb_fipc_classic_name(o->pool));
        object->bytes = shmb_fipc_classic_size(o->pool);
        ret = tag_all(cfg, sys, at);
    }
    return ret;
}

/* flowipc_jemalloc: an arena, a block per segment (its extent hooks make the
 * pools); *objects gets every pool (malloc'ed), *npools how many. */
static int make_jemalloc(const shmb_lookup_config_t *cfg, uint64_t sys, owned_t *o, shmb_lookup_object_t **objects,
                         uint64_t *npools, shmb_lookup_block_t *blocks, unsigned char **at)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    int ret = shmb_fipc_jemalloc_create(cfg->shm_prefix, 0, &o->j);
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        uint32_t pool_id;
        if ((ret = shmb_fipc_jemalloc_alloc(o->j, (size_t)size, &block)) < 0)
            break;
        at[id] = block;
        ret = shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(o->j), block, &pool_id, &blocks[id].offset);
        blocks[id].key = pool_id;
    }
    if (ret == 0)
        ret = tag_all(cfg, sys, at);
    const size_t count = ret == 0 ? shmb_fipc_jemalloc_pool_list(o->j, NULL, 0) : 0;
    shmb_fipc_pool_t *pools = ret == 0 ? calloc(count ? count : 1, sizeof(*pools)) : NULL;
    *objects = ret == 0 ? calloc(count ? count : 1, sizeof(**objects)) : NULL;
    if (ret == 0 && (!pools || !*objects || shmb_fipc_jemalloc_pool_list(o->j, pools, count) != count))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t i = 0; ret == 0 && i < count; i++) {
        snprintf((*objects)[i].name, sizeof((*objects)[i].name), "%s", pools[i].name);
        (*objects)[i].key = pools[i].id;
        (*objects)[i].bytes = pools[i].bytes;
    }
    *npools = count;
    free(pools);
    return ret;
}

/* System sys's objects made, tagged and published to the peer. */
static int make_system(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, uint64_t sys, owned_t *o)
{
    const uint64_t n = cfg->num_segments;
    const int group = lookup_group_of(cfg->systems[sys]);
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    shmb_lookup_block_t *blocks = calloc((size_t)n, sizeof(*blocks));
    shmb_lookup_object_t *objects = NULL;
    uint64_t nobjects = group == LOOKUP_GROUP_SEGMENTS ? n : 1;
    int ret = at && blocks ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0 && group != LOOKUP_GROUP_JEMALLOC && !(objects = calloc((size_t)nobjects, sizeof(*objects))))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0)
        ret = group == LOOKUP_GROUP_SEGMENTS  ? make_buffers(cfg, sys, o, objects, at)
              : group == LOOKUP_GROUP_CLASSIC ? make_classic(cfg, sys, o, objects, blocks, at)
                                              : make_jemalloc(cfg, sys, o, &objects, &nobjects, blocks, at);
    if (ret == 0)
        ret = publish(peer, LOOKUP_OP_PAIRED_OBJECTS, sys | (uint64_t)group << 8, objects, sizeof(*objects), nobjects);
    if (ret == 0 && group == LOOKUP_GROUP_CLASSIC)
        ret = publish(peer, LOOKUP_OP_PAIRED_BLOCKS, sys, blocks, sizeof(*blocks), n);
    if (ret == 0 && group == LOOKUP_GROUP_JEMALLOC) {
        o->blocks = blocks;
        blocks = NULL;
        o->pools = nobjects;
        if (!(o->tags = malloc((size_t)n * sizeof(*o->tags))))
            ret = shmb_error_record("malloc", ENOMEM, NULL);
        for (uint64_t id = 0; ret == 0 && id < n; id++)
            o->tags[id] = lookup_paired_tag(cfg, sys, id);
    }
    free(at);
    free(blocks);
    free(objects);
    return ret;
}

static void drop(owned_t *o)
{
    for (uint64_t i = 0; o->shm && i < o->created; i++)
        shmb_segment_destroy(&o->shm[i], NULL);
    free(o->shm);
    free(o->blocks);
    free(o->tags);
    shmb_fipc_classic_destroy(o->pool, 1);
    shmb_fipc_jemalloc_destroy(o->j, 1, NULL);
    memset(o, 0, sizeof(*o));
}

typedef struct attach_run {
    const shmb_lookup_config_t *cfg;
    shmb_peer_t *peer;
    const owned_t *owned;
    uint64_t attaches[SHMB_PAIRED_MAX_SYSTEMS]; /* per system: buffers or pools it attaches */
    char *why;
    size_t cap;
} attach_run_t;

/* flowipc_jemalloc's first attach: this process lends the peer its arena
 * and every pool (lookup_lend.c), timed here, and the peer reads each
 * block's tag through the lent pools. */
static int lend_slice(attach_run_t *c, size_t which, double *ns)
{
    const owned_t *o = &c->owned[which];
    shmb_peer_cmd_t cmd = {.op = LOOKUP_OP_PAIRED_ATTACH, .arg = {which}};
    int ret = shmb_lookup_lend_owner(c->peer, &cmd, o->j, o->blocks, o->tags, c->cfg->num_segments, NULL, ns,
                                     c->why, c->cap);
    if (ret == 0)
        c->attaches[which] = o->pools;
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
    owned_t owned[SHMB_PAIRED_MAX_SYSTEMS];
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
        drop(&owned[s]);
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
    if (sum != s->expected_sum[win]) {
        snprintf(c->why, c->cap, "%s%s: checksum of a timed batch is 0x%llx, expected 0x%llx",
                 lookup_path_name(c->path[which]), c->latency ? " latency" : "", (unsigned long long)sum,
                 (unsigned long long)s->expected_sum[win]);
        return -EPROTO;
    }
    *ns = (double)(t1 - t0) / (double)s->window;
    return 0;
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
        if (paths[prepared] == SHMB_SYSTEM_MOONCAKE) {
            ret = shmb_lookup_bench_setup_mooncake(cfg, s, why, cap);
        } else {
            const shmb_path_view_t view = shmb_lookup_bench_view(cfg, s, NULL);
            ret = shmb_lookup_bench_path_setup(s, paths[prepared], &view);
        }
        /* correctness first: no system is timed unless it translates every request right */
        if (ret == 0)
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
