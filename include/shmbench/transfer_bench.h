/*
 * transfer_bench: copy bandwidth between two SHM segments.
 *
 * src and dst are SHM segments of max_transfer_size_kb each, reserved with
 * posix_fallocate (their first write is not timed: a full /dev/shm is
 * reported at set-up, not as SIGBUS mid-copy), src filled with a
 * position-dependent pattern, both touched before timing. Sizes:
 * transfer_size_kb, doubling, up to and including max_transfer_size_kb. At
 * each size and method: one untimed transfer whose result is verified (no
 * method is timed unless it copies right), then exactly num_transfers
 * transfers in batches as even as possible, each at least as long as 100
 * timer overheads (so the timer is under 1% of it; with fewer transfers than
 * that, one shorter batch), unless time_per_size_ms runs out first (at least
 * one batch is always timed).
 * Every transfer copies src[0, size) to dst[0, size): small sizes stay in the
 * caches, as they do for perf bench mem memcpy.
 *
 * translate: each transfer first translates its destination through that
 * system's per-request path, as a request does, then copies: mooncake's
 * relocate over num_segments registered buffers (dst among them, mapped on
 * the untimed first transfer), flowipc_classic's base + offset,
 * flowipc_jemalloc's to_address over num_segments pools. One translation
 * alone is timed too (the median of batches), and each row's note says what
 * share of the row's median transfer it is: where translation stops
 * mattering.
 *
 * cold: each transfer writes a fresh SHM segment created as Mooncake's
 * createSharedMemory does, shm_open + ftruncate + mmap and nothing reserved,
 * so the tmpfs page allocation and the page faults of its first write are
 * part of the time; timed one by one. The segment must hold no page before
 * the copy and all after (fstat st_blocks), else -EPROTO. The copy is guarded
 * (shmb_copy_first_write): a /dev/shm that fills up during it gives -ENOSPC,
 * never a SIGBUS; the caller's up-front space check makes that rare.
 *
 * Rows: ns per transfer (mean, p50, ...); GB/s = size / p50 time (the
 * median, so that one preemption does not move it), each byte counted once,
 * 10^9 bytes per second; speedup = this row's GB/s / the warm memcpy row's of
 * the same size (a cold row's too: what the first write costs against a
 * copy into touched pages).
 *
 * peer: with cfg->peer (a peer started with shmb_transfer_bench_peer_start),
 * the copies run in that second process, as a receiver that writes into a
 * buffer another process created: this process creates, reserves and fills
 * src and dst as above; the peer attaches both by name (shm_open O_RDWR, an
 * fstat size check, mmap), touches them (reads src, writes dst), starts its
 * own copy team (threads, cpu) and, with translate, its own view of the
 * system, and then runs the same transfers and timed batches as this process
 * would, timing them itself; the samples come back through the peer's data
 * area. This process poisons dst before the peer's untimed transfer and again
 * before its timed ones, and checks dst against the pattern after each, so
 * every row is verified across the two processes. Cold rows: this process
 * creates each fresh segment (and checks its pages before and after, and its
 * bytes as above); the peer attaches it by name, untouched, and times its
 * first write, the page allocation in the peer as in a receiver that writes
 * a buffer first. Rows are the in-process rows, same names.
 */
#ifndef SHMBENCH_TRANSFER_BENCH_H
#define SHMBENCH_TRANSFER_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/copy.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/peer.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_TRANSFER_MAX_SIZES 64
#define SHMB_TRANSFER_MAX_KB (1ull << 30) /* 1 TiB */
#define SHMB_TRANSFER_MAX_TRANSFERS 1000000000ull
#define SHMB_TRANSFER_MAX_THREADS 256
#define SHMB_TRANSFER_PEER_DATA_BYTES (256u << 10) /* the peer's data area: samples come back in chunks of this */

typedef struct shmb_transfer_config {
    uint64_t transfer_size_kb;     /* first size (=4) */
    uint64_t max_transfer_size_kb; /* last size, included (=64 MB) */
    uint64_t num_transfers;        /* per size and method, exactly unless the budget ends (=1000) */
    int run[SHMB_COPY_METHODS];    /* 1: measure this method */
    int threads;                   /* split each transfer (=1) */
    int cpu;                       /* with threads > 1, pin them from this CPU on, within the
                                    * allowed set (shmb_copy_team_start); -1: not pinned */
    int cold;                      /* add cold rows (=0) */
    int verify;                    /* verify dst after the timed transfers too (=0) */
    int translate;                 /* 1: translate dst through `system` first (=0) */
    shmb_lookup_system_t system;   /* whose per-request path translates */
    uint64_t num_segments;         /* buffers or pools the translation searches (=100) */
    double time_per_size_ms;       /* budget per size and method (=1000) */
    double timer_overhead_ns;      /* sizes the batches */
    const char *shm_prefix;
    int repetition;                /* stamped into the rows */
    shmb_peer_t *peer;             /* NULL: copy in this process; else the peer of
                                    * shmb_transfer_bench_peer_start copies (=NULL) */
} shmb_transfer_config_t;

/* The sizes in bytes: transfer_size_kb KB, doubling, then max_transfer_size_kb
 * KB if doubling skips it. Returns how many, or -EINVAL (zero sizes, first
 * above the last, more than cap). */
int shmb_transfer_bench_sizes(const shmb_transfer_config_t *cfg, uint64_t *sizes, size_t cap);

/* /dev/shm space the run reserves at once, in bytes: src and dst, for cold
 * rows one more segment of the largest size, with a peer (cfg->peer not NULL,
 * started or not) its control segment. -EOVERFLOW if too large. */
int shmb_transfer_bench_shm_bytes(const shmb_transfer_config_t *cfg, uint64_t *bytes);

/* Runs every selected method at every size, appending rows (variant =
 * method, step "" or "cold", arg size_kb, threads, iterations = transfers
 * timed; bytes_per_second and items_per_second from p50; speedup against the
 * warm memcpy row of the same size when memcpy ran). Returns 0, -errno,
 * -ENOSPC (recorded as "first write") when /dev/shm filled up inside a cold
 * copy, -EINVAL (cold with translate), or -EPROTO when a copy or a
 * translation was wrong, with the method, size and first differing offset in
 * why, or a cold segment was not fresh. Leaves nothing in /dev/shm. */
int shmb_transfer_bench_run(const shmb_transfer_config_t *cfg, shmb_rows_t *rows, char *why,
                            size_t why_cap);

/* Starts the peer that does the copies of shmb_transfer_bench_run when
 * cfg->peer points to it: shmb_peer_start() with this module's handler and a
 * data area of SHMB_TRANSFER_PEER_DATA_BYTES, so the same rules hold (call it
 * from the main thread while the process is single-threaded; the peer's
 * threads inherit this thread's CPU affinity; end it with shmb_peer_stop()).
 * One peer serves any number of runs, one at a time. With a peer, every
 * error of shmb_transfer_bench_run may also be one that happened in the peer
 * (recorded here again), and -EPIPE means the peer died (see peer.h); the
 * run still leaves nothing of its own in /dev/shm. Returns 0, -ENOMEM or
 * shmb_peer_start's error. */
int shmb_transfer_bench_peer_start(shmb_peer_t *peer, const char *prefix);

#ifdef __cplusplus
}
#endif

#endif
