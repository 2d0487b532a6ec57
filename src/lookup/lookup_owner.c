/*
 * lookup_owner: the owner's side of a two-process lookup run
 * (peer_process = 1). The protocol is in lookup_internal.h, the peer's
 * side in lookup_peer.c.
 *
 * The owner forks a peer (shmbench/peer.h) before it makes anything, then,
 * one set of objects at a time, creates the SHM objects a path translates
 * into, writes a tag (lookup_tag: distinct for every 8-byte word of every
 * segment, never 0) at the word of every request's first byte, publishes
 * names, addresses, sizes and handles through the shared data area (in
 * chunks), lets the peer attach, verify and time, and fetches the samples
 * it took. The rows keep one process's names and order, so that a
 * one-process run and a two-process run pair row by row.
 *   mooncake + kernels  num_segments segments created as createSharedMemory
 *                       does (shm_open + ftruncate + mmap, sparse but for the
 *                       tagged pages); the segment registered i-th (its id)
 *                       gets the mapping whose rank by address is the rank of
 *                       id's placed base (so the placement's registration
 *                       order holds over real owner addresses); published:
 *                       each buffer's name, owner address and length, as
 *                       TransferMetadata carries them.
 *   flowipc_classic     one pool, one block of segment_size per segment;
 *                       published: the pool's name and the blocks' handles.
 *   flowipc_jemalloc    the owner's arena allocates one block per segment
 *                       (its extent hooks create the SHM pools); published:
 *                       every pool (id, name, size) and each block's
 *                       (pool id, offset); then every pool lent to the peer
 *                       (lookup_lend.c), each lend timed here: the attach
 *                       row.
 */
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

static int publish_objects(owner_t *o, const shmb_lookup_object_t *objects, uint64_t total)
{
    const uint64_t chunk = SHMB_LOOKUP_PEER_DATA_BYTES / sizeof(shmb_lookup_object_t);
    int ret = 0;
    for (uint64_t first = 0; ret == 0 && (first < total || first == 0); first += chunk) {
        const uint64_t count = total - first < chunk ? total - first : chunk;
        memcpy(o->peer->data, objects + first, (size_t)count * sizeof(*objects));
        ret = owner_call(o, LOOKUP_OP_OBJECTS, first, count, total, NULL);
        if (total == 0)
            break;
    }
    return ret;
}

static int publish_blocks(owner_t *o, const shmb_lookup_block_t *blocks)
{
    const uint64_t chunk = SHMB_LOOKUP_PEER_DATA_BYTES / sizeof(shmb_lookup_block_t), n = o->cfg->num_segments;
    int ret = 0;
    for (uint64_t first = 0; ret == 0 && first < n; first += chunk) {
        const uint64_t count = n - first < chunk ? n - first : chunk;
        memcpy(o->peer->data, blocks + first, (size_t)count * sizeof(*blocks));
        ret = owner_call(o, LOOKUP_OP_BLOCKS, first, count, 0, NULL);
    }
    return ret;
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
        if (ret == 0 && shmb_path_table[p].kind == SHMB_PATH_SYSTEM && p != SHMB_SYSTEM_FLOWIPC_JEMALLOC)
            ret = fetch(o, p, LOOKUP_SETUP);
    }
    if (ret != -EPIPE) {
        int released = owner_call(o, LOOKUP_OP_RELEASE, (uint64_t)group, 0, 0, NULL);
        ret = ret == 0 ? released : ret;
    }
    return ret;
}

static void copy_word(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

/* The owner writes each request's tag at the word of its first byte;
 * at[id] is where segment id's bytes begin in the owner. The pages were not
 * reserved: a /dev/shm that fills is -ENOSPC, not a SIGBUS. */
static int write_tags(owner_t *o, unsigned char *const *at)
{
    const shmb_lookup_setup_t *s = o->s;
    const uint64_t size = o->cfg->segment_size_mb << 20;
    for (uint64_t k = 0; k < s->window * s->windows; k++) {
        const shmb_lookup_request_t *r = &s->requests[k];
        const uint64_t tag = lookup_tag(size, r->id, r->offset);
        int ret = shmb_segment_first_write_copy(at[r->id] + (r->offset & ~7ull), &tag, sizeof(tag), copy_word);
        if (ret < 0)
            return ret;
    }
    return 0;
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

/* Mooncake's segments (and the kernels'): created and mapped as
 * createSharedMemory does, the segment registered i-th getting the mapping
 * whose rank by address is that of its placed base (the placement's order
 * over real addresses), tagged and published as TransferMetadata's
 * BufferDescs (name, address, length). */
static int owner_segments(owner_t *o, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    shmb_segment_t *shm = calloc((size_t)n, sizeof(*shm));
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    shmb_lookup_object_t *objects = calloc((size_t)n, sizeof(*objects));
    ranked_t *placed = malloc((size_t)n * sizeof(*placed)), *mapped = malloc((size_t)n * sizeof(*mapped));
    uint64_t created = 0;
    int ret = shm && at && objects && placed && mapped ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (; ret == 0 && created < n; created++) {
        ret = shmb_segment_create(&shm[created], cfg->shm_prefix, (size_t)size, NULL, NULL);
        if (ret < 0)
            break;
        if ((ret = shmb_segment_map(&shm[created], NULL)) == 0)
            ret = shmb_segment_close(&shm[created], NULL);
    }
    for (uint64_t i = 0; ret == 0 && i < n; i++) {
        placed[i] = (ranked_t){o->s->segments[i].peer_base, i};
        mapped[i] = (ranked_t){(uint64_t)(uintptr_t)shm[i].addr, i};
    }
    if (ret == 0) {
        qsort(placed, (size_t)n, sizeof(*placed), by_key);
        qsort(mapped, (size_t)n, sizeof(*mapped), by_key);
    }
    for (uint64_t rank = 0; ret == 0 && rank < n; rank++) {
        const shmb_segment_t *seg = &shm[mapped[rank].index];
        shmb_lookup_object_t *obj = &objects[placed[rank].index];
        at[placed[rank].index] = seg->addr;
        snprintf(obj->name, sizeof(obj->name), "%s", seg->name);
        obj->key = (uint64_t)(uintptr_t)seg->addr;
        obj->bytes = size;
    }
    if (ret == 0)
        ret = write_tags(o, at);
    if (ret == 0)
        ret = publish_objects(o, objects, n);
    if (ret == 0)
        ret = run_group(o, LOOKUP_GROUP_SEGMENTS, why, cap);
    for (uint64_t i = 0; shm && i < created; i++)
        shmb_segment_destroy(&shm[i], NULL);
    free(shm);
    free(at);
    free(objects);
    free(placed);
    free(mapped);
    return ret;
}

/* flowipc_classic: one pool, one block of a segment's size per segment,
 * tagged; published: the pool's name and size, each block's handle. */
static int owner_classic(owner_t *o, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    shmb_fipc_classic_t *pool = NULL;
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    shmb_lookup_block_t *blocks = calloc((size_t)n, sizeof(*blocks));
    int ret = at && blocks ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    /* Room for the segment manager and each block's header and alignment. */
    if (ret == 0)
        ret = shmb_fipc_classic_create(cfg->shm_prefix, (size_t)(n * (size + 4096) + (1u << 20)), &pool);
    unsigned char *base = pool ? shmb_fipc_classic_base(pool) : NULL;
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        if ((ret = shmb_fipc_classic_alloc(pool, (size_t)size, &block)) < 0)
            break;
        at[id] = block;
        blocks[id].key = (uint64_t)((unsigned char *)block - base);
    }
    if (ret == 0)
        ret = write_tags(o, at);
    shmb_lookup_object_t object;
    memset(&object, 0, sizeof(object));
    if (ret == 0) {
        snprintf(object.name, sizeof(object.name), "%s", shmb_fipc_classic_name(pool));
        object.bytes = shmb_fipc_classic_size(pool);
        ret = publish_objects(o, &object, 1);
    }
    if (ret == 0)
        ret = publish_blocks(o, blocks);
    if (ret == 0)
        ret = run_group(o, LOOKUP_GROUP_CLASSIC, why, cap);
    shmb_fipc_classic_destroy(pool, 1);
    free(at);
    free(blocks);
    return ret;
}

/* flowipc_jemalloc's attach as its session makes it: every pool lent to
 * the peer, each LendPool round trip a sample of the attach row. The check
 * reads a tag at each block's first word (that of a request at offset 0,
 * so the requests' tags stay as they are). */
static int lend_pools(owner_t *o, shmb_fipc_jemalloc_t *j, const shmb_lookup_block_t *blocks,
                      unsigned char *const *at, char *why, size_t cap)
{
    const uint64_t n = o->cfg->num_segments, size = o->cfg->segment_size_mb << 20;
    uint64_t *tags = malloc((size_t)(n ? n : 1) * sizeof(*tags));
    int ret = tags ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; id < n && ret == 0; id++) {
        tags[id] = lookup_tag(size, id, 0);
        ret = shmb_segment_first_write_copy(at[id], &tags[id], sizeof(tags[id]), copy_word);
    }
    shmb_peer_cmd_t cmd = {.op = LOOKUP_OP_LEND};
    double total = 0;
    if (ret == 0)
        ret = shmb_lookup_lend_owner(o->peer, &cmd, j, blocks, tags, n, &o->got[SHMB_SYSTEM_FLOWIPC_JEMALLOC][LOOKUP_SETUP],
                                     &total, why, cap);
    free(tags);
    return ret;
}

/* flowipc_jemalloc: the arena allocates one block per segment (its extent
 * hooks create the pools), tagged; published: every pool (id, name, size)
 * and each block's (pool id, offset in the pool). */
static int owner_jemalloc(owner_t *o, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    shmb_fipc_jemalloc_t *j = NULL;
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    shmb_lookup_block_t *blocks = calloc((size_t)n, sizeof(*blocks));
    shmb_fipc_pool_t *pools = NULL;
    shmb_lookup_object_t *objects = NULL;
    int ret = at && blocks ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0)
        ret = shmb_fipc_jemalloc_create(cfg->shm_prefix, 0, &j);
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        uint32_t pool_id;
        if ((ret = shmb_fipc_jemalloc_alloc(j, (size_t)size, &block)) < 0)
            break;
        at[id] = block;
        ret = shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(j), block, &pool_id, &blocks[id].offset);
        blocks[id].key = pool_id;
    }
    if (ret == 0)
        ret = write_tags(o, at);
    const size_t npools = ret == 0 ? shmb_fipc_jemalloc_pool_list(j, NULL, 0) : 0;
    if (ret == 0) {
        pools = calloc(npools ? npools : 1, sizeof(*pools));
        objects = calloc(npools ? npools : 1, sizeof(*objects));
        if (!pools || !objects)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    if (ret == 0 && shmb_fipc_jemalloc_pool_list(j, pools, npools) != npools)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t i = 0; ret == 0 && i < npools; i++) {
        snprintf(objects[i].name, sizeof(objects[i].name), "%s", pools[i].name);
        objects[i].key = pools[i].id;
        objects[i].bytes = pools[i].bytes;
    }
    if (ret == 0)
        ret = publish_objects(o, objects, npools);
    if (ret == 0)
        ret = publish_blocks(o, blocks);
    if (ret == 0)
        ret = lend_pools(o, j, blocks, at, why, cap);
    if (ret == 0)
        ret = run_group(o, LOOKUP_GROUP_JEMALLOC, why, cap);
    shmb_fipc_jemalloc_destroy(j, 1, NULL);
    free(at);
    free(blocks);
    free(pools);
    free(objects);
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
        const int system = shmb_path_table[p].kind == SHMB_PATH_SYSTEM;
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
        ret = owner_segments(&o, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC])
        ret = owner_classic(&o, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC])
        ret = owner_jemalloc(&o, why, cap);
    if (ret == 0)
        ret = peer_rows(cfg, &o, rows);
    if (prepared)
        shmb_lookup_bench_teardown(&s);
    for (int p = 0; p < SHMB_PATHS; p++)
        for (int k = 0; k < LOOKUP_KINDS; k++)
            shmb_stats_release(&o.got[p][k]);
    return ret;
}

