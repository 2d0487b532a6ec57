/* lookup_bench: what turning a peer's address or handle into this process's
 * address costs per request, per path (shmbench/paths.h), and the receiver's
 * first attach (docs/lookup.md). Sizes: _kb = 1024 bytes, _mb = 1024 KB;
 * times in ns unless named _ms. Functions return 0 or -errno, never print. */
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
#define SHMB_LOOKUP_MIN_BATCH 4096          /* lookups per timed batch, at least */
#define SHMB_LOOKUP_MIN_POOL 131072        /* distinct requests, at least */
#define SHMB_LOOKUP_MAX_LOOKUPS 10000000
#define SHMB_LOOKUP_MAX_SEGMENTS 10000000
#define SHMB_LOOKUP_MAX_THREADS 256


/* Which rows: throughput (independent requests), latency (a chain), both. */
typedef enum shmb_lookup_mode {
    SHMB_LOOKUP_MODE_THROUGHPUT,
    SHMB_LOOKUP_MODE_LATENCY,
    SHMB_LOOKUP_MODE_BOTH,
} shmb_lookup_mode_t;

/* The order the peer registers its segments in, by address (descending:
 * Mooncake's, each buffer a fresh mmap below the last). */
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
    int count_given;          /* 1: num_lookups is each row's (each thread's) count, in
                               * shmb_lookup_bench_batches() batches; 0: lookups per batch */
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

/* The most /dev/shm space a run holds at once, in bytes: with peer_process,
 * the pages its tags land in (one group, or every paired system, at a time)
 * and 4 MiB; in one process 0 (sparse). 0 or shmb_lookup_bench_check's error. */
int shmb_lookup_bench_shm_bytes(const shmb_lookup_config_t *cfg, uint64_t *bytes);

#define SHMB_LOOKUP_PAIRED_ATTACH_ROUNDS 20  /* rounds of a paired first attach, at least */
#define SHMB_LOOKUP_PAIRED_MIN_ROUNDS 20     /* rounds of a paired translation, at least */
#define SHMB_LOOKUP_PAIRED_MAX_ROUNDS 10000  /* and at most */

/* A paired first attach's rounds: SHMB_LOOKUP_PAIRED_ATTACH_ROUNDS up to a
 * multiple of 2 x nsystems (whole blocks of shmb_paired_order). */
size_t shmb_lookup_bench_paired_attach_rounds(const shmb_lookup_config_t *cfg);

/* Each row's (each thread's) timed batches with count_given: num_lookups /
 * SHMB_LOOKUP_MIN_BATCH, at least 1; 0 (no bound) without. */
uint64_t shmb_lookup_bench_batches(const shmb_lookup_config_t *cfg);

/* Runs every selected path, systems then kernels, verified before timed,
 * and appends its rows (variant path, arg segments:N, note "verified P/P"):
 * throughput (step "") and/or latency ("latency"), mooncake's first_use,
 * with peer_process the Flow-IPC systems' attach; speedup: mooncake's (else
 * linear's) p50 / the row's. system_rows: variant "", a missing step
 * unmeasured. Paired (nsystems): shmb_paired_push_rows of the translation,
 * or with peer_process of the first attach. Returns 0, -errno, -EPROTO with
 * why (a wrong translation), -EPIPE when the peer died; leaves nothing. */
int shmb_lookup_bench_run(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why,
                          size_t why_cap);

/* The notes of shm_address_lookup_bench's table for cfg. */
int shmb_notes_lookup(shmb_report_t *report, shmb_notes_t *store, const shmb_lookup_config_t *cfg);

#ifdef __cplusplus
}
#endif

#endif
