/*
 * handoff_bench: what Flow-IPC's object hand-off costs per object, for
 * SHM-classic and SHM-jemalloc (shmbench/fipc_classic.h and
 * shmbench/fipc_jemalloc.h model the calls): the lender lends an object
 * it constructed, the handle travels to the borrower, which borrows it,
 * reads it and releases it, and (SHM-jemalloc) its return message travels
 * back to the lender, which frees the object. This is the object-API
 * design; the lookup's steady flowipc_* rows stand for the other one,
 * where each pool is borrowed once and requests carry offsets.
 *
 * Per hand-off k, the lender writes a tag derived from the seed and k at
 * the object's first and last 8 bytes (while constructing it: untimed, as
 * the construct is an allocation, the alloc benchmark's question); the
 * borrower reads both through the pointer it borrowed and compares them,
 * and checks what the return names and that the object was freed exactly
 * once. Before anything is timed, each flavour's own step-by-step check
 * runs (shmb_fipc_classic_handoff_verify, shmb_fipc_handoff_verify).
 *
 * With peer_process, a forked borrower process talks to this one over a
 * shmbench/channel.h socket pair: both messages really cross, and each
 * hand-off is timed alone (lend ... the lender's free after the return
 * for SHM-jemalloc; lend ... this driver's own acknowledgement for
 * SHM-classic, which has no return message). Without it, the same calls
 * run in this process with no message crossing, timed in batches (batch
 * time / batch size, as for every sub-microsecond operation here).
 *
 * Functions return 0 or -errno and never print or exit.
 */
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

/* The hand-off's run beside a lookup run with cfg lookup: the Flow-IPC
 * systems it selects (every system with system_rows: rows of one system
 * pair with another's), objects of its request length, its count,
 * min_time_ms (0 with count_given: the count alone bounds it), peer_process, seed, prefix, segments and repetition. Returns
 * 1 (*out written) when there is something to run, 0 when not (enabled 0,
 * or neither a Flow-IPC system nor system_rows), -EINVAL when the requests
 * are longer than SHMB_HANDOFF_MAX_OBJECT_KB (the objects would be). */
int shmb_handoff_bench_config_from_lookup(const shmb_lookup_config_t *lookup, int enabled,
                                          shmb_handoff_bench_config_t *out);

/* Appends, for flowipc_classic then flowipc_jemalloc as selected, the row
 * step SHMB_HANDOFF_STEP (ns per hand-off; note "verified N/N" and whether
 * messages crossed), and for flowipc_jemalloc the row step
 * SHMB_HANDOFF_POOL_STEP (one sample per pool lent: lend, the LendPool
 * message, the borrower's attach, its response; once per pool and peer).
 * With system_rows the variant is empty and a system without such a step
 * (mooncake: both; flowipc_classic: the pool lend) gets an unmeasured row.
 * Otherwise, without peer_process, each hand-off row's speedup is the p50
 * of mooncake's translation row (variant "mooncake", step "" or else
 * "latency", same segments and repetition) already in rows / the row's
 * p50, when there is one: both rows are the calls of one process. With
 * peer_process there is none: the hand-off's figure is then mostly its two
 * crossings through the kernel, which carry the request in that design and
 * have no counterpart in Mooncake's one-sided relocate.
 * Returns 0, -errno, or -EPROTO when a check failed, with the details in
 * why. With peer_process, -EPIPE recorded as the call "peer process" (with
 * how it ended) when the borrower died. Leaves nothing in /dev/shm and no
 * process behind. */
int shmb_handoff_bench_run(const shmb_handoff_bench_config_t *cfg, shmb_rows_t *rows, char *why,
                           size_t why_cap);

/* shm_address_lookup_bench's hand-off rows (shmbench/handoff_bench.h):
 * what is timed, with or without a peer process, what the speedup divides,
 * and which design the handoff and the steady flowipc_* rows stand for.
 * Appended after the notes report->notes holds already (after
 * shmb_notes_lookup); returns the notes' new count. */
int shmb_notes_handoff(shmb_report_t *report, shmb_notes_t *store, const shmb_handoff_bench_config_t *cfg);

#ifdef __cplusplus
}
#endif

#endif
