/* Timing one path of a lookup run on the calling thread or a crew of threads
 * (docs/lookup.md says what each row times), and the rows of a path. Calls
 * nothing else in src/lookup. */
#include "lookup_internal.h"

#include "base/crew_internal.h"
#include "base/runner_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t shmb_lookup_bench_batch(const shmb_lookup_setup_t *s, int path, int latency, size_t win)
{
    const shmb_path_t *p = &shmb_path_table[path];
    const size_t w = (size_t)s->window;
    return latency ? p->chain(p, &s->state, s->requests + win * w, s->expected + win * w, w)
                   : p->batch(p, &s->state, s->requests + win * w, w);
}

/* What one path's timing shares between the crew's members, and what each
 * measured (indexed by member). */
typedef struct timing {
    const shmb_lookup_setup_t *s;
    int path;
    int latency;
    int threads;
    uint64_t budget_ns;       /* member 0's timed batches, at least */
    uint64_t batches;         /* 0, or each member's timed batches, exactly (count_given) */
    atomic_int stop;          /* 1: every member stops after its batch */
    atomic_int others_short;  /* members but 0 that have timed fewer than SHMB_LOOKUP_MIN_BATCHES */
    shmb_samples_t *samples;  /* ns per lookup of each batch */
    uint64_t *start_ns, *end_ns;
    char (*why)[200];         /* a member's -EPROTO, described */
} timing_t;

int shmb_lookup_bench_check_sum(const shmb_lookup_setup_t *s, int path, int latency, size_t win, uint64_t sum,
                                int thread, char *why, size_t cap)
{
    if (sum == s->expected_sum[win])
        return 0;
    char who[32] = "";
    if (thread >= 0)
        snprintf(who, sizeof(who), ", thread %d", thread);
    snprintf(why, cap, "%s%s%s: checksum of a timed batch is 0x%llx, expected 0x%llx", lookup_path_name(path),
             latency ? " latency" : "", who, (unsigned long long)sum, (unsigned long long)s->expected_sum[win]);
    return -EPROTO;
}

/* A member's walk through the pool, a window a batch (member i starts at
 * window i x windows / threads); a shmb_runner_fn of s->window operations. */
typedef struct walk {
    const timing_t *t;
    char *why;
    int me;
    size_t win;
} walk_t;

static int walk_batch(void *ctx, uint64_t count)
{
    walk_t *w = ctx;
    const timing_t *t = w->t;
    (void)count; /* every plan below is in batches of s->window */
    const uint64_t sum = shmb_lookup_bench_batch(t->s, t->path, t->latency, w->win);
    int ret = shmb_lookup_bench_check_sum(t->s, t->path, t->latency, w->win, sum, w->me, w->why, sizeof(t->why[0]));
    w->win = (w->win + 1) % (size_t)t->s->windows;
    return ret;
}

/* A member's batches through the runner. A count given: exactly that many.
 * Else member 0 times until its batches took budget_ns and number
 * SHMB_LOOKUP_MIN_BATCHES, then a batch at a time until every other member
 * has timed as many, and stops them all; the others time that many, say so
 * (outside any timed batch), then on until stopped. */
static void run_batches(shmb_crew_t *crew, timing_t *t, int me)
{
    const uint64_t w = t->s->window, min = SHMB_LOOKUP_MIN_BATCHES;
    walk_t walk = {t, t->why[me], me, (size_t)((uint64_t)me * t->s->windows / (uint64_t)t->threads)};
    shmb_samples_t *out = &t->samples[me];
    const shmb_runner_plan_t counted = {.ops = t->batches * w, .batches = t->batches, .budget_ns = UINT64_MAX,
                                        .stop = &t->stop},
                             timed = {.ops = w, .budget_ns = t->budget_ns, .min_batches = min, .stop = &t->stop},
                             least = {.ops = min * w, .batches = min, .budget_ns = UINT64_MAX, .stop = &t->stop},
                             endless = {.ops = w, .budget_ns = UINT64_MAX, .stop = &t->stop},
                             one = {.ops = w, .batches = 1};
    t->start_ns[me] = shmb_clock_now_ns();
    int ret = shmb_runner_run(t->batches ? &counted : me == 0 ? &timed : &least, walk_batch, &walk, out, NULL);
    if (!t->batches && me == 0) {
        while (ret == 0 && atomic_load_explicit(&t->others_short, memory_order_relaxed) > 0 &&
               !atomic_load_explicit(&t->stop, memory_order_relaxed))
            ret = shmb_runner_run(&one, walk_batch, &walk, out, NULL);
        atomic_store_explicit(&t->stop, 1, memory_order_relaxed);
    } else if (!t->batches && ret == 0) {
        atomic_fetch_sub_explicit(&t->others_short, 1, memory_order_relaxed);
        if (!atomic_load_explicit(&t->stop, memory_order_relaxed))
            ret = shmb_runner_run(&endless, walk_batch, &walk, out, NULL);
    }
    t->end_ns[me] = shmb_clock_now_ns();
    if (ret < 0) {
        shmb_crew_fail(crew, me, ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret);
        atomic_store_explicit(&t->stop, 1, memory_order_relaxed);
    }
}

/* A member: a warm-up batch, then every member starts timing at once. */
static void time_member(shmb_crew_t *crew, int me, void *arg)
{
    timing_t *t = arg;
    shmb_escape((void *)(uintptr_t)shmb_lookup_bench_batch(t->s, t->path, t->latency, 0));
    if (shmb_crew_sync(crew))
        run_batches(crew, t, me);
}

/* One thread: the calling one, where it is; several: a thread each, on a
 * CPU of its own when there are enough, else all on every allowed CPU. */
static int time_on_crew(const shmb_lookup_config_t *cfg, timing_t *t, char *why, size_t cap)
{
    const int one = cfg->threads == 1;
    const shmb_crew_config_t cc = {.threads = cfg->threads, .cpu = cfg->cpu, .caller_joins = one,
                                   .pin = one ? SHMB_CREW_PIN_NONE : SHMB_CREW_PIN_OWN};
    shmb_crew_t *crew = NULL;
    int ret = shmb_crew_start(&crew, &cc);
    if (ret == 0 && (ret = shmb_crew_run(crew, time_member, t)) == -EPROTO)
        snprintf(why, cap, "%s", t->why[shmb_crew_failed_member(crew)]);
    shmb_crew_stop(crew);
    return ret;
}

/* The row of a crew's batches: every member's samples together; with
 * several threads, items_per_second is all threads' lookups / wall time. */
static int timing_row(const shmb_lookup_config_t *cfg, const timing_t *t, shmb_rows_t *rows)
{
    size_t total = 0;
    for (int i = 0; i < t->threads; i++)
        total += t->samples[i].n;
    double *all = malloc(total * sizeof(double));
    if (!all)
        return shmb_error_record("malloc", ENOMEM, NULL);
    size_t at = 0;
    for (int i = 0; i < t->threads; i++) {
        memcpy(all + at, t->samples[i].v, t->samples[i].n * sizeof(double));
        at += t->samples[i].n;
    }
    int ret = shmb_lookup_bench_timed_row(cfg, t->path, t->latency, t->threads, all, total, t->s->window,
                                          t->s->window * t->s->windows, rows);
    const double wall_ns = shmb_crew_wall_ns(t->start_ns, t->end_ns, 1, t->threads);
    if (ret == 0 && t->threads > 1 && wall_ns > 0)
        rows->v[rows->n - 1].items_per_second = (double)(total * t->s->window) * 1e9 / wall_ns;
    free(all);
    return ret;
}

int shmb_lookup_bench_measure(const shmb_lookup_config_t *cfg, const shmb_lookup_setup_t *s, int path,
                              int latency, shmb_rows_t *rows, shmb_samples_t *keep, char *why, size_t cap)
{
    const size_t n = (size_t)cfg->threads;
    timing_t t = {.s = s, .path = path, .latency = latency, .threads = cfg->threads,
                  .batches = shmb_lookup_bench_batches(cfg),
                  /* A count given: each member stops at it, none is stopped by time. */
                  .budget_ns = cfg->count_given ? UINT64_MAX : (uint64_t)(cfg->min_time_ms * 1e6),
                  .samples = calloc(n, sizeof(*t.samples)),
                  .start_ns = calloc(n, sizeof(uint64_t)), .end_ns = calloc(n, sizeof(uint64_t)),
                  .why = calloc(n, sizeof(*t.why))};
    atomic_init(&t.stop, 0);
    atomic_init(&t.others_short, cfg->threads - 1);
    int ret = t.samples && t.start_ns && t.end_ns && t.why ? time_on_crew(cfg, &t, why, cap)
                                                            : shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0 && keep) {
        *keep = t.samples[0];
        t.samples[0] = (shmb_samples_t){0};
    } else if (ret == 0) {
        ret = timing_row(cfg, &t, rows);
    }
    for (size_t i = 0; t.samples && i < n; i++)
        shmb_stats_release(&t.samples[i]);
    free(t.samples);
    free(t.start_ns);
    free(t.end_ns);
    free(t.why);
    return ret;
}

uint64_t shmb_lookup_bench_batches(const shmb_lookup_config_t *cfg)
{
    if (!cfg->count_given)
        return 0;
    return cfg->num_lookups > SHMB_LOOKUP_MIN_BATCH ? cfg->num_lookups / SHMB_LOOKUP_MIN_BATCH : 1;
}

size_t shmb_lookup_bench_paired_attach_rounds(const shmb_lookup_config_t *cfg)
{
    const size_t block = 2 * (cfg->nsystems ? cfg->nsystems : 1);
    return (SHMB_LOOKUP_PAIRED_ATTACH_ROUNDS + block - 1) / block * block;
}

/* ---- rows ---- */

static shmb_row_t path_row(const shmb_lookup_config_t *cfg, int path)
{
    return shmb_row_make(cfg->system_rows ? "" : lookup_path_name(path), "segments", cfg->num_segments,
                         cfg->repetition);
}

int shmb_lookup_bench_timed_row(const shmb_lookup_config_t *cfg, int path, int latency, int threads,
                                double *samples, size_t count, uint64_t window, uint64_t pool, shmb_rows_t *rows)
{
    shmb_row_t row = path_row(cfg, path);
    if (latency)
        snprintf(row.step, sizeof(row.step), "latency");
    row.threads = threads;
    row.iterations = count * window;
    snprintf(row.note, sizeof(row.note), "verified %llu/%llu", (unsigned long long)pool, (unsigned long long)pool);
    return shmb_rows_push_samples(rows, &row, samples, count);
}

int shmb_lookup_bench_setup_row(const shmb_lookup_config_t *cfg, int path, const char *step, const char *note,
                                shmb_samples_t *samples, shmb_rows_t *rows)
{
    shmb_row_t row = path_row(cfg, path);
    snprintf(row.step, sizeof(row.step), "%s", step);
    if (!samples)
        return shmb_rows_push(rows, &row);
    row.iterations = samples->n;
    snprintf(row.note, sizeof(row.note), "%s", note);
    return shmb_rows_push_samples(rows, &row, samples->v, samples->n);
}

const char *shmb_lookup_bench_first_use_step(const shmb_lookup_config_t *cfg)
{
    return cfg->system_rows ? "attach" : "first_use";
}
