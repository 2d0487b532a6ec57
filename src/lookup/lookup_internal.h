/*
 * lookup (library-internal): what the files of the lookup benchmark share
 * and its tests may reach: the set-up of one run (the placement, the pool of
 * requests, the paths' objects), the timing of one path, the rows, and the
 * protocol between the owner and the peer of a two-process run.
 *
 *   lookup_bench.c    configuration, placement, requests, set-up, verification,
 *                     rows, the in-process run and shmb_lookup_bench_run
 *   lookup_measure.c  timing one path on one thread or several at once
 *   lookup_owner.c    two processes, the owner: creates, tags, publishes, fetches
 *   lookup_peer.c     two processes, the peer: attaches, verifies, times
 *
 * Functions return 0 or -errno like the public ones; -EPROTO means a wrong
 * translation (or a peer protocol breach), described in why.
 */
#ifndef SHMBENCH_LOOKUP_INTERNAL_H
#define SHMBENCH_LOOKUP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "models/paths_internal.h"

#include "shmbench/fipc_jemalloc.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/peer.h"
#include "shmbench/report.h"
#include "shmbench/segment.h"
#include "shmbench/stats.h"

#define SHMB_LOOKUP_MIN_BATCHES 10 /* timed batches per path (and per thread), at least */

/* Test hook: the peer's segments a run with cfg registers, in registration
 * order (index = id): peer_base and size of each of cfg->num_segments,
 * placed as cfg->placement says, reproducibly from cfg->seed; local_base is
 * left NULL. segments holds num_segments entries. Returns 0, -EINVAL (the
 * check's) or -ENOMEM. */
int shmb_lookup_bench_place(const shmb_lookup_config_t *cfg, shmb_lookup_segment_t *segments);

static inline const char *lookup_path_name(int path)
{
    return shmb_path_table[path].name;
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

/* One run's set-up, in the calling process or in the peer. */
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
    shmb_lookup_request_t *made;     /* the peer's: requests as made (segment id and offset), which it
                                      * rewrites into each path's requests */
    uint64_t *tags;                  /* the peer's: per request, the tag the owner wrote at its word */
} shmb_lookup_setup_t;

/* Reserves our range, places the segments in it and makes the pool of
 * requests with the address each must translate to; no path is set up.
 * Returns 0 or -errno (recorded); on failure nothing is left. */
int shmb_lookup_bench_prepare(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s);

/* Lets everything of s go: every path still set up, every slot attached,
 * mooncake's real segments (unlinked), the memory. */
void shmb_lookup_bench_teardown(shmb_lookup_setup_t *s);

/* Sets path p up over view, remembered in s->up so that it is torn down
 * once. Returns the path's setup's result. */
int shmb_lookup_bench_path_setup(shmb_lookup_setup_t *s, int p, const shmb_path_view_t *view);

/* Tears path p down if it is set up. */
void shmb_lookup_bench_path_teardown(shmb_lookup_setup_t *s, int p);

/* The view of one process's paths: the segments at their slots of our
 * reservation, mooncake's named names[id] (may be NULL when mooncake is not
 * set up) and attached at their slots on first use, flowipc_classic's pool
 * the reservation itself (every segment back to back). */
shmb_path_view_t shmb_lookup_bench_view(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s,
                                        const char *const *names);

/* Room for one attach descriptor per segment, none open. */
int shmb_lookup_bench_alloc_slots(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s);

/* Mooncake's attach of segment `index` (shmb_mooncake_ops_t: ctx is the
 * set-up): shm_open(O_RDWR) + mmap at the segment's slot of our
 * reservation, the descriptor kept open as upstream keeps it. */
int shmb_lookup_bench_attach_slot(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local);

/* Mooncake's model goes (detaching what it attached), and every slot still
 * attached is reserved again, its descriptor closed. */
void shmb_lookup_bench_release_slots(shmb_lookup_setup_t *s);

/* Each buffer's first request through mooncake's set-up model, in a random
 * order, timed one by one (it attaches the buffer) into s->first_use. */
int shmb_lookup_bench_first_uses(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, char *why,
                                 size_t cap);

/* Every one of the first n requests, translated alone through path, must
 * land where it was made from; in the peer (s->tags), the word there must
 * hold the owner's tag. Returns 0 or -EPROTO. */
int shmb_lookup_bench_verify(const shmb_lookup_setup_t *s, int path, uint64_t n, char *why, size_t cap);

/* One batch of window `win`, throughput or latency, through the path's
 * loop: the sum of the translated addresses (the window's expected_sum when
 * every one is right). The timed loop (lookup_measure.c). */
uint64_t shmb_lookup_bench_batch(const shmb_lookup_setup_t *s, int path, int latency, size_t win);

/* Mooncake in one process: the real segments, its model over them, then
 * their first uses (lookup_bench.c). */
int shmb_lookup_bench_setup_mooncake(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, char *why, size_t cap);

/* Times one path, throughput or latency, on cfg->threads threads (the
 * calling thread alone when 1), and appends its row; or, given keep (one
 * thread: the peer), hands over the samples instead (lookup_measure.c). */
int shmb_lookup_bench_measure(const shmb_lookup_config_t *cfg, const shmb_lookup_setup_t *s, int path,
                              int latency, shmb_rows_t *rows, shmb_samples_t *keep, char *why, size_t cap);

/* A timed row of a path: samples[0..count) ns per lookup (reordered), each
 * of a batch of `window` lookups, over a pool of `pool` verified requests. */
int shmb_lookup_bench_timed_row(const shmb_lookup_config_t *cfg, int path, int latency, int threads,
                                double *samples, size_t count, uint64_t window, uint64_t pool, shmb_rows_t *rows);

/* The step of the receiver's first use of a buffer: "first_use" (mooncake's
 * own row), or "attach" with --system, where it pairs with Flow-IPC's attach
 * of its pools (the same question: what the receiver pays before its first
 * request; Mooncake per buffer, Flow-IPC per pool). */
const char *shmb_lookup_bench_first_use_step(const shmb_lookup_config_t *cfg);

/* A row of a set-up step timed one by one (first_use, attach): samples
 * (reordered), or unmeasured when the path has no such step (NULL). */
int shmb_lookup_bench_setup_row(const shmb_lookup_config_t *cfg, int path, const char *step, const char *note,
                                shmb_samples_t *samples, shmb_rows_t *rows);

#define SHMB_LOOKUP_FIRST_USE_NOTE "shm_open + mmap, once a buffer"

/* ---- two processes: the protocol between the owner and the peer ---- */

#define SHMB_LOOKUP_PEER_DATA_BYTES (1u << 20) /* the shared data area: a chunk of metadata or samples, or a why */

/* The sample sets the peer keeps per path. */
enum { LOOKUP_THROUGHPUT, LOOKUP_LATENCY, LOOKUP_SETUP, LOOKUP_KINDS };

/* The objects of one group are made, published, translated into and
 * dropped before the next group's are made. */
enum { LOOKUP_GROUP_SEGMENTS, LOOKUP_GROUP_CLASSIC, LOOKUP_GROUP_JEMALLOC };

/* The peer's commands. */
enum {
    LOOKUP_OP_OBJECTS = 1, /* arg: first, count, total; data: shmb_lookup_object_t[count] */
    LOOKUP_OP_BLOCKS,      /* arg: first, count; data: shmb_lookup_block_t[count] (by segment id) */
    LOOKUP_OP_RUN,         /* arg: group; attach, verify, time; data on -EPROTO: why */
    LOOKUP_OP_SAMPLES,     /* arg: path, kind, first; data: doubles; result: copied, total */
    LOOKUP_OP_RELEASE,     /* arg: group; unmap its objects */
    /* A paired first attach (lookup_paired.c): every system's objects published at once. */
    LOOKUP_OP_PAIRED_OBJECTS, /* arg: system | group << 8, first, count, total; data: shmb_lookup_object_t[count] */
    LOOKUP_OP_PAIRED_BLOCKS,  /* arg: system, first, count; data: shmb_lookup_block_t[count] (by segment id) */
    LOOKUP_OP_PAIRED_ATTACH,  /* arg: system; the whole first attach, timed, checked, undone; result: ns,
                               * attaches; data on -EPROTO: why. flowipc_jemalloc: the peer serves the
                               * lend on its channel (lookup_lend.c), result: as shmb_lookup_lend_serve's */
    LOOKUP_OP_LEND,           /* flowipc_jemalloc's pools lent to the peer, checked, let go (lookup_lend.c);
                               * result: as shmb_lookup_lend_serve's; data on -EPROTO: why */
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

/* The tag the owner writes at the 8-byte word holding the first byte of a
 * request at `offset` in segment id: distinct for every word of every
 * segment (an odd multiple of a bijection), never 0, which a sparse page
 * reads as. */
static inline uint64_t lookup_tag(uint64_t segment_bytes, uint64_t id, uint64_t offset)
{
    return ((id * segment_bytes + (offset & ~7ull)) * 2 + 1) * 0x9e3779b97f4a7c15ull;
}

/* The tag a paired first attach finds at the first word of segment id's
 * buffer or block of system `system` (distinct across systems). */
static inline uint64_t lookup_paired_tag(const shmb_lookup_config_t *cfg, uint64_t system, uint64_t id)
{
    return lookup_tag(cfg->segment_size_mb << 20, system * cfg->num_segments + id, 0);
}

/* What the peer knows of one system of a paired first attach. */
typedef struct shmb_lookup_paired_side {
    int group;                      /* LOOKUP_GROUP_* of the system */
    shmb_lookup_object_t *objects;  /* its buffers or pools */
    uint64_t nobjects;
    shmb_lookup_block_t *blocks;    /* flowipc_*: num_segments, where each tag lies */
    shmb_lookup_setup_t s;          /* mooncake: its own reservation, slots and model */
    int prepared;
} shmb_lookup_paired_side_t;

/* The peer's state: its copy (from the fork) of the configuration, and what
 * it learnt and measured. The owner makes it before the fork. */
typedef struct shmb_lookup_peer {
    const shmb_lookup_config_t *cfg;
    shmb_peer_t *peer;             /* in the peer: its copy, whose channel is the peer's end */
    shmb_lookup_setup_t s;
    int prepared;
    shmb_lookup_object_t *objects; /* the current group's */
    uint64_t nobjects;
    shmb_lookup_block_t *blocks;   /* num_segments */
    void *classic_pool;            /* flowipc_classic: the pool's mapping */
    size_t classic_bytes;
    void **pool_map;               /* flowipc_jemalloc: each pool's mapping, by object index */
    int *pool_fd;
    uint64_t pools_attached;
    shmb_samples_t samples[SHMB_PATHS][LOOKUP_KINDS];
    shmb_lookup_paired_side_t paired[SHMB_PAIRED_MAX_SYSTEMS];
} shmb_lookup_peer_t;

/* SHM-jemalloc's first attach across the two processes (lookup_lend.c).
 * The owner, the lender: posts cmd (a command whose handler runs
 * shmb_lookup_lend_serve), then, on peer->channel, lends j's arena and
 * every pool of it, each a round trip (the request, the peer's open and
 * map, its Response), timed: per pool (LendPool alone) into per_pool (may
 * be NULL), and all of it, LendArena first, into *total_ns; then sends
 * blocks[0..n)'s handles (key: pool id, offset) with tags[0..n), the words
 * it wrote at each, and awaits the command. Returns 0 once every request
 * was answered with success, the peer answered LendArena and every
 * LendPool and read every tag through the lent pools; -EPROTO with why
 * otherwise; or -errno (-EPIPE: the peer died). The lender's session is
 * made and ended here: each call is a first attach. */
int shmb_lookup_lend_owner(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd, shmb_fipc_jemalloc_t *j,
                           const shmb_lookup_block_t *blocks, const uint64_t *tags, uint64_t n,
                           shmb_samples_t *per_pool, double *total_ns, char *why, size_t cap);

/* The peer, the borrower (in a command's handler): a borrower session that
 * answers the lender's requests on ch (receive_arena, receive_shm_pool: each
 * pool opened and mapped read-only) and checks each block's tag through a
 * borrow, until the lender's end; the session then ends (pools unmapped).
 * result[0]: requests answered, result[1]: blocks read back. Returns 0,
 * -EPROTO with why (the lender is told, when it waits for a Response),
 * -ENOMEM or -EPIPE. */
int shmb_lookup_lend_serve(shmb_channel_t *ch, char *why, size_t cap, uint64_t result[SHMB_PEER_RESULTS]);

/* Test hooks of lookup_lend.c's checks; 0 in a run. */
enum {
    SHMB_LOOKUP_LEND_FAULT_POOL = 1, /* the owner never lends the last pool */
    SHMB_LOOKUP_LEND_FAULT_TAG,      /* the owner tells the last block's tag + 1 */
};
extern int shmb_lookup_lend_fault;

/* The peer's handler (a shmb_peer_handler_t, ctx: a shmb_lookup_peer_t),
 * run in the peer process (lookup_peer.c). */
int shmb_lookup_bench_peer_handler(void *ctx, const shmb_peer_cmd_t *cmd, void *data, size_t data_bytes,
                                   uint64_t result[SHMB_PEER_RESULTS]);

/* A run across two processes with peer started (lookup_owner.c): appends
 * the rows of what the peer measured, under one process's names and order. */
int shmb_lookup_bench_owner_run(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, shmb_rows_t *rows, char *why,
                                size_t cap);

/* The peer's side of a paired first attach (lookup_peer.c): takes a
 * system's objects or blocks, or runs its whole first attach. */
int shmb_lookup_bench_paired_take(shmb_lookup_peer_t *ps, const shmb_peer_cmd_t *cmd, const void *data,
                                  size_t data_bytes);
int shmb_lookup_bench_paired_attach(shmb_lookup_peer_t *ps, uint64_t system, char *why, size_t cap,
                                    uint64_t result[SHMB_PEER_RESULTS]);

/* A paired run (lookup_paired.c): -EINVAL unless cfg is one (2 to
 * SHMB_PAIRED_MAX_SYSTEMS known systems, named; one thread, no kernel, no
 * system_rows); the first attach across two processes with peer started,
 * or the translation in this one. */
int shmb_lookup_bench_paired_check(const shmb_lookup_config_t *cfg);
int shmb_lookup_bench_paired_first_attach(const shmb_lookup_config_t *cfg, shmb_peer_t *peer, shmb_rows_t *rows,
                                          char *why, size_t cap);
int shmb_lookup_bench_paired_translate(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why, size_t cap);

#endif
