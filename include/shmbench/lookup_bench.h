/*
 * lookup_bench: what translating a peer's address costs, per strategy.
 *
 * Set-up: num_segments segments of segment_size; peer bases page-aligned,
 * non-overlapping and spread over SHMB_LOOKUP_SPAN_BYTES of the peer's
 * address space, registered in the order the placement says (descending,
 * ascending or random addresses); local bases inside one reserved range of
 * this process (PROT_NONE, MAP_NORESERVE: real addresses, no memory
 * committed). Requests are made before timing, reproducibly from the seed:
 * random (any segment, any offset) or sequential (segments in address order,
 * offsets advancing).
 *
 * A timed batch is max(num_lookups, SHMB_LOOKUP_MIN_BATCH) lookups (the
 * window). Requests come from a pool of whole windows, at least
 * SHMB_LOOKUP_MIN_POOL requests, and batches walk through it: replaying a few
 * thousand requests over and over lets the branch predictors learn them, and
 * lower_bound and tree would look faster than they are (seen here: 6.6 ns
 * with 1000 requests replayed against 28 ns with a million, at 100 segments).
 *
 * Systems (what a request really costs) beside the kernels (bounds):
 *   mooncake          shmbench/mooncake.h: metadata lookup under its lock,
 *                     scan of the BufferDesc records, remap-cache probes. The
 *                     segments are real SHM (sparse, created with O_EXCL,
 *                     0600); each buffer's first request opens and maps it
 *                     (shm_open + mmap + close, at the address the kernels
 *                     use), timed one by one: the first_use row.
 *   flowipc_classic   shmbench/fipc_classic.h: one pool holding every
 *                     segment back to back; handle = offset; base + offset.
 *   flowipc_jemalloc  shmbench/fipc_jemalloc.h: Shm_pool_repository::
 *                     to_address, lock + hash map + base + offset, with as
 *                     many pools as segments.
 *
 * Two kinds of rows. Throughput: a batch's requests are independent, so the
 * CPU overlaps their translations. Latency: the same requests as a dependent
 * chain (shmb_lookup_chain and the systems' *_chain loops), each request's
 * keys shifted by how far the previous translation landed from where it
 * should (zero, unknown to the compiler), so that each translation waits for
 * the one before: what a request path that waits on each translation sees.
 *
 * Threads: with threads > 1, that many threads run the same path at once,
 * each its own stream of requests (thread i starts at window i x windows /
 * threads of the pool and walks on), over the shared metadata, pool and
 * repository, as a process's transfer threads do: mooncake's metadata
 * RWSpinlock and SegmentDesc shared_ptr, flowipc_jemalloc's repository
 * mutex (taken per translation, as upstream's to_address does) are shared;
 * flowipc_classic and the kernels share read-only memory only. Each thread
 * is pinned to its own CPU when there are enough (shmb_lookup_bench_thread_
 * cpus), else runs on every allowed CPU. The threads start together (a
 * barrier) and run until min_time_ms has passed and each has timed
 * SHMB_LOOKUP_MIN_BATCHES batches; every batch of every thread is
 * checksummed. Rows carry threads = N: ns per lookup per thread (percentiles
 * over every thread's batches), iterations = all threads' lookups,
 * items_per_second = all threads' lookups / the wall time from the first
 * thread's start to the last one's end.
 *
 * Two processes (peer_process = 1): the calling process, the owner, forks a
 * peer (shmbench/peer.h) before it makes anything, then creates the SHM
 * objects each path translates into and writes a tag (tag_of in the source:
 * distinct for every 8-byte word of every segment, never 0) at the word of
 * every request's first byte; the peer attaches them and translates, and the
 * owner builds the rows from the samples the peer times and returns through
 * the shared data area (in chunks). The peer knows the run's configuration
 * (as a forked copy of cfg), makes the same pool of requests from the seed,
 * and learns the objects only from what the owner publishes: names,
 * addresses, sizes and handles. Path by path, one set of objects at a time:
 *   mooncake + kernels  the owner creates num_segments segments as
 *                       createSharedMemory does (shm_open + ftruncate +
 *                       mmap, sparse but for the tagged pages) and gives the
 *                       segment registered i-th (its id) the mapping whose
 *                       rank by address is the rank of id's placed base (so
 *                       the placement's registration order holds over real
 *                       owner addresses); it publishes each buffer's name,
 *                       owner address and length, as TransferMetadata carries
 *                       them. The peer builds its Mooncake model from them
 *                       and each buffer's first request attaches it
 *                       (shm_open(O_RDWR) + mmap at its slot of the peer's
 *                       reservation): the first_use row, timed in the peer
 *                       one by one. The kernels then run in the peer over the
 *                       same attached segments (the peer attaches them
 *                       itself, untimed, when mooncake does not run).
 *   flowipc_classic     the owner creates one pool, allocates one block of
 *                       segment_size per segment in it and publishes the
 *                       pool's name and the blocks' handles; the peer
 *                       attaches the pool once (the attach row: shm_open +
 *                       fstat + mmap) and adds handles to its base.
 *   flowipc_jemalloc    the owner's arena allocates one block per segment
 *                       (its extent hooks create the SHM pools); the owner
 *                       publishes every pool (id, name, size) and each
 *                       block's (pool id, offset); the peer attaches every
 *                       pool read-only (the attach row: one sample per pool)
 *                       and translates through its own repository.
 * Every translation the peer verifies lands where the peer mapped the
 * object, and the 8 bytes read there through the translated pointer must be
 * the tag the owner wrote: proof across the two processes. Only one thread
 * (threads = 1); the peer is started and stopped within each call.
 *
 * Every path's translation of every request of the pool is checked
 * against the address the request was made from before any timing; a
 * mismatch fails the run. Every translated address of a batch is summed into
 * a checksum that is checked too (a wrong translation in a chain derails
 * every request after it). Batches repeat until min_time_ms has passed (and
 * at least SHMB_LOOKUP_MIN_BATCHES).
 */
#ifndef SHMBENCH_LOOKUP_BENCH_H
#define SHMBENCH_LOOKUP_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/lookup.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_LOOKUP_SPAN_BYTES (1ull << 46) /* peer address space used; also the most we reserve */
#define SHMB_LOOKUP_PEER_START (1ull << 44) /* where the peer's segments begin */
#define SHMB_LOOKUP_MOONCAKE_TARGET_ID 1      /* the peer's segment id in Mooncake's metadata */
#define SHMB_LOOKUP_MOONCAKE_OTHER_SEGMENTS 8 /* further segment ids in the metadata map */
#define SHMB_LOOKUP_MIN_BATCH 4096          /* lookups per timed batch, at least */
#define SHMB_LOOKUP_MIN_BATCHES 10
#define SHMB_LOOKUP_MIN_POOL 131072        /* distinct requests, at least */
#define SHMB_LOOKUP_MAX_LOOKUPS 10000000
#define SHMB_LOOKUP_MAX_SEGMENTS 10000000
#define SHMB_LOOKUP_MAX_THREADS 256

typedef enum shmb_lookup_system {
    SHMB_LOOKUP_MOONCAKE,
    SHMB_LOOKUP_FLOWIPC_CLASSIC,
    SHMB_LOOKUP_FLOWIPC_JEMALLOC,
    SHMB_LOOKUP_SYSTEMS /* how many there are */
} shmb_lookup_system_t;

/* "mooncake", "flowipc_classic", "flowipc_jemalloc". */
const char *shmb_lookup_system_name(shmb_lookup_system_t system);

/* Which rows: throughput (independent requests), latency (a dependent
 * chain) or both. */
typedef enum shmb_lookup_mode {
    SHMB_LOOKUP_MODE_THROUGHPUT,
    SHMB_LOOKUP_MODE_LATENCY,
    SHMB_LOOKUP_MODE_BOTH,
} shmb_lookup_mode_t;

/* The order the peer registers its segments in, by address. Descending is
 * what Mooncake's allocateLocalMemory gives: each buffer is a fresh
 * mmap(NULL), which Linux places below the previous one, and is appended
 * to the segment's buffers as it comes. */
typedef enum shmb_lookup_placement {
    SHMB_LOOKUP_PLACE_DESCENDING,
    SHMB_LOOKUP_PLACE_ASCENDING,
    SHMB_LOOKUP_PLACE_RANDOM,
    SHMB_LOOKUP_PLACEMENTS /* how many there are */
} shmb_lookup_placement_t;

/* "descending", "ascending", "random". */
const char *shmb_lookup_placement_name(shmb_lookup_placement_t placement);

/* Name -> placement. Returns 0 or -EINVAL. */
int shmb_lookup_parse_placement(const char *name, shmb_lookup_placement_t *out);

typedef struct shmb_lookup_config {
    uint64_t num_segments;    /* (=100) */
    uint64_t num_lookups;     /* lookups per timed batch (=10000) */
    uint64_t segment_size_mb; /* (=64) */
    uint64_t lookup_len_kb;   /* length of each request (=4) */
    int sequential;           /* pattern: 0 random, 1 sequential */
    shmb_lookup_mode_t mode;  /* (=throughput) */
    shmb_lookup_placement_t placement; /* (=descending) */
    int run[SHMB_LOOKUP_STRATEGIES]; /* 1: measure this kernel */
    int run_system[SHMB_LOOKUP_SYSTEMS]; /* 1: measure this system */
    int system_rows;          /* 1: exactly one system runs; rows named by step only */
    const char *shm_prefix;   /* names of mooncake's real segments */
    uint64_t seed;
    double min_time_ms;       /* per strategy and segment count (=50) */
    int repetition;           /* stamped into the rows */
    int threads;              /* threads running each path at once (=1: the calling thread) */
    int cpu;                  /* threads > 1: first CPU of the threads, -1: the first allowed */
    int peer_process;         /* 1: the owner creates and tags, a forked peer attaches, translates
                               * and times (threads must be 1) */
} shmb_lookup_config_t;

/* Checks the sizes: -EINVAL for a zero count or size, a request longer
 * than a segment, an unknown mode or placement, threads outside
 * 1..SHMB_LOOKUP_MAX_THREADS or above 1 with peer_process; -EOVERFLOW when the segments do not fit in
 * SHMB_LOOKUP_SPAN_BYTES. */
int shmb_lookup_bench_check(const shmb_lookup_config_t *cfg);

/* The peer's segments a run with cfg registers, in registration order (index
 * = id): peer_base and size of each of cfg->num_segments, placed as
 * cfg->placement says, reproducibly from cfg->seed; local_base is left NULL.
 * segments holds num_segments entries. Returns 0, -EINVAL (the check's) or
 * -ENOMEM. */
int shmb_lookup_bench_place(const shmb_lookup_config_t *cfg, shmb_lookup_segment_t *segments);

/* Runs every selected path and appends its rows (variant = path, arg
 * segments:N, note "verified P/P" over the pool of P requests), systems
 * first, then kernels: per path its throughput row (no step) and/or its
 * latency row (step "latency"), as cfg->mode says; mooncake adds its
 * first_use row (step "first_use"); with peer_process, flowipc_classic and
 * flowipc_jemalloc add their attach row (step "attach"), and the rows keep
 * the names of one process's, so that the two runs pair row by row.
 * speedup (of medians, robust to a preemption): mooncake's p50 / the row's,
 * of the same kind, or linear's when mooncake did not run.
 * With system_rows, the variant is left empty and a step the system does
 * not have (first_use for the Flow-IPC paths; with peer_process, attach
 * for mooncake) is an unmeasured row.
 * Returns 0, -errno, or -EPROTO when a path translated wrongly, with the
 * details in why. With peer_process, -EPIPE (recorded as the call "peer
 * process", see shmbench/peer.h) when the peer died; the peer's own failures
 * come back as its -errno with its recorded error. Leaves nothing in
 * /dev/shm and no process behind. */
int shmb_lookup_bench_run(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why,
                          size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
