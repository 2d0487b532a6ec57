/* crew: the library's one thread harness (src/crew_internal.h says what it
 * gives). Workers wait for a run by spinning on its generation, yielding
 * after a while, so that a run starts every member within a few hundred
 * nanoseconds; the copy crew's small transfers depend on that. */
#include "crew_internal.h"

#include "shmbench/error.h"
#include "shmbench/sysinfo.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define SPINS_BEFORE_YIELD 4096

typedef struct worker {
    shmb_crew_t *crew;
    int member;
} worker_t;

struct shmb_crew {
    int threads;
    int caller_joins;
    int *cpus;                       /* member i's CPU; NULL: not pinned */
    int on_allowed;                  /* not pinned: every member runs on `allowed` */
    cpu_set_t allowed;
    int caller_moved;                /* caller_joins: the caller's affinity was changed */
    cpu_set_t caller_mask;           /* and what it was before start */
    pthread_t *tids;                 /* [member], the caller's slot unused */
    worker_t *workers;
    int started;                     /* threads created */
    atomic_uint_fast64_t generation; /* bumped to start a run */
    atomic_int done;                 /* workers finished with this generation (or placed) */
    atomic_int stop;
    shmb_crew_fn fn;
    void *arg;
    atomic_int arrived;              /* the barrier: members at it */
    atomic_uint round;               /* and how often it opened */
    atomic_int failed;               /* the first error of the run, 0 while none */
    atomic_int failed_member;
    shmb_error_t error;              /* the first failing member's record */
};

static void spin_until_generation(const shmb_crew_t *c, uint64_t seen)
{
    unsigned spins = 0;
    while (atomic_load_explicit(&c->generation, memory_order_acquire) == seen &&
           !atomic_load_explicit(&c->stop, memory_order_acquire))
        if (++spins > SPINS_BEFORE_YIELD)
            sched_yield();
}

static void wait_workers(shmb_crew_t *c)
{
    const int workers = c->started;
    unsigned spins = 0;
    while (atomic_load_explicit(&c->done, memory_order_acquire) < workers)
        if (++spins > SPINS_BEFORE_YIELD)
            sched_yield();
}

/* Pins the calling thread to member i's CPU, or lets it run on every allowed one. */
static int place(const shmb_crew_t *c, int i)
{
    if (c->cpus) {
        char object[32];
        snprintf(object, sizeof(object), "CPU %d", c->cpus[i]);
        int ret = shmb_sysinfo_pin_cpu(c->cpus[i]);
        return ret < 0 ? shmb_error_record("sched_setaffinity", -ret, object) : 0;
    }
    if (c->on_allowed && sched_setaffinity(0, sizeof(c->allowed), &c->allowed) != 0)
        return shmb_error_record("sched_setaffinity", errno, "the allowed CPUs");
    return 0;
}

void shmb_crew_fail(shmb_crew_t *c, int member, int err)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&c->failed, &none, err)) {
        c->error = *shmb_error_last();
        atomic_store(&c->failed_member, member);
    }
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    shmb_crew_t *c = w->crew;
    int ret = place(c, w->member);
    if (ret < 0)
        shmb_crew_fail(c, w->member, ret);
    uint64_t seen = 0;
    atomic_fetch_add_explicit(&c->done, 1, memory_order_release);
    for (;;) {
        spin_until_generation(c, seen);
        if (atomic_load_explicit(&c->stop, memory_order_acquire))
            return NULL;
        seen = atomic_load_explicit(&c->generation, memory_order_acquire);
        c->fn(c, w->member, c->arg);
        atomic_fetch_add_explicit(&c->done, 1, memory_order_release);
    }
}

/* Where the members run: c->cpus, or c->allowed, or where they are. */
static int plan(shmb_crew_t *c, const shmb_crew_config_t *cfg)
{
    if (cfg->pin == SHMB_CREW_PIN_NONE)
        return 0;
    int *cpus = calloc((size_t)cfg->threads, sizeof(int));
    if (!cpus)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int own = shmb_sysinfo_plan_cpus(cfg->cpu, cfg->threads, cpus);
    if (own < 0) {
        free(cpus);
        return own;
    }
    if (own || cfg->pin == SHMB_CREW_PIN_ALWAYS) {
        c->cpus = cpus;
        return 0;
    }
    /* more members than allowed CPUs: the wrapped plan names every allowed one */
    CPU_ZERO(&c->allowed);
    for (int i = 0; i < cfg->threads; i++)
        CPU_SET(cpus[i], &c->allowed);
    c->on_allowed = 1;
    free(cpus);
    return 0;
}

/* The caller as member 0: remembers its affinity, then places it. */
static int place_caller(shmb_crew_t *c)
{
    if (!c->cpus && !c->on_allowed)
        return 0;
    if (sched_getaffinity(0, sizeof(c->caller_mask), &c->caller_mask) != 0)
        return shmb_error_record("sched_getaffinity", errno, NULL);
    c->caller_moved = 1;
    return place(c, 0);
}

int shmb_crew_start(shmb_crew_t **out, const shmb_crew_config_t *cfg)
{
    if (cfg->threads < 1 || (unsigned)cfg->pin > SHMB_CREW_PIN_NONE)
        return -EINVAL;
    shmb_crew_t *c = calloc(1, sizeof(*c));
    if (!c)
        return shmb_error_record("malloc", ENOMEM, NULL);
    c->threads = cfg->threads;
    c->caller_joins = cfg->caller_joins != 0;
    atomic_init(&c->failed_member, -1);
    c->tids = calloc((size_t)c->threads, sizeof(*c->tids));
    c->workers = calloc((size_t)c->threads, sizeof(*c->workers));
    int ret = c->tids && c->workers ? plan(c, cfg) : shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0 && c->caller_joins)
        ret = place_caller(c);
    for (int i = c->caller_joins; i < c->threads && ret == 0; i++) {
        c->workers[i] = (worker_t){c, i};
        int err = pthread_create(&c->tids[i], NULL, worker_main, &c->workers[i]);
        if (err != 0)
            ret = shmb_error_record("pthread_create", err, NULL);
        else
            c->started++;
    }
    wait_workers(c); /* every worker placed, or failed to be */
    if (ret == 0 && (ret = atomic_load(&c->failed)) < 0 && c->error.call)
        shmb_error_record(c->error.call, c->error.err, c->error.object);
    if (ret < 0) {
        shmb_crew_stop(c);
        return ret;
    }
    *out = c;
    return 0;
}

int shmb_crew_run(shmb_crew_t *c, shmb_crew_fn fn, void *arg)
{
    c->fn = fn;
    c->arg = arg;
    atomic_store_explicit(&c->failed, 0, memory_order_relaxed);
    atomic_store_explicit(&c->failed_member, -1, memory_order_relaxed);
    atomic_store_explicit(&c->done, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->generation, 1, memory_order_release);
    if (c->caller_joins)
        fn(c, 0, arg);
    wait_workers(c);
    int ret = atomic_load_explicit(&c->failed, memory_order_acquire);
    if (ret < 0 && c->error.call)
        shmb_error_record(c->error.call, c->error.err, c->error.object);
    return ret;
}

void shmb_crew_stop(shmb_crew_t *c)
{
    if (!c)
        return;
    atomic_store_explicit(&c->stop, 1, memory_order_release);
    for (int i = c->caller_joins; i < c->caller_joins + c->started; i++)
        pthread_join(c->tids[i], NULL);
    if (c->caller_moved)
        sched_setaffinity(0, sizeof(c->caller_mask), &c->caller_mask);
    free(c->cpus);
    free(c->tids);
    free(c->workers);
    free(c);
}

int shmb_crew_threads(const shmb_crew_t *c)
{
    return c->threads;
}

int shmb_crew_cpu(const shmb_crew_t *c, int member)
{
    return c->cpus && member >= 0 && member < c->threads ? c->cpus[member] : -1;
}

int shmb_crew_sync(shmb_crew_t *c)
{
    unsigned r = atomic_load_explicit(&c->round, memory_order_acquire);
    if (atomic_fetch_add_explicit(&c->arrived, 1, memory_order_acq_rel) == c->threads - 1) {
        atomic_store_explicit(&c->arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->round, 1, memory_order_release);
    } else {
        unsigned spins = 0;
        while (atomic_load_explicit(&c->round, memory_order_acquire) == r)
            if (++spins > SPINS_BEFORE_YIELD)
                sched_yield();
    }
    return shmb_crew_ok(c);
}

int shmb_crew_ok(const shmb_crew_t *c)
{
    return atomic_load_explicit(&c->failed, memory_order_acquire) == 0;
}

int shmb_crew_failed_member(const shmb_crew_t *c)
{
    return atomic_load(&c->failed_member);
}

double shmb_crew_wall_ns(const uint64_t *start, const uint64_t *end, uint64_t phases, int threads)
{
    double sum = 0;
    for (uint64_t p = 0; p < phases; p++) {
        uint64_t first = UINT64_MAX, last = 0;
        for (int t = 0; t < threads; t++) {
            const uint64_t i = p * (uint64_t)threads + (uint64_t)t;
            first = start[i] < first ? start[i] : first;
            last = end[i] > last ? end[i] : last;
        }
        sum += last > first ? (double)(last - first) : 0;
    }
    return sum;
}
