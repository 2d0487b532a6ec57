/* transfer_bench: copy bandwidth between two SHM buffers per size and copy
 * method; with a system, the whole request and its parts; cold rows, a
 * second process that copies, paired runs of several systems. Every copy,
 * translation and request is verified before it is timed; a wrong one
 * fails the run, it is never a row. docs/transfer.md says what each row
 * measures and how. */
#ifndef SHMBENCH_TRANSFER_BENCH_H
#define SHMBENCH_TRANSFER_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/notes.h"
#include "shmbench/backing.h"
#include "shmbench/copy.h"
#include "shmbench/paths.h"
#include "shmbench/mooncake.h"
#include "shmbench/paired.h"
#include "shmbench/peer.h"
#include "shmbench/progress.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_TRANSFER_MAX_KB (1ull << 30) /* 1 TiB */
#define SHMB_TRANSFER_MAX_TRANSFERS 1000000000ull
#define SHMB_TRANSFER_MAX_THREADS 256
#define SHMB_TRANSFER_MAX_PER_SUBMIT 65536 /* descriptors_per_submit, at most */

typedef struct shmb_transfer_config {
    uint64_t transfer_size_kb;     /* first size (=4) */
    uint64_t max_transfer_size_kb; /* last size, included (=64 MB) */
    uint64_t num_transfers;        /* per size and method, exactly unless the budget ends (=1000) */
    int count_given;               /* 1: num_transfers was asked for (--num_transfers given): the parts
                                    * that move no bytes run it (one batch at least), not 31 batches;
                                    * a paired part's rounds go down to SHMB_PAIRED_MIN_ROUNDS */
    int run[SHMB_COPY_METHODS];    /* 1: measure this method */
    int threads;                   /* split each transfer (=1) */
    shmb_progress_t *progress;     /* NULL: none; else told each step between timed phases (shmbench/progress.h) */
    int cpu;                       /* with threads > 1, pin them from this CPU on, within the
                                    * allowed set (shmb_copy_crew_start); -1: not pinned */
    int cold;                      /* add cold rows (=0) */
    int verify;                    /* verify dst after the timed transfers too (=0) */
    int translate;                 /* 1: translate dst through `system` first (=0) */
    shmb_system_t system;   /* whose per-request path translates */
    uint64_t num_segments;         /* buffers or pools the translation searches (=100) */
    double time_per_size_ms;       /* budget per size and method (=1000) */
    double timer_overhead_ns;      /* sizes the batches */
    const char *shm_prefix;
    int repetition;                /* stamped into the rows */
    shmb_peer_t *peer;             /* NULL: copy in this process; else the peer of
                                    * shmb_transfer_bench_peer_start copies (=NULL) */
    shmb_backing_config_t backing; /* src, dst and the cold buffers (=tmpfs; its shm_prefix
                                    * unused: shm_prefix above names them) */
    shmb_backing_residency_t *granted; /* not NULL: receives src's and dst's residency
                                        * (summed, smaps) once they are ready */
    size_t nsystems;               /* > 0: a paired run of systems[0..nsystems), 2 at least: the
                                    * baseline first, its A/A control (the baseline again) last;
                                    * translate, cold and peer must then be 0 (=0) */
    shmb_system_t systems[SHMB_PAIRED_MAX_SYSTEMS];
    int zero_copy;                 /* paired only: the zero_copy rows alone, per size (=0) */
    uint64_t descriptors_per_submit; /* > 1: request and request_path submit this many descriptors of the
                                      * size in one batch, rows per descriptor (0 or 1: one; with a system
                                      * or systems, no peer, no zero_copy) */
    int submitters;                /* paired only: > 1: each system's batch run by this many threads at once
                                    * (pinned from cpu on) over the same registrations, engine and
                                    * translation, each into its own part of dst; rows per request one
                                    * submitter sees, threads = this; no zero_copy, threads 1 (0, 1: one) */
} shmb_transfer_config_t;

/* /dev/shm space the run reserves at once, in bytes: src and dst (tmpfs
 * backing only), for cold rows one more segment of the largest size, with a peer (cfg->peer not NULL,
 * started or not) its control segment, with mooncake_upstream TENT's buffers (all written when
 * registered). -EOVERFLOW if too large. */
int shmb_transfer_bench_shm_bytes(const shmb_transfer_config_t *cfg, uint64_t *bytes);

/* Appends the sweep's rows (shmb_row_t: variant the method or part, step
 * "" or "cold", arg size_kb; rates from p50; speedup against the warm
 * memcpy row; paired: each system's rows, then its ratio rows to the
 * baseline). 0, -EINVAL (a config that cannot run), -ENOTSUP (a method
 * this machine lacks), -ENOSPC (recorded as "first write": /dev/shm filled
 * during a cold copy), -EPROTO (a wrong copy, translation, request or cold
 * segment: why says which), or -errno. Leaves nothing in /dev/shm. */
int shmb_transfer_bench_run(const shmb_transfer_config_t *cfg, shmb_rows_t *rows, char *why,
                            size_t why_cap);

/* Starts the peer process that does the copies of runs whose cfg->peer
 * points to it (shmb_peer_start's rules; end it with shmb_peer_stop), one
 * run at a time. A run's error may then be the peer's; -EPIPE: it died.
 * Returns 0, -ENOMEM or shmb_peer_start's error. */
int shmb_transfer_bench_peer_start(shmb_peer_t *peer, const char *prefix);

/* shm_transfer_bench: the methods run (memcpy, nt), cold rows, a system's
 * translation (cfg->translate, over cfg->num_segments), a peer process
 * (cfg->peer), a paired run (cfg->nsystems: its systems, baseline, control,
 * rounds, ratio rows and verdicts). */
int shmb_notes_transfer(shmb_report_t *report, shmb_notes_t *store, const shmb_transfer_config_t *cfg);

/* shm_transfer_bench --workload --systems: the lines of a paired replay of
 * systems[0..n) (the baseline first, its control last; n >= 2, else
 * -EINVAL), with mooncake's relocate path when it is not the default:
 * appended after the notes report->notes holds already; returns the notes'
 * new count. (The sweep's are shmb_notes_transfer's, with cfg->nsystems.) */
int shmb_notes_transfer_paired(shmb_report_t *report, shmb_notes_t *store, const shmb_system_t *systems,
                               size_t n);

/* The note of src and dst on a backing other than tmpfs (shm_transfer_bench
 * and its --workload replay): the backing, its page, how the buffers were
 * made ready, then `copies` (what a copy reads and writes), and with
 * granted what the kernel granted them (read back after the set-up).
 * Composed into store; NULL for tmpfs or a kind outside the enum, or when
 * store is full. */
const char *shmb_notes_backing(shmb_notes_t *store, const shmb_backing_config_t *backing,
                               const shmb_backing_residency_t *granted, const char *copies);

#ifdef __cplusplus
}
#endif

#endif
