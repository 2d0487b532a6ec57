/* handoff_bench: Flow-IPC's object hand-off per object, SHM-classic and
 * SHM-jemalloc (lend, the handle's message, borrow, read, release, and
 * SHM-jemalloc's return), each hand-off's tags checked and each flavour's
 * own step-by-step check run before anything is timed (docs/lookup.md).
 * Functions return 0 or -errno and never print or exit. */
#ifndef SHMBENCH_HANDOFF_BENCH_H
#define SHMBENCH_HANDOFF_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/notes.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_HANDOFF_MAX_OBJECT_KB (64u * 1024u) /* the largest object (64 MB) */
#define SHMB_HANDOFF_MAX_COUNT 10000000u          /* the most hand-offs asked for */
#define SHMB_HANDOFF_BATCH 256u                   /* hand-offs per timed batch in one process, at most */
#define SHMB_HANDOFF_STEP "handoff"               /* the per-object row's step */
#define SHMB_HANDOFF_POOL_STEP "pool_once"        /* the one-time row: each pool lent to the borrower */

typedef struct shmb_handoff_bench_config {
    int run_system[SHMB_SYSTEMS]; /* 1: rows for this system (mooncake: unmeasured rows only,
                                          * with system_rows) */
    int system_rows;        /* 1: exactly one system runs; rows named by step only */
    uint64_t object_kb;     /* bytes of each object / 1024 (the lookup's request length) */
    uint64_t count;         /* hand-offs timed per flavour, at least */
    double min_time_ms;     /* and for at least this long per flavour */
    int peer_process;       /* 1: the borrower is a forked process, messages cross */
    uint64_t seed;          /* the tags */
    const char *shm_prefix; /* names of the pools */
    uint64_t segments;      /* the rows' argument segments:N (to pair with the lookup's rows) */
    int repetition;         /* stamped into the rows */
} shmb_handoff_bench_config_t;

/* Hand-offs per timed batch without a peer, for objects of object_kb:
 * as many as fit in 256 MB, 16 to SHMB_HANDOFF_BATCH. */
size_t shmb_handoff_bench_batch(uint64_t object_kb);

/* -EINVAL for no system selected, system_rows with more than one,
 * object_kb outside 1..SHMB_HANDOFF_MAX_OBJECT_KB, count outside
 * 1..SHMB_HANDOFF_MAX_COUNT, a negative min_time_ms or a bad prefix. */
int shmb_handoff_bench_check(const shmb_handoff_bench_config_t *cfg);

/* The hand-off run beside lookup's: its Flow-IPC systems (any with
 * system_rows), objects of its request length, its count (min_time_ms 0
 * with count_given), peer, seed, prefix, segments, repetition. 1 (*out
 * written), 0 (nothing to run), -EINVAL (requests over the largest object). */
int shmb_handoff_bench_config_from_lookup(const shmb_lookup_config_t *lookup, int enabled,
                                          shmb_handoff_bench_config_t *out);

/* Appends per selected flavour (classic, then jemalloc) the row step
 * SHMB_HANDOFF_STEP (ns per hand-off, "verified N/N, <crossing>") and
 * jemalloc's SHMB_HANDOFF_POOL_STEP (a sample per pool lent); system_rows:
 * variant "", a missing step unmeasured. Without peer_process the speedup
 * is mooncake's translation p50 (step "", else "latency") in rows / the
 * row's. Returns 0, -errno, -EPROTO with why, -EPIPE (the borrower died);
 * leaves nothing. */
int shmb_handoff_bench_run(const shmb_handoff_bench_config_t *cfg, shmb_rows_t *rows, char *why,
                           size_t why_cap);

/* The hand-off rows' notes, after shmb_notes_lookup's; the notes' new count. */
int shmb_notes_handoff(shmb_report_t *report, shmb_notes_t *store, const shmb_handoff_bench_config_t *cfg);

#ifdef __cplusplus
}
#endif

#endif
