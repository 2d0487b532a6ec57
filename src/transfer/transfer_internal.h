/* transfer_internal: the transfer driver's files and what its tests reach;
 * not installed. Calls go down: transfer_bench.c (the sweep) -> the modes
 * (transfer_paired.c, transfer_workload.c, transfer_peer.c: the peer's
 * side) -> transfer_rows.c -> the parts (transfer_copier.c,
 * transfer_handoff.c, transfer_upstream*.c) -> transfer_config.c,
 * transfer_run.c, transfer_buffers.c -> models/ and base/.
 * docs/transfer.md says what a run measures. */
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
#define SHMB_TRANSFER_NOT_UPSTREAM "not possible upstream (borrowers map pools read-only)"
#define SHMB_TRANSFER_WRITE_PATH "alloc, write, lend, 2 msgs crossed, free" /* SHM-jemalloc's request */

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

/* What a row times, per operation: without a system only the copy. */
typedef enum shmb_transfer_part {
    SHMB_TRANSFER_COPY,         /* the copy alone: src[0, size) -> dst */
    SHMB_TRANSFER_REQUEST_PATH, /* TENT's submit path, no translation and no copy */
    SHMB_TRANSFER_TRANSLATE,    /* the system's translation of dst alone */
    SHMB_TRANSFER_REQUEST,      /* the request path calling the translation and the copy; SHM-jemalloc
                                 * with a hand-off link: its write path */
    SHMB_TRANSFER_ZERO_COPY,    /* mooncake: the whole request; a Flow-IPC flavour: its hand-off, no copy */
    SHMB_TRANSFER_COPY_OUT,     /* the reader's copy of a borrowed object into its own buffer (dst) */
    SHMB_TRANSFER_SUBMIT,       /* the request path calling the translation, no copy: what mooncake_upstream's
                                 * submit runs (its copy a no-op), paired only beside it */
    SHMB_TRANSFER_PARTS
} shmb_transfer_part_t;

/* With a system, the remote side as the request sees it: dst is buffer (or
 * pool) `index` of num_segments registrations; the others are never used. */
typedef struct shmb_transfer_translation {
    int system;            /* a shmb_system_t; -1: no system (copies only) */
    uint64_t index;
    uint64_t remote_addr;  /* dst's address as the remote side registered it */
    uint64_t offset;       /* a submitter's part of dst: requests name remote_addr + offset, and dst.addr is there */
    uint64_t buffer_addr;  /* base of the engine's registration holding dst (a pool's, for a Flow-IPC flavour) */
    char dst_path[SHMB_SEGMENT_NAME_MAX + 1]; /* dst's SHM name, or "memfd:<kind>" */
    shmb_path_state_t path; /* the system's path, set up over that view */
    int path_set_up;
    shmb_mooncake_engine_t *engine; /* the request path, over the same registrations */
    shmb_copy_fn copy;     /* the request's copy (the method of the row being measured) */
    uint64_t missed;       /* translations or requests that did not give dst */
    shmb_handoff_link_t *handoff; /* the lender and its borrower process; NULL: no hand-off */
    shmb_handoff_object_t obj;    /* the request's object, between its construct and its hand-off */
    int handoff_err;              /* the first hand-off that failed (-errno), its reason in the link's why */
    int check_payload;            /* 1: the borrower checks the payload too (the check before timing) */
    shmb_mooncake_request_t *reqs;   /* a submit's descriptors (cfg's descriptors_per_submit, 1 at least) */
    shmb_mooncake_submitted_t *outs; /* what each did */
    struct shmb_transfer_upstream *upstream; /* mooncake_upstream: TENT's engines (transfer_upstream.c) */
    struct shmb_transfer_fipcup *fipcup;     /* flowipc_jemalloc_upstream: its repository (transfer_upstream_fipc.c) */
    uint64_t spread; /* beside mooncake_upstream: translate and submit go round all num_segments buffers (0: dst's) */
    uint64_t next;   /* spread: the buffer the next request goes to (request i: buffer i mod num_segments) */
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

/* ---- transfer_config.c, transfer_run.c, transfer_buffers.c: the
 * configuration, the run's state and rows, its buffers ---- */

/* The sizes in bytes: transfer_size_kb KB, doubling (x4 for zero_copy), then
 * max_transfer_size_kb KB. How many, or -EINVAL (none, first above last, over cap). */
int shmb_transfer_bench_sizes(const shmb_transfer_config_t *cfg, uint64_t *sizes, size_t cap);

/* -EINVAL unless cfg's sizes, transfers, threads and translation can run. */
int shmb_transfer_bench_config_check(const shmb_transfer_config_t *cfg);


/* -EINVAL unless systems[0..n) can pair: 2 to SHMB_PAIRED_MAX_SYSTEMS, the last the first. */
int shmb_transfer_systems_check(const shmb_system_t *systems, size_t n);

/* r empty, for cfg (NULL: set later), no segment, reasons into why. */
void shmb_transfer_bench_run_init(shmb_transfer_run_t *r, const shmb_transfer_config_t *cfg, char *why,
                                  size_t why_cap);

/* A buffer of at least bytes on cfg's backing, mapped; with ready, every
 * page in place (tmpfs reserved, the others prefaulted, guarded). Nothing left on failure. */
int shmb_transfer_create_buffer(const shmb_transfer_run_t *r, shmb_segment_t *seg, uint64_t bytes, int ready);

/* 0, or -EPROTO with why naming m, size, `when` and the first differing offset. */
int shmb_transfer_verify_copy(shmb_transfer_run_t *r, shmb_copy_method_t m, const void *dst, uint64_t size,
                              const char *when);

/* The row name of a part ("request_path", ...); NULL for the copy, whose rows carry their method's. */
const char *shmb_transfer_part_name(shmb_transfer_part_t part);

/* The part moves bytes (or makes them the reader's): its row has a rate. */
int shmb_transfer_part_copies(shmb_transfer_part_t part);

/* The shortest timed batch: 100 timer overheads (the timer under 1%), 2 us at least. */
double shmb_transfer_min_batch_ns(double timer_overhead_ns);

/* Appends one sample to r->samples; -ENOMEM recorded as malloc. */
int shmb_transfer_bench_add_sample(shmb_transfer_run_t *r, double ns);

/* The row of r->samples for part: rates from the median, a copy's kernel in its note. */
int shmb_transfer_bench_push_row(shmb_transfer_run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part,
                                 shmb_copy_method_t m, uint64_t size, const char *step, uint64_t transfers);

/* With more than one descriptor per submit for part, row's argument shown
 * as "<size_kb>/per_submit:N" (its name .../size_kb:4/per_submit:32/...). */
void shmb_transfer_per_submit_arg(shmb_row_t *row, const shmb_transfer_config_t *cfg, shmb_transfer_part_t part);

/* row's rates from its median: bytes only for the parts that move them. */
void shmb_transfer_rates(shmb_row_t *row, shmb_transfer_part_t part, uint64_t size);

/* Each non-NULL part's note its share of req's p50, req's the copy and what
 * the parts (and `more` ns) add up to; fixed-point, never e-notation. */
void shmb_transfer_share_notes(shmb_row_t *req, shmb_row_t *const *parts, size_t n, double more, const char *copy);

/* dst and src destroyed where made: 0 or the first error. */
int shmb_transfer_buffers_destroy(shmb_transfer_run_t *r);

/* Each row's speedup from first on (a ratio row's, its ratio, is kept)
 * against the warm memcpy row of the same size. */
void shmb_transfer_bench_speedups(shmb_rows_t *rows, size_t first);

/* A system's name, mooncake_upstream's too (shmb_system_name knows the paths table's). */
const char *shmb_transfer_system_name(shmb_system_t system);

/* The row names of a paired run's systems, the last with SHMB_PAIRED_CONTROL_SUFFIX. */
typedef struct shmb_transfer_paired_names {
    char text[SHMB_PAIRED_MAX_SYSTEMS][48]; /* a name and the control suffix */
    const char *v[SHMB_PAIRED_MAX_SYSTEMS];
} shmb_transfer_paired_names_t;

void shmb_transfer_paired_names(const shmb_system_t *systems, size_t n, shmb_transfer_paired_names_t *out);

/* A sweep's progress, in KB (a size's time grows with it): the plan is the
 * sizes' sum; each size a step named prefix + the size, *kb then past it. */
void shmb_transfer_progress_plan(shmb_progress_t *progress, const uint64_t *sizes, size_t n);
void shmb_transfer_progress_size(shmb_progress_t *progress, uint64_t *kb, uint64_t size, const char *prefix);

/* Descriptors per operation of part: cfg's descriptors_per_submit for the
 * request and request_path, else 1. */
uint64_t shmb_transfer_descriptors(const shmb_transfer_config_t *cfg, shmb_transfer_part_t part);

/* 0, or -EPROTO: each of part's descriptors' destination in dst (descriptor
 * i at i * size) verified as shmb_transfer_verify_copy. */
int shmb_transfer_verify_descriptors(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                                     uint64_t size, const char *when);

/* ---- transfer_copier.c: the side that copies ---- */

/* Its crew of cfg->threads and, with a system, the translation started. Stop
 * releases what start made (nothing for what it did not), and the samples. */
int shmb_transfer_bench_copier_start(shmb_transfer_run_t *r);
void shmb_transfer_bench_copier_stop(shmb_transfer_run_t *r);

/* The system's path over num_segments registrations of dst's size and the
 * request path over those its design makes, src the local segment; dst
 * translated once (mooncake attaches it here), a miss counted. */
int shmb_transfer_bench_translation_start(shmb_transfer_run_t *r);
void shmb_transfer_bench_translation_stop(shmb_transfer_run_t *r);

/* v (initialised for its own system) over owner's src, dst and crew, its translation started. */
int shmb_transfer_view_start(shmb_transfer_run_t *v, const shmb_transfer_run_t *owner);

/* Submitter `offset`'s view of v (started): v's src, translation state and
 * engine, shared; its own dst part at offset and its own descriptors.
 * Stop frees what start made (never v's). */
int shmb_transfer_submitter_start(shmb_transfer_run_t *sub, const shmb_transfer_run_t *v, uint64_t offset);
void shmb_transfer_submitter_stop(shmb_transfer_run_t *sub);

/* count operations of a part not handed over, for size bytes with kernel
 * fn; a translation or request that does not give dst counts in missed. */
void shmb_transfer_copier_part(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size,
                               uint64_t count);

/* The request path's hooks (ctx = the run): the system's translation of
 * [addr, addr + len) of dst, and the copy with r->translation.copy on r's crew. */
int shmb_transfer_translate_dst(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local);
void shmb_transfer_copy_request(void *ctx, void *dst, const void *src, uint64_t len);

/* ---- transfer_upstream.c: mooncake_upstream, TENT's own code ---- */

/* TENT's two engines over num_segments buffers of dst's size, each
 * requested and relocated into once and checked (their hit paths after),
 * dst the middle one as the model's; stop frees them (none: a no-op). */
int shmb_transfer_upstream_start(shmb_transfer_run_t *r);
void shmb_transfer_upstream_stop(shmb_transfer_run_t *r);

/* count operations of translate (relocateSharedMemoryAddress) or submit
 * (allocateBatch, submitTransfer, getTransferStatus, freeBatch); one that
 * fails or lands elsewhere than checked at start counts in missed, as does
 * a part upstream code does not cover. */
void shmb_transfer_upstream_part(shmb_transfer_run_t *r, shmb_transfer_part_t part, uint64_t size, uint64_t count);

/* The last operation's landing checked through the target's own mapping
 * (a tag written there reads back); -EPROTO with why set if not. */
int shmb_transfer_upstream_check(shmb_transfer_run_t *r, shmb_transfer_part_t part);

/* Spread (the model's view or upstream's): the part run once starting at
 * each buffer in turn, every landing checked (upstream's through the
 * target's mapping: -EPROTO with why; a wrong one of either counts in
 * missed); next back at 0. */
int shmb_transfer_spread_check(shmb_transfer_run_t *r, shmb_transfer_part_t part, uint64_t size);
int shmb_transfer_upstream_sweep(shmb_transfer_run_t *r, shmb_transfer_part_t part, uint64_t size);

/* Test hook (transfer_run.c, read by both upstreams' views), 0 in a real run: b + 1 makes spread buffer
 * b land 64 bytes off (the model's mapped there, upstream's taken there). */
extern uint64_t shmb_transfer_bench_wrong_landing;

/* ---- transfer_upstream_fipc.c: flowipc_jemalloc_upstream, Flow-IPC's own repository ---- */

/* Upstream's Borrower_shm_pool_repository with the model's pools (dst the
 * middle one), dst's to_address checked; stop frees it (none: a no-op). */
int shmb_transfer_fipcup_start(shmb_transfer_run_t *r);
void shmb_transfer_fipcup_stop(shmb_transfer_run_t *r);

/* count to_address of dst's pool and offset (translate); one that lands
 * elsewhere counts in missed, as does any other part (not covered). */
void shmb_transfer_fipcup_part(shmb_transfer_run_t *r, shmb_transfer_part_t part, uint64_t size, uint64_t count);

/* The last landing dst's, and upstream's from_address says so; -EPROTO with why if not. */
int shmb_transfer_fipcup_check(shmb_transfer_run_t *r, shmb_transfer_part_t part);

/* ---- transfer_handoff.c: the object hand-off ---- */

/* A link for the flavours of flavour[] (by system), objects up to max bytes:
 * its borrower process started, each flavour opened. Nothing left on failure. */
int shmb_transfer_handoff_open(const shmb_transfer_config_t *cfg, const int flavour[SHMB_SYSTEMS],
                               uint64_t max, shmb_handoff_link_t **out, char *why, size_t why_cap);

/* SHM-jemalloc's (r's system, else nothing to do): the link its write
 * path hands objects over through, into r->translation.handoff. */
int shmb_transfer_handoff_writer(shmb_transfer_run_t *r, uint64_t max);

/* The link gone, its process reaped: run_ret, or the stop's error when it had none. */
int shmb_transfer_handoff_close(shmb_handoff_link_t *l, int run_ret);

/* Does r hand `part` over instead of running it as Mooncake does? */
int shmb_transfer_handoff_runs(const shmb_transfer_run_t *r, shmb_transfer_part_t part);

/* SHM-jemalloc's write path as the request path's hooks: translate
 * constructs the request's object in the writer's arena, copy writes it and
 * hands it over (a failure counts as missed, the first kept). */
shmb_mooncake_hooks_t shmb_transfer_handoff_hooks(shmb_transfer_run_t *r);

/* count operations of a handed-over part: SHM-jemalloc's write request (a
 * submit of the run's descriptors per submit, a hand-off each), or a
 * flavour's zero-copy hand-off; a failure counts as missed, the first kept. */
void shmb_transfer_handoff_part(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size,
                                uint64_t count);

/* One write of len bytes at src through SHM-jemalloc's write path, the
 * request naming remote: 1 when it went through, else 0. */
int shmb_transfer_handoff_write(shmb_transfer_run_t *r, void *src, uint64_t remote, uint64_t len);

/* -EPROTO (why set) or the first hand-off's error, once one failed or an
 * object was not freed exactly once. */
int shmb_transfer_handoff_verify(shmb_transfer_run_t *r);

/* copy_out's object: constructed in SHM-jemalloc's arena, size bytes of src
 * written into it, its payload at *payload. Release hands it over (the
 * borrower checks the payload unless ret < 0) and frees it; ret, or the verify's. */
int shmb_transfer_handoff_object(shmb_transfer_run_t *r, uint64_t size, shmb_handoff_object_t *o, void **payload);
int shmb_transfer_handoff_release(shmb_transfer_run_t *r, shmb_handoff_object_t *o, uint64_t size, int ret);

/* SHM-jemalloc's notes: its request row's ("write path: " what), its translate row's (not upstream). */
void shmb_transfer_handoff_notes(shmb_row_t *req, shmb_row_t *translate, const char *what);

/* ---- transfer_rows.c: the rows, here or in the peer ---- */

/* count operations of `part`, handed over or not (the runner's batch). */
void shmb_transfer_bench_part(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size,
                              uint64_t count);

/* Operations of `part` in a batch that dwarfs the timer (>= 100 timer
 * overheads, >= 2 us), found by doubling batches (base/runner). */
uint64_t shmb_transfer_bench_batch(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn,
                                   uint64_t size);

/* On the side that copies: one operation (timed = 0; *done = 1), or the
 * timed ones (their batch times in r->samples, their count in *done).
 * -EINVAL for a part other than the copy without a system. */
int shmb_transfer_bench_copy(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                             uint64_t size, int timed, uint64_t *done);

/* On the side that copies: the first write of size bytes of src into the
 * fresh pages at dst, timed into *ns; -ENOSPC when the backing fills up. */
int shmb_transfer_bench_first_write(shmb_transfer_run_t *r, shmb_copy_method_t m, void *dst, uint64_t size,
                                    uint64_t *ns);

/* src and dst of max bytes made ready, src filled, dst poisoned, the
 * copier started here or in the peer, its first translation checked. The
 * caller stops the copier and destroys the segments, also on error. */
int shmb_transfer_bench_prepare(shmb_transfer_run_t *r, uint64_t max);

/* -EPROTO, with the reason in why, once any translation, request or hand-off missed. */
int shmb_transfer_bench_verify_translations(shmb_transfer_run_t *r);

/* Before `part` is timed: dst poisoned, one operation (here or in the peer),
 * no miss, and dst holding the bytes where the part writes it. */
int shmb_transfer_bench_check(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                              uint64_t size);

/* The same check after a paired run's rounds (a failure says so). */
int shmb_transfer_bench_recheck(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                                uint64_t size);

/* A warm row of `part`: checked, timed, dst verified after (with verify or
 * a peer) where the part writes it, the row appended. */
int shmb_transfer_bench_warm(shmb_transfer_run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part,
                             shmb_copy_method_t m, uint64_t size);

/* The copy_out row of size: an object of the arena, copied out into dst
 * with m in this process (the borrower maps the same pages). */
int shmb_transfer_handoff_copy_out(shmb_transfer_run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size);

/* The owner's calls to its peer (r->cfg->peer): a fresh buffer's first
 * write there; detach. 0, the peer's error, or -EPIPE when it died. */
int shmb_transfer_peer_first_write(shmb_transfer_run_t *r, shmb_copy_method_t m, const shmb_segment_t *fresh,
                                   uint64_t size, uint64_t *ns);
int shmb_transfer_peer_detach(shmb_transfer_run_t *r);

/* ---- transfer_paired.c ---- */

/* Test hook, 0 in a real run: n gives submitter 1's own hand-off link a
 * wrong tag at its hand-off n - 1 (the link's wrong_tag). */
extern uint64_t shmb_transfer_bench_submitter_wrong_tag;


/* The paired run of shmb_transfer_bench_run (cfg checked, nsystems > 0)
 * over sizes[0..nsizes), the request copying with `first`. */
int shmb_transfer_bench_paired(const shmb_transfer_config_t *cfg, const uint64_t *sizes, size_t nsizes,
                               shmb_copy_method_t first, shmb_rows_t *rows, char *why, size_t why_cap);

#endif
