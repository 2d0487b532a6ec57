/*
 * transfer_bench: copy bandwidth between two SHM segments, per size and
 * copy method, optionally with each transfer's destination translated first
 * through a system's per-request path, with cold rows (the first write into
 * a fresh segment), and with the copies in a second process.
 *
 * Sizes: transfer_size_kb KB, doubling, up to and including
 * max_transfer_size_kb KB. At each size, every selected method gives a warm
 * row: num_transfers transfers of src[0, size) into dst[0, size) (buffers
 * whose pages are in place before timing), timed in batches long against
 * the timer, fewer when time_per_size_ms runs out first (never none). Every
 * method is verified before it is timed: a wrong copy fails the run, it is
 * never a row.
 *
 * cold: after each warm row, a cold row of the same method: each transfer
 * writes a fresh segment created as Mooncake's createSharedMemory does
 * (shm_open + ftruncate + mmap, nothing reserved), so its page allocation
 * and page faults are part of the time, timed one by one.
 *
 * backing: tmpfs is the above. memfd, thp and hugetlb (shmbench/backing.h):
 * src, dst and each cold buffer are of that backing (created, mapped, thp
 * advised before the first touch), rounded up to its page; src and dst are
 * prefaulted with a guarded write per page instead of posix_fallocate (which
 * would place thp's pages before the advice), and a peer receives them as
 * descriptors over its channel (SCM_RIGHTS) instead of by name.
 *
 * translate (a system): per size, the whole request and its parts, each a
 * row: request_path (the request path both designs keep: TENT's submit
 * path, shmbench/mooncake.h's engine, with no translation and no copy),
 * translate (`system`'s translation of dst alone, over num_segments
 * registered buffers or pools), the copy rows
 * (the copy alone, as without a system) and request (the request path
 * calling that translation and the copy of the first selected method, each
 * once). Each part's note gives its share of the request's median; the
 * request's names its copy and what the parts add up to. request_path and
 * translate move no bytes: they run num_transfers operations, or more when
 * that makes fewer than 31 batches long against the timer (with count_given,
 * only when it is less than one batch: a note says so).
 *
 * flowipc_jemalloc cannot take a one-sided write (its borrowers map lent
 * pools read-only): its request is its write path, the request path around
 * an object constructed in its own arena, the copy into it and the object
 * handed to a borrower process (lend, the handle, borrow, tag check,
 * release, the return, free); its translate row (to_address) stays as a
 * bound, noted not possible upstream; a copy_out row (the reader's copy of
 * the borrowed object into dst) follows each size's request (unmeasured
 * for the other systems, so that the runs pair row by row).
 *
 * zero_copy (paired only): per size (x4 from transfer_size_kb), the
 * zero_copy rows alone: mooncake's whole request against each Flow-IPC
 * flavour's hand-off of an object of that size to a borrower process, with
 * no copy (construct, lend, the handle, borrow, tag check, release;
 * flowipc_jemalloc: the return and the free).
 *
 * peer: the transfers run in a second process (shmb_transfer_bench_peer_start)
 * that attaches src and dst by name (tmpfs) or from their descriptors sent
 * over the peer's channel (the other backings), as a receiver writing into buffers
 * another process created, and times them itself; this process verifies
 * what it wrote. Rows keep their names.
 *
 * paired (nsystems > 0): the systems of systems[] in one process, as
 * shmbench/paired.h measures them: one src, one dst, and per system its own
 * translation and request path over them (the control, the baseline again,
 * a second, independent one), each checked before anything is timed. Per
 * size: request_path, translate and request paired (each round, one batch
 * of every system in the order of shmbench/paired.h; one batch size for all, the largest
 * of the systems' own; as many rounds as a --system run times batches, at
 * least 31 (SHMB_PAIRED_MIN_ROUNDS with count_given), fewer only once the systems together spent nsystems times
 * time_per_size_ms), each system's row (name .../system:NAME) then each
 * one's ratio row to the baseline (.../system:NAME/vs:BASELINE); the copy
 * rows once, unpaired, as without a system (the same code for every
 * system). Warm rows only, in this process: no cold, no peer.
 *
 * Rows: ns per transfer (mean, p50, ...); GB/s = size / p50 time (the
 * median, so that one preemption does not move it), each byte counted once,
 * 10^9 bytes per second; speedup = this row's GB/s / the warm memcpy row's
 * of the same size (a cold row's too: what the first write costs against a
 * copy into touched pages).
 */
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
} shmb_transfer_config_t;

/* /dev/shm space the run reserves at once, in bytes: src and dst (tmpfs
 * backing only), for cold rows one more segment of the largest size, with a peer (cfg->peer not NULL,
 * started or not) its control segment. -EOVERFLOW if too large. */
int shmb_transfer_bench_shm_bytes(const shmb_transfer_config_t *cfg, uint64_t *bytes);

/* Runs every selected method at every size, appending rows (variant =
 * method, step "" or "cold", arg size_kb, threads, iterations = transfers
 * timed; bytes_per_second and items_per_second from p50; speedup against the
 * warm memcpy row of the same size when memcpy ran); with translate, the
 * request's rows around them (variant request_path and translate before,
 * request after; no bytes_per_second for the first two); paired, the
 * request_path, translate and request rows of each system (system = its
 * name), each followed by the ratio rows (vs = the baseline; speedup = the
 * ratio, ns = the time saved per operation, shmb_paired_push_rows). Returns
 * 0, -errno, -ENOTSUP (a selected method this machine lacks), -ENOSPC
 * (recorded as "first write") when /dev/shm filled up inside a cold copy,
 * -EINVAL (no method, cold with translate; paired: fewer than 2 systems or more than SHMB_PAIRED_MAX_SYSTEMS,
 * a last one that is not the first, translate, cold or a peer), or
 * -EPROTO when a copy, a translation or a request was wrong, with the
 * method, size and first differing offset (or the system and how many
 * missed) in why, or a cold segment was not fresh. Leaves nothing in /dev/shm. */
int shmb_transfer_bench_run(const shmb_transfer_config_t *cfg, shmb_rows_t *rows, char *why,
                            size_t why_cap);

/* Starts the peer that does the copies of shmb_transfer_bench_run when
 * cfg->peer points to it: shmb_peer_start() with this module's handler and
 * data area, so the same rules hold (call it from the main thread while the
 * process is single-threaded; the peer's threads inherit this thread's CPU
 * affinity; end it with shmb_peer_stop()). One peer serves any number of
 * runs, one at a time. With a peer, every error of shmb_transfer_bench_run
 * may also be one that happened in the peer (recorded here again), and
 * -EPIPE means the peer died (see peer.h); the run still leaves nothing of
 * its own in /dev/shm. Returns 0, -ENOMEM or shmb_peer_start's error. */
int shmb_transfer_bench_peer_start(shmb_peer_t *peer, const char *prefix);

/* shm_transfer_bench: the methods run (memcpy, nt), cold rows, a system's
 * translation (cfg->translate, over cfg->num_segments), a peer process
 * (cfg->peer), a paired run (cfg->nsystems: its systems, baseline, control,
 * rounds, ratio rows and verdicts). */
int shmb_notes_transfer(shmb_report_t *report, shmb_notes_t *store, const shmb_transfer_config_t *cfg);

/* shm_transfer_bench --workload --systems: the lines of a paired replay of
 * systems[0..n) (the baseline first, its control last; n >= 2, else
 * -EINVAL): appended after the notes report->notes holds already; returns the notes'
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
