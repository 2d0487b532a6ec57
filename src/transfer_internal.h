/*
 * transfer_internal: what the two files of the transfer driver share, and
 * what its tests reach; not installed.
 *
 * src/transfer_bench.c runs the sizes and methods and makes the rows; the
 * side that copies (this process, or the peer process) does so with its
 * copier (threads and, with a system, that system's translation) and the
 * copy steps below. src/transfer_peer.c carries those steps to the peer:
 * the owner's calls (shmb_transfer_peer_*) and the peer's handler.
 */
#ifndef SHMBENCH_TRANSFER_INTERNAL_H
#define SHMBENCH_TRANSFER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/copy.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/mooncake.h"
#include "shmbench/peer.h"
#include "shmbench/segment.h"
#include "shmbench/stats.h"
#include "shmbench/transfer_bench.h"

#define SHMB_TRANSFER_MAX_SIZES 64
#define SHMB_TRANSFER_PEER_DATA_BYTES (256u << 10) /* the peer's data area: samples come back in chunks of this */

/* The commands of the peer (shmb_transfer_bench_peer_start). */
enum {
    SHMB_TRANSFER_OP_ATTACH = 1, /* name, arg0 = 0 (src) or 1 (dst), arg1 = bytes: attach and touch */
    SHMB_TRANSFER_OP_SETUP,      /* the owner's config in the data area: start the copier; results:
                                  * one translation's ns (the double's bits), translations missed */
    SHMB_TRANSFER_OP_COPY,       /* arg0 = method, arg1 = bytes, arg2 = 1: timed (else one transfer);
                                  * results: transfers, samples, translations that missed dst */
    SHMB_TRANSFER_OP_SAMPLES,    /* arg0 = first: samples from there into the data area; result: how many */
    SHMB_TRANSFER_OP_COLD,       /* name, arg0 = method, arg1 = bytes: attach a fresh segment, time its
                                  * first write; result: ns */
    SHMB_TRANSFER_OP_DETACH,     /* everything ATTACH and SETUP made is undone */
};

/* dst as a system's per-request path gives it: dst is buffer (or pool)
 * `index` of num_segments registrations of the remote side; the others are
 * never used. */
typedef struct shmb_transfer_translation {
    int system;            /* a shmb_lookup_system_t; -1: copies are not translated */
    uint64_t index;
    uint64_t remote_addr;  /* dst's address as the remote side registered it (mooncake) */
    shmb_mooncake_t *mooncake;
    shmb_fipc_repo_t *repo;
    double ns;             /* one translation, timed alone: median of batch means */
    uint64_t missed;       /* translations that did not give dst */
} shmb_transfer_translation_t;

/* One run, on the owner's side and, for its copies, on the peer's. */
typedef struct shmb_transfer_run {
    const shmb_transfer_config_t *cfg;
    shmb_segment_t src, dst;
    shmb_transfer_translation_t translation;
    shmb_copy_crew_t *crew;
    shmb_samples_t samples; /* of the size and method being measured */
    int peer_holds;         /* the owner's peer may hold attachments and a copier: detach it */
    char *why;
    size_t why_cap;
} shmb_transfer_run_t;

/* The sizes in bytes: transfer_size_kb KB, doubling, then max_transfer_size_kb
 * KB if doubling skips it. Returns how many, or -EINVAL (zero sizes, first
 * above the last, more than cap). */
int shmb_transfer_bench_sizes(const shmb_transfer_config_t *cfg, uint64_t *sizes, size_t cap);

/* -EINVAL unless cfg's sizes, transfers, threads and translation can run. */
int shmb_transfer_bench_config_check(const shmb_transfer_config_t *cfg);

/* r empty, for cfg (NULL: set later), no segment, reasons into why. */
void shmb_transfer_bench_run_init(shmb_transfer_run_t *r, const shmb_transfer_config_t *cfg, char *why,
                                  size_t why_cap);

/* The copier of the side that copies: its crew of cfg->threads and, with
 * cfg->translate, the system's view of dst, whose one-translation time it
 * measures. Stop releases what start made, and the samples. */
int shmb_transfer_bench_copier_start(shmb_transfer_run_t *r);
void shmb_transfer_bench_copier_stop(shmb_transfer_run_t *r);

/* On the side that copies: one transfer of size bytes (timed = 0; *done =
 * 1), or the timed transfers (timed = 1), their batch times in r->samples,
 * their count in *done. */
int shmb_transfer_bench_copy(shmb_transfer_run_t *r, shmb_copy_method_t m, uint64_t size, int timed,
                             uint64_t *done);

/* On the side that copies: the first write of size bytes of src into the
 * fresh pages at dst, timed into *ns; -ENOSPC when /dev/shm fills up. */
int shmb_transfer_bench_first_write(shmb_transfer_run_t *r, shmb_copy_method_t m, void *dst, uint64_t size,
                                    uint64_t *ns);

/* Appends one sample to r->samples; -ENOMEM recorded as malloc. */
int shmb_transfer_bench_add_sample(shmb_transfer_run_t *r, double ns);

/* The owner's calls to its peer (r->cfg->peer): attach src and dst of max
 * bytes and start the peer's copier with r->cfg (its one-translation time
 * and misses come back); one copy step run there (its samples and misses
 * come back); the first write of the fresh segment `name` there; detach
 * everything. 0 or the peer's error, -EPIPE when it died. */
int shmb_transfer_peer_attach(shmb_transfer_run_t *r, uint64_t max);
int shmb_transfer_peer_copy(shmb_transfer_run_t *r, shmb_copy_method_t m, uint64_t size, int timed,
                            uint64_t *done);
int shmb_transfer_peer_first_write(shmb_transfer_run_t *r, shmb_copy_method_t m, const char *name,
                                   uint64_t size, uint64_t *ns);
int shmb_transfer_peer_detach(shmb_transfer_run_t *r);

#endif
