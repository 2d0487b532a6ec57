/*
 * lookup_bench: what translating a peer's address into this process's
 * address costs, per path (shmbench/paths.h names them): the systems
 * mooncake, flowipc_classic and flowipc_jemalloc, what a request really
 * costs in each design, beside the kernels linear, lower_bound, tree and
 * arithmetic, reference points (one pool's base + offset can beat them).
 *
 * A run places num_segments segments of segment_size_mb in the peer's
 * address space (cfg->placement decides their registration order by
 * address), makes a pool of at least SHMB_LOOKUP_MIN_POOL requests
 * reproducibly from cfg->seed, checks every selected path's translation of
 * every request before timing any (a wrong one fails the run), then times
 * batches of max(num_lookups, SHMB_LOOKUP_MIN_BATCH) requests walking
 * through the pool until min_time_ms has passed (with count_given, num_lookups
 * in all: shmb_lookup_bench_batches): ns per lookup = batch time / batch size. Throughput rows time independent requests, latency rows a
 * dependent chain (shmbench/lookup.h, shmb_lookup_chain). With threads > 1,
 * that many threads run each path at once over its shared objects. With
 * peer_process, a forked peer attaches what this process creates and does
 * every translation and timing, reading back a tag this process wrote at
 * each request's word.
 *
 * Sizes: _kb = 1024 bytes, _mb = 1024 KB; times in ns unless named _ms.
 * Functions return 0 or -errno and never print or exit.
 */
#ifndef SHMBENCH_LOOKUP_BENCH_H
#define SHMBENCH_LOOKUP_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/notes.h"
#include "shmbench/lookup.h"
#include "shmbench/mooncake.h"
#include "shmbench/paired.h"
#include "shmbench/paths.h"
#include "shmbench/progress.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_LOOKUP_SPAN_BYTES (1ull << 46) /* peer address space used; also the most we reserve */
#define SHMB_LOOKUP_PEER_START (1ull << 44) /* where the peer's segments begin */
/* Mooncake's metadata as the paths table builds it (also for a transfer's
 * translation): the peer's segment id, and how many further ids beside it. */
#define SHMB_LOOKUP_MOONCAKE_TARGET_ID 1
#define SHMB_LOOKUP_MOONCAKE_OTHER_SEGMENTS 8
#define SHMB_LOOKUP_MIN_BATCH 4096          /* lookups per timed batch, at least */
#define SHMB_LOOKUP_MIN_POOL 131072        /* distinct requests, at least */
#define SHMB_LOOKUP_MAX_LOOKUPS 10000000
#define SHMB_LOOKUP_MAX_SEGMENTS 10000000
#define SHMB_LOOKUP_MAX_THREADS 256


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
    int run_system[SHMB_SYSTEMS]; /* 1: measure this system */
    int system_rows;          /* 1: exactly one system runs; rows named by step only */
    const char *shm_prefix;   /* names of mooncake's real segments */
    uint64_t seed;
    double min_time_ms;       /* per path and segment count (=50) */
    int count_given;          /* 1: num_lookups is each row's count (--num_lookups given without
                               * --min_time_ms): shmb_lookup_bench_batches() batches of
                               * SHMB_LOOKUP_MIN_BATCH, min_time_ms and the minimum batches not
                               * applied (per thread with threads > 1); 0: num_lookups per batch */
    int repetition;           /* stamped into the rows */
    int threads;              /* threads running each path at once (=1: the calling thread) */
    int cpu;                  /* threads > 1: first CPU of the threads, -1: the first allowed */
    shmb_progress_t *progress; /* NULL: none; else told each step between timed phases (shmbench/progress.h) */
    int peer_process;         /* 1: the owner creates and tags, a forked peer attaches, translates
                               * and times (threads must be 1) */
    /* A paired run (--systems, shmbench/paired.h): nsystems > 0 measures these systems
     * instead of run[] and run_system[], the baseline first, its control last. */
    size_t nsystems;          /* 0: not paired; else 2..SHMB_PAIRED_MAX_SYSTEMS */
    int systems[SHMB_PAIRED_MAX_SYSTEMS];              /* shmb_system_t of each */
    const char *system_names[SHMB_PAIRED_MAX_SYSTEMS]; /* "mooncake", ..., "mooncake_control" */
} shmb_lookup_config_t;

/* Checks the sizes: -EINVAL for a zero count or size, a request longer
 * than a segment, an unknown mode, placement or mooncake path, threads outside
 * 1..SHMB_LOOKUP_MAX_THREADS or above 1 with peer_process; -EOVERFLOW when
 * the segments do not fit in SHMB_LOOKUP_SPAN_BYTES. */
int shmb_lookup_bench_check(const shmb_lookup_config_t *cfg);

/* The most /dev/shm space a run with cfg holds at once, in bytes. With
 * peer_process: one group of the owner's objects at a time, sparse but for
 * the pages its tags land in (one page per request of the pool at most, or
 * every page of the segments), plus 4 MiB for the peer's control segment
 * and the pools' own metadata; in one process, 0 (mooncake's real segments
 * are never written: they stay sparse). Returns 0 or
 * shmb_lookup_bench_check's error. */
int shmb_lookup_bench_shm_bytes(const shmb_lookup_config_t *cfg, uint64_t *bytes);

#define SHMB_LOOKUP_PAIRED_ATTACH_ROUNDS 20  /* rounds of a paired first attach, at least */
#define SHMB_LOOKUP_PAIRED_MIN_ROUNDS 20     /* rounds of a paired translation, at least */
#define SHMB_LOOKUP_PAIRED_MAX_ROUNDS 10000  /* and at most */

/* The rounds of a paired first attach: SHMB_LOOKUP_PAIRED_ATTACH_ROUNDS up
 * to a multiple of 2 x cfg->nsystems (whole blocks of shmb_paired_order's
 * balanced order). */
size_t shmb_lookup_bench_paired_attach_rounds(const shmb_lookup_config_t *cfg);

/* The timed batches of each row (of each thread) when cfg->count_given:
 * num_lookups / SHMB_LOOKUP_MIN_BATCH, at least 1 (a shorter batch of the
 * fastest paths would last under 100x the timer overhead); 0 (no bound)
 * without count_given. A paired run times that many rounds, at least
 * SHMB_PAIRED_MIN_ROUNDS. */
uint64_t shmb_lookup_bench_batches(const shmb_lookup_config_t *cfg);

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
 * /dev/shm and no process behind.
 * Paired (cfg->nsystems > 0; threads 1, no kernel, no system_rows): each
 * system its own instance (the control a second one of the baseline's),
 * measured round by round in shmb_paired_order; rows of
 * shmb_paired_push_rows under the --system rows' names (+ /system:NAME,
 * /vs:BASELINE). In one process: the translation per request (throughput
 * and/or latency), each round one batch per system over the same requests
 * (shmb_lookup_bench_paired_rounds). With peer_process: the first attach
 * only (step attach), each round the peer's whole first attach of each
 * system (mooncake every buffer, flowipc_classic its pool, flowipc_jemalloc
 * every pool), one total per round (shmb_lookup_bench_paired_attach_rounds). */
int shmb_lookup_bench_run(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why,
                          size_t why_cap);

/* shm_address_lookup_bench: segment and request sizes, pattern, placement,
 * one system (cfg->system_rows), a peer process, threads (pinned from
 * cfg->cpu), throughput and/or latency rows. */
int shmb_notes_lookup(shmb_report_t *report, shmb_notes_t *store, const shmb_lookup_config_t *cfg);

#ifdef __cplusplus
}
#endif

#endif
