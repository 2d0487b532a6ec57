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

#include "shmbench/backing.h"
#include "shmbench/copy.h"
#include "shmbench/mooncake.h"
#include "shmbench/peer.h"
#include "shmbench/segment.h"
#include "shmbench/stats.h"
#include "shmbench/transfer_bench.h"

#include "models/handoff_internal.h"
#include "models/paths_internal.h"

#define SHMB_TRANSFER_MAX_SIZES 64
#define SHMB_TRANSFER_PEER_DATA_BYTES (256u << 10) /* the peer's data area: samples come back in chunks of this */
#define SHMB_TRANSFER_POISON 0xA5        /* dst before a copy is verified: never the pattern */
#define SHMB_TRANSFER_MIN_PART_BATCHES 31 /* batches of a part that moves no bytes, at least */

/* The commands of the peer (shmb_transfer_bench_peer_start). */
enum {
    SHMB_TRANSFER_OP_ATTACH = 1, /* name ("": the backing on the channel), arg0 = 0 (src) or 1 (dst),
                                  * arg1 = bytes: attach and touch */
    SHMB_TRANSFER_OP_SETUP,      /* the owner's config in the data area: start the copier; result:
                                  * how many translations missed dst (its first, verified there) */
    SHMB_TRANSFER_OP_COPY,       /* arg0 = method, arg1 = bytes, arg2 = 1: timed (else once), arg3 = the
                                  * part; results: operations, samples, translations that missed dst */
    SHMB_TRANSFER_OP_SAMPLES,    /* arg0 = first: samples from there into the data area; result: how many */
    SHMB_TRANSFER_OP_COLD,       /* name (as ATTACH), arg0 = method, arg1 = bytes: attach a fresh buffer, time its
                                  * first write; result: ns */
    SHMB_TRANSFER_OP_DETACH,     /* everything ATTACH and SETUP made is undone */
};

/* What a row times, per operation. Without a system only the copy; with
 * one, the parts of a whole request as src/transfer_bench.c says. */
typedef enum shmb_transfer_part {
    SHMB_TRANSFER_COPY,         /* the copy alone: src[0, size) -> dst */
    SHMB_TRANSFER_REQUEST_PATH, /* TENT's submit path, no translation and no copy */
    SHMB_TRANSFER_TRANSLATE,    /* the system's translation of dst alone */
    SHMB_TRANSFER_REQUEST,      /* the request path calling the translation and the copy; SHM-jemalloc
                                 * with a hand-off link: its write path (src/transfer_handoff.c) */
    SHMB_TRANSFER_ZERO_COPY,    /* mooncake: the whole request; a Flow-IPC flavour: its hand-off, no copy */
    SHMB_TRANSFER_COPY_OUT,     /* the reader's copy of a borrowed object into its own buffer (dst) */
    SHMB_TRANSFER_PARTS
} shmb_transfer_part_t;

/* The row name of a part: "request_path", "translate", "request",
 * "zero_copy", "copy_out" (the copy's rows carry their method's name: NULL). */
const char *shmb_transfer_part_name(shmb_transfer_part_t part);

/* With a system, the remote side as the request sees it: dst is buffer (or
 * pool) `index` of num_segments registrations; the others are never used.
 * The translation goes through the paths table (src/paths_internal.h). */
typedef struct shmb_transfer_translation {
    int system;            /* a shmb_system_t; -1: no system (copies only) */
    uint64_t index;
    uint64_t remote_addr;  /* dst's address as the remote side registered it */
    uint64_t buffer_addr;  /* base of the engine's registration holding dst (a pool's, for a Flow-IPC flavour) */
    char dst_path[SHMB_SEGMENT_NAME_MAX + 1]; /* dst's SHM path as registered: its name, or for a
                                               * memfd kind (no name) "memfd:<kind>" */
    shmb_path_state_t path; /* the system's path, set up over that view */
    int path_set_up;
    shmb_mooncake_engine_t *engine; /* the request path, over the same registrations */
    shmb_copy_fn copy;     /* the request's copy (the method of the row being measured) */
    uint64_t missed;       /* translations or requests that did not give dst */
    /* The object hand-off (src/transfer_handoff.c): SHM-jemalloc's write path, the zero-copy rows. */
    shmb_handoff_link_t *handoff; /* the lender and its borrower process; NULL: no hand-off */
    shmb_handoff_object_t obj;    /* the request's object, between its construct and its hand-off */
    int handoff_err;              /* the first hand-off that failed (-errno), its reason in the link's why */
    int check_payload;            /* 1: the borrower checks the payload too (the check before timing) */
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
 * cfg->translate, the system's path and the request path over the view of
 * dst, dst's first translation made (mooncake: it attaches) and checked
 * (a miss counted). Stop releases what start made, and the samples. */
int shmb_transfer_bench_copier_start(shmb_transfer_run_t *r);
void shmb_transfer_bench_copier_stop(shmb_transfer_run_t *r);

/* With cfg->translate: the system's path (the paths table) over
 * num_segments registrations of dst's size, and the request path over the
 * registrations the system's design makes (mooncake: those num_segments
 * buffers; flowipc_jemalloc: those num_segments pools; flowipc_classic: its
 * one pool holding them all), src the local segment; dst translated once (mooncake attaches it here), a miss counted.
 * Stop releases them (and does nothing for a translation not started). A
 * paired run starts one per system over the same src and dst. */
int shmb_transfer_bench_translation_start(shmb_transfer_run_t *r);
void shmb_transfer_bench_translation_stop(shmb_transfer_run_t *r);

/* -EPROTO, with the reason in why, once any translation or request missed dst. */
int shmb_transfer_bench_verify_translations(shmb_transfer_run_t *r);

/* In this process: count operations of `part` for size bytes with copy
 * kernel fn; a translation or a request that does not give dst is counted
 * in r->translation.missed (and copies nothing). */
void shmb_transfer_bench_part(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size,
                              uint64_t count);

/* How many operations of `part` make a batch that dwarfs the timer (at
 * least 100 timer overheads, at least 2 us), found by running doubling
 * batches. */
uint64_t shmb_transfer_bench_batch(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn,
                                   uint64_t size);

/* Before `part` is timed: dst poisoned, one operation (here or in the
 * peer), no translation missed, and for the parts that move bytes dst
 * holds them. 0, -EPROTO (why says what) or the copy's error. */
int shmb_transfer_bench_check(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                              uint64_t size);

/* A warm row of `part` (the copy: of method m; the request: copying with
 * m): checked (shmb_transfer_bench_check), the timed operations, then (with
 * verify, or a peer: its copies are verified here, across processes) dst
 * poisoned before them and verified after; the row appended. */
int shmb_transfer_bench_warm(shmb_transfer_run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part,
                             shmb_copy_method_t m, uint64_t size);

/* Each row's speedup from first on (a ratio row's, its ratio, is kept)
 * against the warm memcpy row of the same size: cold rows' too (what the
 * first write costs against a copy into touched pages), the request's too
 * (the rate at which a whole request moves bytes). */
void shmb_transfer_bench_speedups(shmb_rows_t *rows, size_t first);

/* The row names of a paired run's systems: each system's name, the last
 * (the control) with SHMB_PAIRED_CONTROL_SUFFIX; v[s] points into text. */
typedef struct shmb_transfer_paired_names {
    char text[SHMB_PAIRED_MAX_SYSTEMS][32];
    const char *v[SHMB_PAIRED_MAX_SYSTEMS];
} shmb_transfer_paired_names_t;

void shmb_transfer_paired_names(const shmb_system_t *systems, size_t n, shmb_transfer_paired_names_t *out);

/* The paired run of shmb_transfer_bench_run (cfg->nsystems > 0, cfg
 * checked), over sizes[0..nsizes), the request copying with `first`
 * (src/transfer_paired.c). */
int shmb_transfer_bench_paired(const shmb_transfer_config_t *cfg, const uint64_t *sizes, size_t nsizes,
                               shmb_copy_method_t first, shmb_rows_t *rows, char *why, size_t why_cap);

/* On the side that copies: one operation of `part` for size bytes (timed =
 * 0; *done = 1), or the timed operations (timed = 1), their batch times in
 * r->samples, their count in *done; m is the copy's method (of the copy and
 * the request). A translation or request that misses dst counts in
 * r->translation.missed. -EINVAL for a part other than the copy without a
 * system. */
int shmb_transfer_bench_copy(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                             uint64_t size, int timed, uint64_t *done);

/* On the side that copies: the first write of size bytes of src into the
 * fresh pages at dst, timed into *ns; -ENOSPC when /dev/shm fills up. */
int shmb_transfer_bench_first_write(shmb_transfer_run_t *r, shmb_copy_method_t m, void *dst, uint64_t size,
                                    uint64_t *ns);

/* src and dst of max bytes created, reserved, mapped, src filled with the
 * pattern and dst poisoned; the copier started here or in the peer; a first
 * translation that missed dst is -EPROTO. The caller stops the copier and
 * destroys the segments (as shmb_transfer_bench_run does), also on error. */
int shmb_transfer_bench_prepare(shmb_transfer_run_t *r, uint64_t max);

/* The request path's hooks (shmb_mooncake_hooks_t, ctx = the run): the
 * system's translation of [addr, addr + len) of dst through the paths
 * table, and the copy with r->translation.copy on r's crew. */
int shmb_transfer_translate_dst(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local);
void shmb_transfer_copy_request(void *ctx, void *dst, const void *src, uint64_t len);

/* ---- the object hand-off (src/transfer_handoff.c) ---- */

#define SHMB_TRANSFER_NOT_UPSTREAM "not possible upstream (borrowers map pools read-only)"

/* A hand-off link for the flavours of flavour[] (indexed by system) with
 * objects up to max bytes of payload: its borrower process started, each
 * flavour opened and checked. *out NULL on failure, nothing left. */
int shmb_transfer_handoff_open(const shmb_transfer_config_t *cfg, const int flavour[SHMB_SYSTEMS],
                               uint64_t max, shmb_handoff_link_t **out, char *why, size_t why_cap);

/* Everything of the link gone, its process reaped; run_ret as the run
 * ended (the result: run_ret, or the stop's error when it had none). */
int shmb_transfer_handoff_close(shmb_handoff_link_t *l, int run_ret);

/* Does r hand `part` over instead of running it as Mooncake does? */
int shmb_transfer_handoff_runs(const shmb_transfer_run_t *r, shmb_transfer_part_t part);

/* count operations of a part handed over (shmb_transfer_handoff_runs):
 * SHM-jemalloc's write request (the request path around construct, write
 * with fn, lend ... free), or a flavour's zero-copy hand-off (construct,
 * lend ... release, and SHM-jemalloc's return and free). A failure counts
 * as missed, the first kept in handoff_err. */
void shmb_transfer_handoff_part(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size,
                                uint64_t count);

/* One write of len bytes at src through SHM-jemalloc's write path (the
 * request path around construct, write with r->translation.copy, the
 * hand-off and the free), the request naming remote: 1 when it went
 * through (else a hand-off's failure is counted as above, or the request
 * path failed), 0 when not. */
int shmb_transfer_handoff_write(shmb_transfer_run_t *r, void *src, uint64_t remote, uint64_t len);

/* -EPROTO (why set) or the first hand-off's error, once one failed, or
 * when an object was not freed exactly once. */
int shmb_transfer_handoff_verify(shmb_transfer_run_t *r);

/* The copy_out row of size: an object of the arena filled with src's
 * bytes, copied out into dst with method m (checked, timed, verified), in
 * this process: the borrower maps the same pages. */
int shmb_transfer_handoff_copy_out(shmb_transfer_run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size);

/* SHM-jemalloc's notes beside its request row req: the write path's, and
 * on its translate row (to_address, kept as a bound) that it is not
 * possible upstream. */
void shmb_transfer_handoff_notes(shmb_row_t *req, shmb_row_t *translate);

/* The row of r->samples for part (transfer_bench.c's push_row). */
int shmb_transfer_bench_push_row(shmb_transfer_run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part,
                                 shmb_copy_method_t m, uint64_t size, const char *step, uint64_t transfers);

/* Appends one sample to r->samples; -ENOMEM recorded as malloc. */
int shmb_transfer_bench_add_sample(shmb_transfer_run_t *r, double ns);

/* The owner's calls to its peer (r->cfg->peer): attach src and dst of max
 * bytes and start the peer's copier with r->cfg (its misses come back); one
 * copy step of a part run there (its samples and misses come back); the first write of the fresh buffer there;
 * detach everything. A tmpfs buffer reaches the peer by name, the others as a
 * descriptor over the peer's channel, sent just before the command. 0 or the peer's error, -EPIPE when it died. */
int shmb_transfer_peer_attach(shmb_transfer_run_t *r, uint64_t max);
int shmb_transfer_peer_copy(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                            uint64_t size, int timed, uint64_t *done);
int shmb_transfer_peer_first_write(shmb_transfer_run_t *r, shmb_copy_method_t m, const shmb_segment_t *fresh,
                                   uint64_t size, uint64_t *ns);

/* The owner's buffer seg (src, dst or a cold one) as a backing of r->cfg's
 * kind: what shmb_backing_send and shmb_backing_residency take. */
shmb_backing_t shmb_transfer_bench_backing(const shmb_transfer_run_t *r, const shmb_segment_t *seg);
int shmb_transfer_peer_detach(shmb_transfer_run_t *r);

/* "PREFIX4 KB", "PREFIX64 MB": a size for the progress line, into buf. */
const char *shmb_transfer_bench_size_label(char *buf, size_t cap, uint64_t bytes, const char *prefix);

/* A sweep's progress (transfer_bench.c), counted in KB since a size's time
 * grows with it: the plan is the sizes' sum; each size a step named
 * prefix + the size, *kb then past it. */
void shmb_transfer_progress_plan(shmb_progress_t *progress, const uint64_t *sizes, size_t n);
void shmb_transfer_progress_size(shmb_progress_t *progress, uint64_t *kb, uint64_t size, const char *prefix);

#endif
