/* The replay's entry, its mode picked once (shmb_workload_run: open loop
 * here, paired or one system's closed loop in transfer_workload.c), and
 * open-loop arrivals (--arrivals=trace, docs/workload.md): an issuing thread
 * releases each request at its trace timestamp / speed, a worker (the
 * caller) serves them in order, and a request's latency runs from its
 * intended start, so a request that waited behind a slow one counts its
 * wait (no coordinated omission). */
#include "workload_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct issuer {
    const shmb_workload_open_t *o;
    const shmb_workload_stream_t *stream;
    size_t issued; /* requests released so far, under mu */
    int worker_cpu; /* the worker's only CPU (--cpu), or -1 */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} issuer_t;

uint64_t shmb_workload_intended_ns(const shmb_workload_stream_t *s, size_t i, double speed)
{
    return (uint64_t)((double)(s->v[i].timestamp_ms - s->v[0].timestamp_ms) * 1e6 / speed);
}

/* Sleeps until each intended start (absolute, CLOCK_MONOTONIC), then
 * releases the request. */
static void *issue(void *arg)
{
    issuer_t *is = arg;
    const shmb_workload_open_t *o = is->o;
    if (is->worker_cpu >= 0) { /* off the worker's CPU, so that its wake-ups do not preempt the worker */
        cpu_set_t others;
        CPU_ZERO(&others);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (c != is->worker_cpu)
                CPU_SET(c, &others);
        (void)sched_setaffinity(0, sizeof(others), &others); /* none other allowed: it stays beside the worker */
    }
    for (size_t i = 0; i < is->stream->n; i++) {
        const uint64_t at = o->t0_ns + o->intended_ns[i];
        const struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        pthread_mutex_lock(&is->mu);
        o->issued_ns[i] = shmb_clock_now_ns() - o->t0_ns;
        is->issued = i + 1;
        pthread_cond_signal(&is->cv);
        pthread_mutex_unlock(&is->mu);
    }
    return NULL;
}

int shmb_workload_open_run(shmb_workload_open_t *o, const shmb_workload_stream_t *s, double speed,
                           const shmb_workload_server_t *server)
{
    if (!(speed > 0) || s->n == 0)
        return -EINVAL;
    for (size_t i = 0; i < s->n; i++)
        o->intended_ns[i] = shmb_workload_intended_ns(s, i, speed);
    issuer_t is = {.o = o, .stream = s, .worker_cpu = -1};
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof(mine), &mine) == 0 && CPU_COUNT(&mine) == 1)
        for (int c = 0; c < CPU_SETSIZE && is.worker_cpu < 0; c++)
            is.worker_cpu = CPU_ISSET(c, &mine) ? c : -1;
    pthread_mutex_init(&is.mu, NULL);
    pthread_cond_init(&is.cv, NULL);
    o->t0_ns = shmb_clock_now_ns() + 1000000; /* a millisecond's lead: the thread starts before request 0 is due */
    pthread_t thread;
    int ret = -pthread_create(&thread, NULL, issue, &is);
    if (ret < 0) {
        pthread_cond_destroy(&is.cv);
        pthread_mutex_destroy(&is.mu);
        return shmb_error_record("pthread_create", -ret, NULL);
    }
    for (size_t i = 0; i < s->n && ret == 0; i++) {
        if ((ret = server->prepare(server->ctx, i)) < 0)
            break; /* untimed work before the request is due */
        pthread_mutex_lock(&is.mu);
        while (is.issued <= i)
            pthread_cond_wait(&is.cv, &is.mu);
        pthread_mutex_unlock(&is.mu);
        uint64_t start, done;
        ret = server->serve(server->ctx, i, &start, &done);
        o->start_ns[i] = start - o->t0_ns;
        o->done_ns[i] = done - o->t0_ns;
    }
    if (ret < 0)
        pthread_cancel(thread); /* asleep until a later release (clock_nanosleep is a cancellation point) */
    pthread_join(thread, NULL);
    pthread_cond_destroy(&is.cv);
    pthread_mutex_destroy(&is.mu);
    return ret;
}

/* ---- the replay, open-loop ---- */

typedef struct open_replay {
    shmb_workload_replay_t w;
    const shmb_workload_stream_t *stream;
    shmb_workload_fanout_t f;
    int moves; /* 0: request i wholly hit (reuse), nothing to serve */
} open_replay_t;

static int prepare(void *ctx, size_t i)
{
    open_replay_t *o = ctx;
    const uint64_t tokens = shmb_workload_tokens(&o->w.cfg->shape, &o->stream->v[i]);
    o->moves = tokens && shmb_workload_fanout(&o->w.cfg->shape, tokens, &o->f) == 0;
    o->w.index = i;
    return o->moves ? shmb_workload_replay_prepare(&o->w, &o->f) : 0;
}

static int serve(void *ctx, size_t i, uint64_t *start, uint64_t *done)
{
    open_replay_t *o = ctx;
    (void)i;
    if (!o->moves) {
        *start = *done = shmb_clock_now_ns();
        return 0;
    }
    return shmb_workload_replay_once(&o->w, &o->f, start, done);
}

/* Two rows of the requests that moved something: request (its service,
 * start to done) and latency (intended start to done). */
static int push_open(const open_replay_t *o, const shmb_workload_open_t *t, double speed, shmb_rows_t *rows)
{
    const shmb_workload_config_t *c = o->w.cfg;
    const size_t n = o->stream->n;
    double *v = calloc(3 * n, sizeof(double)), *late = v + 2 * n, bytes = 0, busy = 0;
    if (!v)
        return shmb_error_record("malloc", ENOMEM, NULL);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        late[i] = (double)(t->issued_ns[i] - t->intended_ns[i]);
        shmb_workload_fanout_t f;
        const uint64_t tokens = shmb_workload_tokens(&c->shape, &o->stream->v[i]);
        if (!tokens || shmb_workload_fanout(&c->shape, tokens, &f) < 0)
            continue;
        v[m] = (double)(t->done_ns[i] - t->start_ns[i]);
        v[n + m++] = (double)(t->done_ns[i] - t->intended_ns[i]);
        bytes += (double)f.bytes;
        busy += (double)(t->done_ns[i] - t->start_ns[i]);
    }
    int ret = 0;
    for (int r = 0; r < 2 && ret == 0; r++) {
        shmb_row_t row = shmb_row_make(r ? "latency" : "request", "model", 0, c->repetition);
        snprintf(row.arg_text, sizeof(row.arg_text), "%s", c->shape.model->name);
        if (c->name_system)
            snprintf(row.step, sizeof(row.step), "%s", shmb_system_name(c->system));
        row.threads = c->threads;
        row.iterations = m;
        row.bytes_per_second = r ? 0 : bytes * 1e9 / busy;
        ret = shmb_rows_push_samples(rows, &row, v + r * n, m);
        if (ret < 0)
            break;
        shmb_row_t *pushed = &rows->v[rows->n - 1];
        shmb_stats_t s;
        if (r && shmb_stats_compute(late, n, &s) == 0)
            snprintf(pushed->note, sizeof(pushed->note), "from intended start, speed %g; issue late p99 %.0f us",
                     speed, s.p99 / 1e3);
        else if (!r)
            snprintf(pushed->note, sizeof(pushed->note), "service alone: start to done");
    }
    free(v);
    return ret;
}

int shmb_workload_open_replay(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream,
                              uint64_t max_bytes, shmb_rows_t *rows, char *why, size_t why_cap)
{
    open_replay_t o = {.stream = stream};
    shmb_workload_open_t t = {0};
    uint64_t *all = calloc(4 * stream->n, sizeof(uint64_t));
    int ret = shmb_workload_replay_start(&o.w, cfg, max_bytes, why, why_cap);
    if (ret == 0 && !all)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0) {
        t = (shmb_workload_open_t){0, all, all + stream->n, all + 2 * stream->n, all + 3 * stream->n};
        const shmb_workload_server_t server = {prepare, serve, &o};
        ret = shmb_workload_open_run(&t, stream, cfg->speed, &server);
    }
    if (ret == 0)
        ret = push_open(&o, &t, cfg->speed, rows);
    shmb_workload_replay_stop(&o.w);
    free(all);
    return ret;
}

int shmb_workload_run(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream, shmb_rows_t *rows,
                      char *why, size_t why_cap)
{
    shmb_workload_totals_t totals;
    if (shmb_workload_totals(&cfg->shape, stream, &totals) < 0)
        return -EINVAL;
    if (cfg->open_loop)
        return cfg->nsystems ? -EINVAL
                             : shmb_workload_open_replay(cfg, stream, totals.max_bytes, rows, why, why_cap);
    if (cfg->nsystems)
        return shmb_transfer_systems_check(cfg->systems, cfg->nsystems) < 0
                   ? -EINVAL
                   : shmb_workload_paired_replay(cfg, stream, &totals, rows, why, why_cap);
    return shmb_workload_closed_replay(cfg, stream, &totals, rows, why, why_cap);
}
