/*
 * lookup_measure: timing one path of the lookup benchmark, on the calling
 * thread or on a crew of threads at once; the lookup's own thread harness
 * (crew, runner), kept as a unit until the benchmarks share one.
 *
 * Two kinds of rows. Throughput: a batch's requests are independent, so the
 * CPU overlaps their translations (the path's batch loop). Latency: the same
 * requests as a dependent chain (the path's chain loop: shmb_lookup_chain
 * and the systems' *_chain), each request's keys shifted by how far the
 * previous translation landed from where it should (zero, unknown to the
 * compiler), so that each translation waits for the one before: what a
 * request path that waits on each translation sees. Every translated
 * address of a batch is summed into a checksum that is checked (a wrong
 * translation in a chain derails every request after it). Batches repeat
 * until min_time_ms has passed, and at least SHMB_LOOKUP_MIN_BATCHES.
 *
 * Threads: with threads > 1, that many threads run the same path at once,
 * each its own stream of requests (thread i starts at window i x windows /
 * threads of the pool and walks on), over the shared metadata, pool and
 * repository, as a process's transfer threads do: mooncake's metadata
 * RWSpinlock and SegmentDesc shared_ptr, flowipc_jemalloc's repository
 * mutex (taken per translation, as upstream's to_address does) are shared;
 * flowipc_classic and the kernels share read-only memory only. Each thread
 * is pinned to its own CPU when there are enough (shmb_sysinfo_plan_cpus),
 * else runs on every allowed CPU. The threads start together (a barrier)
 * and run until min_time_ms has passed and each has timed
 * SHMB_LOOKUP_MIN_BATCHES batches; every batch of every thread is
 * checksummed. Rows carry threads = N: ns per lookup per thread
 * (percentiles over every thread's batches), iterations = all threads'
 * lookups, items_per_second = all threads' lookups / the wall time from the
 * first thread's start to the last one's end.
 */
#include "lookup_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/sysinfo.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- timing: one thread, or several at once ---- */

/* One timed batch of window `win`, throughput or latency, through the
 * path's loop. */
static uint64_t timed_batch(const shmb_lookup_setup_t *s, int path, int latency, size_t win)
{
    const shmb_path_t *p = &shmb_path_table[path];
    const size_t w = (size_t)s->window;
    return latency ? p->chain(p, &s->state, s->requests + win * w, s->expected + win * w, w)
                   : p->batch(p, &s->state, s->requests + win * w, w);
}

/* The threads timing one path together. */
typedef struct crew {
    const shmb_lookup_setup_t *s;
    int path;
    int latency;
    int threads;
    const int *cpus;         /* thread i's CPU; NULL: not pinned */
    cpu_set_t allowed;       /* where unpinned threads run (threads > 1) */
    uint64_t budget_ns;      /* thread 0's timed batches, at least */
    atomic_int go;           /* 0: wait, 1: run, -1: give up (a thread could not start) */
    pthread_barrier_t start;
    atomic_int stop;         /* 1: every thread stops after its batch */
    atomic_int short_of_min; /* threads that have timed fewer than SHMB_LOOKUP_MIN_BATCHES */
} crew_t;

/* One thread of the crew and what it measured. */
typedef struct runner {
    crew_t *crew;
    int index;
    shmb_samples_t samples;  /* ns per lookup of each batch */
    uint64_t start_ns, end_ns;
    int ret;                 /* 0, -EPROTO (why says more) or -errno (error says more) */
    char why[200];
    shmb_error_t error;
} runner_t;

static void runner_fail(runner_t *r, int ret)
{
    r->ret = ret;
    r->error = *shmb_error_last();
    atomic_store_explicit(&r->crew->stop, 1, memory_order_relaxed);
}

/* Times batches until told to stop: thread i starts at window
 * i x windows / threads and walks on; each batch's checksum is checked.
 * Thread 0 says stop once its batches took budget_ns and every thread has
 * timed SHMB_LOOKUP_MIN_BATCHES. */
static void run_batches(runner_t *r)
{
    crew_t *c = r->crew;
    const shmb_lookup_setup_t *s = c->s;
    const size_t w = (size_t)s->window;
    size_t win = (size_t)((uint64_t)r->index * s->windows / (uint64_t)c->threads);
    uint64_t spent = 0;
    r->start_ns = shmb_clock_now_ns();
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        uint64_t t0 = shmb_clock_now_ns();
        uint64_t sum = timed_batch(s, c->path, c->latency, win);
        uint64_t t1 = shmb_clock_now_ns();
        if (sum != s->expected_sum[win]) {
            snprintf(r->why, sizeof(r->why), "%s%s, thread %d: checksum of a timed batch is 0x%llx, expected 0x%llx",
                     lookup_path_name(c->path), c->latency ? " latency" : "", r->index, (unsigned long long)sum,
                     (unsigned long long)s->expected_sum[win]);
            runner_fail(r, -EPROTO);
            break;
        }
        if (shmb_stats_append(&r->samples, (double)(t1 - t0) / (double)w) < 0) {
            runner_fail(r, shmb_error_record("malloc", ENOMEM, NULL));
            break;
        }
        spent += t1 - t0;
        if (r->samples.n == SHMB_LOOKUP_MIN_BATCHES)
            atomic_fetch_sub_explicit(&c->short_of_min, 1, memory_order_relaxed);
        if (r->index == 0 && spent >= c->budget_ns &&
            atomic_load_explicit(&c->short_of_min, memory_order_relaxed) == 0)
            atomic_store_explicit(&c->stop, 1, memory_order_relaxed);
        win = (win + 1) % (size_t)s->windows;
    }
    r->end_ns = shmb_clock_now_ns();
}

/* Pins the calling thread to its CPU, or lets it run on every allowed one. */
static int place_thread(const crew_t *c, int i)
{
    char object[32];
    if (c->cpus) {
        int ret = shmb_sysinfo_pin_cpu(c->cpus[i]);
        snprintf(object, sizeof(object), "CPU %d", c->cpus[i]);
        return ret < 0 ? shmb_error_record("sched_setaffinity", -ret, object) : 0;
    }
    if (sched_setaffinity(0, sizeof(c->allowed), &c->allowed) != 0)
        return shmb_error_record("sched_setaffinity", errno, "the allowed CPUs");
    return 0;
}

static void *runner_main(void *arg)
{
    runner_t *r = arg;
    crew_t *c = r->crew;
    int go;
    while ((go = atomic_load_explicit(&c->go, memory_order_acquire)) == 0)
        sched_yield();
    if (go < 0)
        return NULL;
    int ret = place_thread(c, r->index);
    if (ret < 0)
        runner_fail(r, ret);
    else
        shmb_escape((void *)(uintptr_t)timed_batch(c->s, c->path, c->latency, 0)); /* warm up */
    pthread_barrier_wait(&c->start);
    if (r->ret == 0)
        run_batches(r);
    return NULL;
}

/* Fills where the crew's threads run: their CPUs, or the allowed set. */
static int plan_crew(const shmb_lookup_config_t *cfg, crew_t *c, int *cpus)
{
    int pinned = shmb_sysinfo_plan_cpus(cfg->cpu, cfg->threads, cpus);
    if (pinned < 0)
        return pinned;
    c->cpus = pinned ? cpus : NULL;
    /* not pinned: more threads than allowed CPUs, so the wrapped plan names every one */
    CPU_ZERO(&c->allowed);
    for (int i = 0; i < cfg->threads; i++)
        CPU_SET(cpus[i], &c->allowed);
    return 0;
}

/* Starts the crew's threads together and joins them. Returns 0 or the
 * error of pthread_create. */
static int run_crew(crew_t *c, runner_t *runners)
{
    pthread_t *tids = calloc((size_t)c->threads, sizeof(*tids));
    if (!tids)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = pthread_barrier_init(&c->start, NULL, (unsigned)c->threads);
    if (ret != 0) {
        free(tids);
        return shmb_error_record("pthread_barrier_init", ret, NULL);
    }
    int started = 0;
    for (; started < c->threads; started++) {
        int err = pthread_create(&tids[started], NULL, runner_main, &runners[started]);
        if (err != 0) {
            ret = shmb_error_record("pthread_create", err, NULL);
            break;
        }
    }
    atomic_store_explicit(&c->go, ret == 0 ? 1 : -1, memory_order_release);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&c->start);
    free(tids);
    return ret;
}

/* The row of a crew's batches: every thread's samples together; with
 * several threads, items_per_second is all threads' lookups / wall time. */
static int crew_row(const shmb_lookup_config_t *cfg, const crew_t *c, runner_t *runners, shmb_rows_t *rows)
{
    size_t total = 0;
    uint64_t first = UINT64_MAX, last = 0;
    for (int i = 0; i < c->threads; i++) {
        total += runners[i].samples.n;
        first = runners[i].start_ns < first ? runners[i].start_ns : first;
        last = runners[i].end_ns > last ? runners[i].end_ns : last;
    }
    double *all = malloc(total * sizeof(double));
    if (!all)
        return shmb_error_record("malloc", ENOMEM, NULL);
    size_t at = 0;
    for (int i = 0; i < c->threads; i++) {
        memcpy(all + at, runners[i].samples.v, runners[i].samples.n * sizeof(double));
        at += runners[i].samples.n;
    }
    int ret = shmb_lookup_bench_timed_row(cfg, c->path, c->latency, c->threads, all, total, c->s->window,
                                          c->s->window * c->s->windows, rows);
    if (ret == 0 && c->threads > 1 && last > first)
        rows->v[rows->n - 1].items_per_second =
            (double)(total * c->s->window) * 1e9 / (double)(last - first);
    free(all);
    return ret;
}

/* Times one path on cfg->threads threads (lookup_internal.h). */
int shmb_lookup_bench_measure(const shmb_lookup_config_t *cfg, const shmb_lookup_setup_t *s, int path,
                              int latency, shmb_rows_t *rows, shmb_samples_t *keep, char *why, size_t cap)
{
    crew_t c = {.s = s, .path = path, .latency = latency, .threads = cfg->threads,
                .budget_ns = (uint64_t)(cfg->min_time_ms * 1e6)};
    atomic_init(&c.go, 0);
    atomic_init(&c.stop, 0);
    atomic_init(&c.short_of_min, cfg->threads);
    runner_t *runners = calloc((size_t)cfg->threads, sizeof(*runners));
    int *cpus = calloc((size_t)cfg->threads, sizeof(int));
    int ret = runners && cpus ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (int i = 0; ret == 0 && i < cfg->threads; i++)
        runners[i] = (runner_t){.crew = &c, .index = i};
    if (ret == 0 && cfg->threads == 1) {
        shmb_escape((void *)(uintptr_t)timed_batch(s, path, latency, 0)); /* warm up */
        run_batches(&runners[0]);
    } else if (ret == 0 && (ret = plan_crew(cfg, &c, cpus)) == 0) {
        ret = run_crew(&c, runners);
    }
    for (int i = 0; ret == 0 && i < cfg->threads; i++) {
        if ((ret = runners[i].ret) == -EPROTO)
            snprintf(why, cap, "%s", runners[i].why);
        else if (ret < 0 && runners[i].error.call)
            shmb_error_record(runners[i].error.call, runners[i].error.err, runners[i].error.object);
    }
    if (ret == 0 && keep) {
        *keep = runners[0].samples;
        runners[0].samples = (shmb_samples_t){0};
    } else if (ret == 0) {
        ret = crew_row(cfg, &c, runners, rows);
    }
    for (int i = 0; runners && i < cfg->threads; i++)
        shmb_stats_release(&runners[i].samples);
    free(runners);
    free(cpus);
    return ret;
}
