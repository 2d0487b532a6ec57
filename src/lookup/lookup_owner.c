/* The owner's side of a two-process lookup run: one group at a time, it
 * makes the SHM objects a path translates into, writes a tag at the word of
 * every request's first byte, publishes them, lets the peer attach, verify
 * and time, and fetches the samples for rows under one process's names. */
#include "lookup_internal.h"

#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The owner's side of a run. */
typedef struct owner {
    const shmb_lookup_config_t *cfg;
    shmb_lookup_setup_t *s;
    shmb_peer_t *peer;
    shmb_samples_t got[SHMB_PATHS][LOOKUP_KINDS]; /* what the peer measured */
} owner_t;

static int owner_call(owner_t *o, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2,
                      uint64_t result[SHMB_PEER_RESULTS])
{
    return shmb_peer_command(o->peer, op, a0, a1, a2, 0, NULL, result);
}

/* Every sample of one set, in chunks through the data area. */
static int fetch(owner_t *o, int path, int kind)
{
    uint64_t first = 0, r[SHMB_PEER_RESULTS];
    do {
        int ret = owner_call(o, LOOKUP_OP_SAMPLES, (uint64_t)path, (uint64_t)kind, first, r);
        if (ret < 0)
            return ret;
        const double *v = o->peer->data;
        for (uint64_t i = 0; i < r[0]; i++)
            if (shmb_stats_append(&o->got[path][kind], v[i]) < 0)
                return shmb_error_record("malloc", ENOMEM, NULL);
        first += r[0];
    } while (first < r[1] && r[0] > 0);
    return 0;
}

/* The peer attaches, verifies and times a group; the owner fetches what it
 * measured, then the peer lets the objects go. */
static int run_group(owner_t *o, int group, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    int ret = owner_call(o, LOOKUP_OP_RUN, (uint64_t)group, 0, 0, NULL);
    if (ret == -EPROTO)
        snprintf(why, cap, "%s", (const char *)o->peer->data);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!lookup_path_runs(cfg, p) || lookup_group_of(p) != group)
            continue;
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = fetch(o, p, LOOKUP_THROUGHPUT);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = fetch(o, p, LOOKUP_LATENCY);
        /* flowipc_jemalloc's attach is the owner's lend, timed here */
        if (ret == 0 && shmb_path_kind(p) == SHMB_PATH_SYSTEM && p != SHMB_SYSTEM_FLOWIPC_JEMALLOC)
            ret = fetch(o, p, LOOKUP_SETUP);
    }
    if (ret != -EPIPE) {
        int released = owner_call(o, LOOKUP_OP_RELEASE, (uint64_t)group, 0, 0, NULL);
        ret = ret == 0 ? released : ret;
    }
    return ret;
}

/* Each request's tag at the word of its first byte; at[id]: where segment
 * id's bytes begin in the owner. */
static int write_tags(owner_t *o, unsigned char *const *at)
{
    const shmb_lookup_setup_t *s = o->s;
    const uint64_t size = o->cfg->segment_size_mb << 20;
    int ret = 0;
    for (uint64_t k = 0; k < s->window * s->windows && ret == 0; k++) {
        const shmb_lookup_request_t *r = &s->requests[k];
        ret = shmb_lookup_own_write(at[r->id] + (r->offset & ~7ull), lookup_tag(size, r->id, r->offset));
    }
    return ret;
}

typedef struct ranked {
    uint64_t key;
    uint64_t index;
} ranked_t;

static int by_key(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* The segment registered i-th gets the buffer whose rank by address is that
 * of its placed base: the placement's order over real owner addresses. */
static int rank_buffers(owner_t *o, shmb_lookup_owned_t *w)
{
    const uint64_t n = o->cfg->num_segments;
    ranked_t *placed = malloc((size_t)n * sizeof(*placed)), *mapped = malloc((size_t)n * sizeof(*mapped));
    shmb_lookup_object_t *objects = malloc((size_t)n * sizeof(*objects));
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    int ret = placed && mapped && objects && at ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; ret == 0 && i < n; i++) {
        placed[i] = (ranked_t){o->s->segments[i].peer_base, i};
        mapped[i] = (ranked_t){(uint64_t)(uintptr_t)w->at[i], i};
    }
    if (ret == 0) {
        qsort(placed, (size_t)n, sizeof(*placed), by_key);
        qsort(mapped, (size_t)n, sizeof(*mapped), by_key);
    }
    for (uint64_t rank = 0; ret == 0 && rank < n; rank++) {
        objects[placed[rank].index] = w->objects[mapped[rank].index];
        at[placed[rank].index] = w->at[mapped[rank].index];
    }
    if (ret == 0) {
        free(w->objects);
        free(w->at);
        w->objects = objects;
        w->at = at;
        objects = NULL;
        at = NULL;
    }
    free(placed);
    free(mapped);
    free(objects);
    free(at);
    return ret;
}

/* One group: its objects made (mooncake's buffers ranked), tagged and
 * published; flowipc_jemalloc's attach as its session makes it, every pool
 * lent to the peer, each LendPool round trip a sample of its attach row
 * (checked by a tag at each block's first word: a request's at offset 0);
 * then the peer's run of the group. */
static int owner_group(owner_t *o, int group, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    shmb_lookup_owned_t w;
    memset(&w, 0, sizeof(w));
    int ret = shmb_lookup_own(cfg, group, &w);
    if (ret == 0 && group == LOOKUP_GROUP_SEGMENTS)
        ret = rank_buffers(o, &w);
    if (ret == 0)
        ret = write_tags(o, w.at);
    if (ret == 0)
        ret = shmb_lookup_publish(o->peer, LOOKUP_OP_OBJECTS, LOOKUP_SET_RUN | (uint64_t)group << 8, w.objects,
                                  sizeof(*w.objects), w.nobjects);
    if (ret == 0 && group != LOOKUP_GROUP_SEGMENTS)
        ret = shmb_lookup_publish(o->peer, LOOKUP_OP_BLOCKS, LOOKUP_SET_RUN, w.blocks, sizeof(*w.blocks),
                                  cfg->num_segments);
    if (ret == 0 && group == LOOKUP_GROUP_JEMALLOC && (ret = shmb_lookup_own_tag_first(cfg, &w, 0)) == 0) {
        const shmb_peer_cmd_t cmd = {.op = LOOKUP_OP_LEND};
        double total = 0;
        ret = shmb_lookup_lend_owner(o->peer, &cmd, w.j, w.blocks, w.tags, cfg->num_segments,
                                     &o->got[SHMB_SYSTEM_FLOWIPC_JEMALLOC][LOOKUP_SETUP], &total, why, cap);
    }
    if (ret == 0)
        ret = run_group(o, group, why, cap);
    shmb_lookup_own_drop(&w);
    return ret;
}

/* The rows of what the peer measured, in one process's order. */
static int peer_rows(const shmb_lookup_config_t *cfg, owner_t *o, shmb_rows_t *rows)
{
    const uint64_t window = o->s->window, pool = o->s->window * o->s->windows;
    int ret = 0;
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!lookup_path_runs(cfg, p))
            continue;
        shmb_samples_t *got = o->got[p];
        const int system = shmb_path_kind(p) == SHMB_PATH_SYSTEM;
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = shmb_lookup_bench_timed_row(cfg, p, 0, 1, got[LOOKUP_THROUGHPUT].v, got[LOOKUP_THROUGHPUT].n,
                                              window, pool, rows);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = shmb_lookup_bench_timed_row(cfg, p, 1, 1, got[LOOKUP_LATENCY].v, got[LOOKUP_LATENCY].n, window,
                                              pool, rows);
        const char *attach_note = p == SHMB_SYSTEM_FLOWIPC_CLASSIC
                                      ? "shm_open + fstat + mmap, the pool"
                                      : "per pool: LendPool, shm_open + mmap (read-only), Response";
        if (ret == 0 && p == SHMB_SYSTEM_MOONCAKE)
            ret = shmb_lookup_bench_setup_row(cfg, p, shmb_lookup_bench_first_use_step(cfg),
                                              SHMB_LOOKUP_FIRST_USE_NOTE, &got[LOOKUP_SETUP], rows);
        else if (ret == 0 && system)
            ret = shmb_lookup_bench_setup_row(cfg, p, "attach", attach_note, &got[LOOKUP_SETUP], rows);
    }
    return ret;
}

int shmb_lookup_bench_owner_run(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, shmb_rows_t *rows, char *why,
                                size_t cap)
{
    shmb_lookup_setup_t s;
    owner_t o;
    memset(&o, 0, sizeof(o));
    o.cfg = cfg;
    o.s = &s;
    o.peer = peer;
    int ret = shmb_lookup_bench_prepare(cfg, &s);
    const int prepared = ret == 0;
    if (ret == 0 && (cfg->run_system[SHMB_SYSTEM_MOONCAKE] || lookup_any_kernel(cfg)))
        ret = owner_group(&o, LOOKUP_GROUP_SEGMENTS, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC])
        ret = owner_group(&o, LOOKUP_GROUP_CLASSIC, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC])
        ret = owner_group(&o, LOOKUP_GROUP_JEMALLOC, why, cap);
    if (ret == 0)
        ret = peer_rows(cfg, &o, rows);
    if (prepared)
        shmb_lookup_bench_teardown(&s);
    for (int p = 0; p < SHMB_PATHS; p++)
        for (int k = 0; k < LOOKUP_KINDS; k++)
            shmb_stats_release(&o.got[p][k]);
    return ret;
}

