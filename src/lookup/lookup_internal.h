/* lookup (library-internal): what the files of the lookup benchmark share
 * and its tests reach. Calls go down: lookup_run.c (the driver) -> the modes
 * (lookup_owner.c, lookup_paired.c, lookup_peer.c) -> the helpers
 * (lookup_bench.c, lookup_measure.c, lookup_objects.c, lookup_lend.c).
 * -EPROTO means a wrong translation or a protocol breach, described in why. */
#ifndef SHMBENCH_LOOKUP_INTERNAL_H
#define SHMBENCH_LOOKUP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "models/paths_internal.h"

#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/peer.h"
#include "shmbench/report.h"
#include "shmbench/segment.h"
#include "shmbench/stats.h"

#define SHMB_LOOKUP_MIN_BATCHES 10 /* timed batches per path (and per thread), at least */

static inline const char *lookup_path_name(int path)
{
    return shmb_path_name(path);
}

/* 1 when cfg selects path (an index of shmb_path_table). */
static inline int lookup_path_runs(const shmb_lookup_config_t *cfg, int path)
{
    return path < SHMB_SYSTEMS ? cfg->run_system[path] : cfg->run[path - SHMB_SYSTEMS];
}

static inline int lookup_any_kernel(const shmb_lookup_config_t *cfg)
{
    int any = 0;
    for (int k = 0; k < SHMB_LOOKUP_STRATEGIES; k++)
        any |= cfg->run[k] != 0;
    return any;
}

/* ---- lookup_bench.c: one run's set-up, in the calling process or the peer ---- */

typedef struct shmb_lookup_setup {
    unsigned char *reserved;         /* our range, n * size bytes */
    size_t reserved_bytes;
    shmb_lookup_segment_t *segments; /* registration order */
    shmb_lookup_request_t *requests; /* the pool: windows * window requests */
    uint64_t window;                 /* requests per timed batch */
    uint64_t windows;
    uint64_t *expected;              /* per request: the address it was made from */
    uint64_t *expected_sum;          /* per window: the sum of its expected addresses */
    shmb_path_state_t state;         /* what the paths' setups made */
    unsigned char up[SHMB_PATHS];    /* 1: path set up over state */
    shmb_segment_t *shm;             /* mooncake's real segments, by id (descriptors closed) */
    int *attach_fd;                  /* the descriptor each attach at a slot keeps open, by id (-1: none) */
    uint64_t slots;                  /* entries in attach_fd */
    uint64_t shm_created;
    shmb_samples_t first_use;        /* ns of each buffer's first request (mooncake) */
    shmb_lookup_request_t *made;     /* the peer's: requests as made, rewritten into each path's requests */
    uint64_t *tags;                  /* the peer's: per request, the tag the owner wrote at its word */
} shmb_lookup_setup_t;

/* Test hook: cfg's segments as placed (peer_base, size; local_base NULL),
 * reproducibly from cfg->seed. Returns 0, -EINVAL or -ENOMEM. */
int shmb_lookup_bench_place(const shmb_lookup_config_t *cfg, shmb_lookup_segment_t *segments);

/* Reserves our range, places the segments and makes the pool of requests
 * with their expected addresses; no path set up. On failure nothing is left. */
int shmb_lookup_bench_prepare(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s);

/* Lets everything of s go: paths, attached slots, real segments, memory. */
void shmb_lookup_bench_teardown(shmb_lookup_setup_t *s);

/* Sets path p up over view (once: remembered in s->up); the setup's result. */
int shmb_lookup_bench_path_setup(shmb_lookup_setup_t *s, int p, const shmb_path_view_t *view);
void shmb_lookup_bench_path_teardown(shmb_lookup_setup_t *s, int p);

/* One process's view: the segments at their slots of our reservation,
 * mooncake's named names[id] (NULL: not set up) and attached at their slots
 * on first use, flowipc_classic's pool the reservation itself. */
shmb_path_view_t shmb_lookup_bench_view(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s,
                                        const char *const *names);

/* Room for one attach descriptor per segment, none open. */
int shmb_lookup_bench_alloc_slots(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s);

/* Mooncake's attach of segment `index` (shmb_mooncake_ops_t, ctx: s):
 * shm_open(O_RDWR) + mmap at its slot, the descriptor kept open. */
int shmb_lookup_bench_attach_slot(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local);

/* Mooncake's model goes; every attached slot is reserved again, closed. */
void shmb_lookup_bench_release_slots(shmb_lookup_setup_t *s);

/* Each buffer's first request through mooncake's model, in a random order,
 * timed one by one (it attaches the buffer) into s->first_use. */
int shmb_lookup_bench_first_uses(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, char *why,
                                 size_t cap);

/* Path p set up in one process over s's view (mooncake: over its real
 * segments, then their first uses into s->first_use). */
int shmb_lookup_bench_setup(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, int p, char *why, size_t cap);

/* Each of the first n requests, translated alone through path, lands where
 * it was made from and (in the peer, s->tags) reads the owner's tag. */
int shmb_lookup_bench_verify(const shmb_lookup_setup_t *s, int path, uint64_t n, char *why, size_t cap);

/* ---- lookup_measure.c: timing and rows ---- */

/* One batch of window win through the path's loop (latency: its chain): the
 * sum of the translated addresses, expected_sum[win] when all are right. */
uint64_t shmb_lookup_bench_batch(const shmb_lookup_setup_t *s, int path, int latency, size_t win);

/* 0 when sum is window win's expected sum, else -EPROTO with why (naming
 * path, latency and thread, -1: none). */
int shmb_lookup_bench_check_sum(const shmb_lookup_setup_t *s, int path, int latency, size_t win, uint64_t sum,
                                int thread, char *why, size_t cap);

/* Times one path on cfg->threads threads and appends its row; or, given
 * keep (one thread: the peer), hands over the samples instead. */
int shmb_lookup_bench_measure(const shmb_lookup_config_t *cfg, const shmb_lookup_setup_t *s, int path,
                              int latency, shmb_rows_t *rows, shmb_samples_t *keep, char *why, size_t cap);

/* A path's timed row: samples[0..count) ns per lookup of batches of window
 * lookups, over a pool of `pool` verified requests. */
int shmb_lookup_bench_timed_row(const shmb_lookup_config_t *cfg, int path, int latency, int threads,
                                double *samples, size_t count, uint64_t window, uint64_t pool, shmb_rows_t *rows);

/* The step of a receiver's first use of a buffer: "first_use", or "attach"
 * with --system (where it pairs with Flow-IPC's attach of its pools). */
const char *shmb_lookup_bench_first_use_step(const shmb_lookup_config_t *cfg);

/* A set-up step's row (first_use, attach): samples, or unmeasured (NULL). */
int shmb_lookup_bench_setup_row(const shmb_lookup_config_t *cfg, int path, const char *step, const char *note,
                                shmb_samples_t *samples, shmb_rows_t *rows);

#define SHMB_LOOKUP_FIRST_USE_NOTE "shm_open + mmap, once a buffer"

/* ---- two processes: the protocol between the owner and the peer ---- */

#define SHMB_LOOKUP_PEER_DATA_BYTES (1u << 20) /* the shared data area: a chunk of metadata or samples, or a why */

/* The sample sets the peer keeps per path. */
enum { LOOKUP_THROUGHPUT, LOOKUP_LATENCY, LOOKUP_SETUP, LOOKUP_KINDS };

/* Each group's objects are made, published, translated into and dropped
 * before the next group's (a paired run: every system's at once). */
enum { LOOKUP_GROUP_SEGMENTS, LOOKUP_GROUP_CLASSIC, LOOKUP_GROUP_JEMALLOC };

#define LOOKUP_SET_RUN SHMB_PAIRED_MAX_SYSTEMS /* the set of a run's group; 0.. : a paired system's */

/* The peer's commands. */
enum {
    LOOKUP_OP_OBJECTS = 1, /* arg: set | group << 8, first, count, total; data: shmb_lookup_object_t[count] */
    LOOKUP_OP_BLOCKS,      /* arg: set, first, count, total; data: shmb_lookup_block_t[count], by segment id */
    LOOKUP_OP_RUN,         /* arg: group; attach, verify, time; data on -EPROTO: why */
    LOOKUP_OP_SAMPLES,     /* arg: path, kind, first; data: doubles; result: copied, total */
    LOOKUP_OP_RELEASE,     /* arg: group; unmap its objects */
    LOOKUP_OP_PAIRED_ATTACH, /* arg: system; its whole first attach, timed, checked, undone; result: ns,
                              * attaches (flowipc_jemalloc: served as LOOKUP_OP_LEND); data on -EPROTO: why */
    LOOKUP_OP_LEND,        /* flowipc_jemalloc's pools lent to the peer, checked, let go (lookup_lend.c) */
};

/* One SHM object the owner publishes. */
typedef struct shmb_lookup_object {
    char name[SHMB_SEGMENT_NAME_MAX + 1];
    uint64_t key;   /* mooncake: the buffer's address in the owner; flowipc_jemalloc: the pool id */
    uint64_t bytes; /* its length */
} shmb_lookup_object_t;

/* Where segment id's block lies, by segment id. */
typedef struct shmb_lookup_block {
    uint64_t key;    /* flowipc_classic: the block's handle (offset in the pool); flowipc_jemalloc: pool id */
    uint64_t offset; /* flowipc_jemalloc: the block's offset in its pool */
} shmb_lookup_block_t;

/* The group whose objects a path translates into. */
static inline int lookup_group_of(int path)
{
    return path == SHMB_SYSTEM_FLOWIPC_CLASSIC ? LOOKUP_GROUP_CLASSIC
           : path == SHMB_SYSTEM_FLOWIPC_JEMALLOC ? LOOKUP_GROUP_JEMALLOC
                                                  : LOOKUP_GROUP_SEGMENTS;
}

/* The tag at the 8-byte word of segment id holding `offset`: distinct for
 * every word of every segment, never 0 (what a sparse page reads as). */
static inline uint64_t lookup_tag(uint64_t segment_bytes, uint64_t id, uint64_t offset)
{
    return ((id * segment_bytes + (offset & ~7ull)) * 2 + 1) * 0x9e3779b97f4a7c15ull;
}

/* The tag at the first word of segment id's buffer or block of a paired
 * run's system `system` (distinct across systems). */
static inline uint64_t lookup_paired_tag(const shmb_lookup_config_t *cfg, uint64_t system, uint64_t id)
{
    return lookup_tag(cfg->segment_size_mb << 20, system * cfg->num_segments + id, 0);
}

/* ---- lookup_objects.c: the owner's objects of one group ---- */

typedef struct shmb_lookup_owned {
    shmb_segment_t *shm;           /* segments: a buffer per segment */
    uint64_t created;
    shmb_fipc_classic_t *pool;     /* flowipc_classic */
    shmb_fipc_jemalloc_t *j;       /* flowipc_jemalloc */
    unsigned char **at;            /* where segment id's bytes begin in the owner */
    shmb_lookup_object_t *objects; /* published: the buffers (in creation order), the pool or the pools */
    uint64_t nobjects;
    shmb_lookup_block_t *blocks;   /* flowipc_*: where segment id's block lies */
    uint64_t *tags;                /* shmb_lookup_own_tag_first's tags */
} shmb_lookup_owned_t;

/* Makes group's objects as the system does: a buffer per segment
 * (createSharedMemory: shm_open + ftruncate + mmap), one pool with a block
 * per segment, or an arena's block per segment (its hooks make the pools).
 * o zeroed; shmb_lookup_own_drop undoes it, also after a failure. */
int shmb_lookup_own(const shmb_lookup_config_t *cfg, int group, shmb_lookup_owned_t *o);
void shmb_lookup_own_drop(shmb_lookup_owned_t *o);

/* Writes tag at p, whose page was never reserved: a full /dev/shm is -ENOSPC. */
int shmb_lookup_own_write(void *p, uint64_t tag);

/* At each segment's first word, the tag of segment first_id + id (offset
 * 0), kept in o->tags. */
int shmb_lookup_own_tag_first(const shmb_lookup_config_t *cfg, shmb_lookup_owned_t *o, uint64_t first_id);

/* Sends elements[0..total) of `size` bytes with op (arg: a0, first, count,
 * total) in chunks through the peer's data area; once when total is 0. */
int shmb_lookup_publish(shmb_peer_t *peer, uint32_t op, uint64_t a0, const void *elements, size_t size,
                        uint64_t total);

/* ---- lookup_lend.c: SHM-jemalloc's first attach across the two processes ---- */

/* The lender: posts cmd (whose handler runs shmb_lookup_lend_serve), lends
 * j's arena and every pool on peer->channel, each a timed round trip (per
 * pool into per_pool, may be NULL; all into *total_ns), sends blocks[0..n)'s
 * handles with tags[0..n) and awaits cmd. 0 once the peer answered every
 * request and read every tag; -EPROTO with why; -EPIPE: the peer died. */
int shmb_lookup_lend_owner(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd, shmb_fipc_jemalloc_t *j,
                           const shmb_lookup_block_t *blocks, const uint64_t *tags, uint64_t n,
                           shmb_samples_t *per_pool, double *total_ns, char *why, size_t cap);

/* The borrower, in a command's handler: answers the lender's requests on ch
 * (each pool opened and mapped read-only) and checks each block's tag until
 * the lender's end. result[0]: requests answered, [1]: blocks read back. */
int shmb_lookup_lend_serve(shmb_channel_t *ch, char *why, size_t cap, uint64_t result[SHMB_PEER_RESULTS]);

/* Test hooks of lookup_lend.c's checks; 0 in a run. */
enum {
    SHMB_LOOKUP_LEND_FAULT_POOL = 1, /* the owner never lends the last pool */
    SHMB_LOOKUP_LEND_FAULT_TAG,      /* the owner tells the last block's tag + 1 */
};
extern int shmb_lookup_lend_fault;

/* ---- the modes ---- */

/* What the peer took of one set: a group's objects and blocks. */
typedef struct shmb_lookup_taken {
    int group;
    shmb_lookup_object_t *objects;
    uint64_t nobjects;
    shmb_lookup_block_t *blocks;   /* num_segments, once published */
} shmb_lookup_taken_t;

/* What the peer knows of one system of a paired first attach. */
typedef struct shmb_lookup_paired_side {
    shmb_lookup_taken_t t;
    shmb_lookup_setup_t s;          /* mooncake: its own reservation, slots and model */
    int prepared;
} shmb_lookup_paired_side_t;

/* The peer's state: its forked copy of cfg, what it learnt and measured. */
typedef struct shmb_lookup_peer {
    const shmb_lookup_config_t *cfg;
    shmb_peer_t *peer;             /* in the peer: its copy, whose channel is the peer's end */
    shmb_lookup_setup_t s;
    int prepared;
    shmb_lookup_taken_t t;         /* the current group's */
    void *classic_pool;            /* flowipc_classic: the pool's mapping */
    size_t classic_bytes;
    void **pool_map;               /* flowipc_jemalloc: each pool's mapping, by object index */
    int *pool_fd;
    uint64_t pools_attached;
    shmb_samples_t samples[SHMB_PATHS][LOOKUP_KINDS];
    shmb_lookup_paired_side_t paired[SHMB_PAIRED_MAX_SYSTEMS];
} shmb_lookup_peer_t;

/* lookup_peer.c, in the peer process: its commands (ctx: a
 * shmb_lookup_peer_t); taking a set's objects or blocks (LOOKUP_OP_OBJECTS,
 * _BLOCKS); a paired system's whole first attach. */
extern const shmb_peer_commands_t shmb_lookup_peer_commands;
int shmb_lookup_bench_take(shmb_lookup_peer_t *ps, const shmb_peer_cmd_t *cmd, const void *data, size_t data_bytes);
int shmb_lookup_bench_paired_attach(shmb_lookup_peer_t *ps, uint64_t system, char *why, size_t cap,
                                    uint64_t result[SHMB_PEER_RESULTS]);

/* lookup_owner.c: a run across two processes with peer started; appends
 * the rows of what the peer measured, under one process's names and order. */
int shmb_lookup_bench_owner_run(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, shmb_rows_t *rows, char *why,
                                size_t cap);

/* lookup_paired.c: -EINVAL unless cfg is a paired run (2 to
 * SHMB_PAIRED_MAX_SYSTEMS known systems, named; one thread, no kernel, no
 * system_rows); its first attach across two processes with peer started,
 * or its translation in this one. */
int shmb_lookup_bench_paired_check(const shmb_lookup_config_t *cfg);
int shmb_lookup_bench_paired_first_attach(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, shmb_rows_t *rows,
                                          char *why, size_t cap);
int shmb_lookup_bench_paired_translate(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why, size_t cap);

#endif
