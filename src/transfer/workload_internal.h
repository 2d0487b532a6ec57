/* workload_internal: the steps of the replay (transfer_workload.c) that its tests reach; not installed. */
#ifndef SHMBENCH_WORKLOAD_INTERNAL_H
#define SHMBENCH_WORKLOAD_INTERNAL_H

#include "shmbench/stats.h"
#include "shmbench/workload.h"

#include "transfer_internal.h"

/* One replay, on the transfer driver's run: src (the local KV cache) and
 * dst (the registered KV pool) of the largest request, the system's path
 * and the request path over dst's registration. */
typedef struct shmb_workload_replay {
    const shmb_workload_config_t *cfg;
    shmb_transfer_config_t tc;                /* the transfer driver's view of cfg */
    shmb_transfer_run_t r;
    shmb_copy_fn copy;                        /* the copy's kernel (a test may plant a broken one) */
    shmb_samples_t samples[SHMB_WORKLOAD_PARTS]; /* ns per request of each part */
    double bytes[SHMB_WORKLOAD_PARTS];        /* bytes the timed passes moved, per part */
    double ns[SHMB_WORKLOAD_PARTS];           /* and their time */
    size_t index;                             /* the request being replayed, for why */
    double hit_share;                         /* shape.reuse: % of the stream's blocks that hit, for the note */
    uint64_t per_submit;                      /* shmb_workload_per_submit: > 1, a request's descriptors batched */
    shmb_mooncake_request_t *reqs;            /* a batch's descriptors (room for cap) */
    shmb_mooncake_submitted_t *outs;          /* what each did */
    uint64_t cap;
} shmb_workload_replay_t;

/* Sets up a replay for requests of at most max_bytes: 0, -EINVAL (a bad
 * config), -ENOTSUP (the method is missing here) or the set-up's error.
 * Stop undoes it, whatever start returned. */
int shmb_workload_replay_start(shmb_workload_replay_t *w, const shmb_workload_config_t *cfg, uint64_t max_bytes,
                               char *why, size_t why_cap);
void shmb_workload_replay_stop(shmb_workload_replay_t *w);

/* Replays one request (w->index names it in why): each part timed and
 * checked, one sample each. 0, -EPROTO or -ENOMEM (recorded). */
int shmb_workload_replay_request(shmb_workload_replay_t *w, const shmb_workload_fanout_t *f);

/* Open-loop: before request f is due, dst poisoned (and SHM-jemalloc's
 * checked hand-off); then one pass of its request part, timed from start to
 * done, and checked. 0 or -EPROTO (why names it). */
int shmb_workload_replay_prepare(shmb_workload_replay_t *w, const shmb_workload_fanout_t *f);
int shmb_workload_replay_once(shmb_workload_replay_t *w, const shmb_workload_fanout_t *f, uint64_t *start,
                              uint64_t *done);

/* ---- workload_batch.c: sglang's request in one submit ---- */

/* Before request f (untimed): room for its batch when per_submit > 1. 0 or
 * -ENOMEM (recorded). Free releases it. */
int shmb_workload_batch_room(shmb_workload_replay_t *w, const shmb_workload_fanout_t *f);
void shmb_workload_batch_free(shmb_workload_replay_t *w);

/* One pass of f's descriptors through shmb_mooncake_engine_submit_n, in as
 * few submits as per_submit allows, hooks as the engine takes them (NULL:
 * the request path alone); each task's target checked against its
 * descriptor's place, a miss counted in r.translation.missed. */
void shmb_workload_batch_pass(shmb_workload_replay_t *w, const shmb_workload_fanout_t *f,
                              const shmb_mooncake_hooks_t *hooks);

/* After a batched request: 1 and the offset of the first byte of dst that
 * is not its descriptor's source's, or 0. */
int shmb_workload_batch_differs(const shmb_workload_replay_t *w, const shmb_workload_fanout_t *f, size_t *bad);

/* The closed-loop replays shmb_workload_run (workload_open.c) picks: one
 * system's, requests back to back; the paired one, request by request. */
int shmb_workload_closed_replay(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream,
                                const shmb_workload_totals_t *totals, shmb_rows_t *rows, char *why, size_t why_cap);
int shmb_workload_paired_replay(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream,
                                const shmb_workload_totals_t *totals, shmb_rows_t *rows, char *why, size_t why_cap);

/* The open-loop replay of cfg->system (shmb_workload_run with open_loop):
 * rows request (service) and latency (from the intended start). */
int shmb_workload_open_replay(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream,
                              uint64_t max_bytes, shmb_rows_t *rows, char *why, size_t why_cap);

/* An open-loop replay's times per request, in ns from t0 (the arrays hold
 * the stream's n each; the caller owns them). */
typedef struct shmb_workload_open {
    uint64_t t0_ns;                   /* CLOCK_MONOTONIC at the stream's first intended start */
    uint64_t *intended_ns, *issued_ns, *start_ns, *done_ns;
} shmb_workload_open_t;

/* The worker's side: prepare runs (untimed) before request i is due; serve
 * serves it, writing when its timed work began and ended (CLOCK_MONOTONIC)
 * and checking it after. Each returns 0 or -errno, which stops the run. */
typedef struct shmb_workload_server {
    int (*prepare)(void *ctx, size_t i);
    int (*serve)(void *ctx, size_t i, uint64_t *start_ns, uint64_t *done_ns);
    void *ctx;
} shmb_workload_server_t;

/* Request i's intended start: (its timestamp - the first's) / speed, in ns. */
uint64_t shmb_workload_intended_ns(const shmb_workload_stream_t *s, size_t i, double speed);

/* Replays s open-loop: an issuing thread releases request i at t0 +
 * intended (clock_nanosleep, absolute), the caller serves them in order;
 * latency = done - intended. 0, -EINVAL (speed <= 0, no request), the
 * server's error or pthread_create's (recorded). */
int shmb_workload_open_run(shmb_workload_open_t *o, const shmb_workload_stream_t *s, double speed,
                           const shmb_workload_server_t *server);

/* The hash ids a trace has shown, each with the (1-based) line it first
 * appeared on: an open-addressing set, zeroed to start. */
typedef struct shmb_workload_seen {
    uint64_t *ids, *lines; /* lines[i] == 0: slot i empty */
    size_t cap, n;
} shmb_workload_seen_t;

/* Adds id, seen on `line`: 1 if an earlier line had it (a hit), 0 if not,
 * -ENOMEM. */
int shmb_workload_seen_add(shmb_workload_seen_t *s, uint64_t id, uint64_t line);
void shmb_workload_seen_free(shmb_workload_seen_t *s);

#endif
