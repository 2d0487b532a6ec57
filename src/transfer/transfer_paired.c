/* The paired run: every system's translation and request path over one
 * src, dst and crew; per size, each paired part's rounds of one batch per
 * system in shmb_paired_run's order, the copy rows once (docs/transfer.md,
 * "Paired"). With submitters, each batch is run by that many threads at
 * once over the system's one translation and engine; SHM-jemalloc's each
 * hand over through a link and borrower process of their own. */
#include "transfer_internal.h"

#include "base/crew_internal.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/paired.h"
#include "shmbench/sysinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rounds per call of shmb_paired_run, times the systems: a multiple of
 * their count, so that each call starts the order where the last left
 * it, and the samples grow with the rounds the budget allows. */
#define CHUNK_ROUNDS 64

uint64_t shmb_transfer_bench_submitter_wrong_tag;

typedef struct paired {
    shmb_transfer_run_t base; /* src, dst, the crew; the copy rows */
    size_t n;                 /* systems measured, the control included */
    shmb_system_t systems[SHMB_PAIRED_MAX_SYSTEMS];
    shmb_transfer_config_t cfgs[SHMB_PAIRED_MAX_SYSTEMS];
    shmb_transfer_run_t views[SHMB_PAIRED_MAX_SYSTEMS]; /* base's src, dst and crew, a system's translation */
    shmb_transfer_paired_names_t names;
    shmb_handoff_link_t *link;                /* the Flow-IPC flavours' hand-offs, when any hands over */
    double *samples[SHMB_PAIRED_MAX_SYSTEMS]; /* per round */
    size_t cap;                               /* rounds each holds */
    /* The part being measured, for the slices, and the systems that run it. */
    shmb_transfer_part_t part;
    size_t on[SHMB_PAIRED_MAX_SYSTEMS], non;
    shmb_copy_fn fn;
    uint64_t size, batch, spent, budget;
    size_t slices, least; /* rounds timed before the budget may end them */
    /* Submitters (k > 1): member m runs view_of(p, which, m) in each batch. */
    int k;
    shmb_transfer_run_t *subs; /* [s * (k - 1) + m - 1]: system s's submitter m >= 1 */
    shmb_crew_t *crew;
    uint64_t *t0, *t1; /* [m]: member m's batch began, ended */
    size_t which;
} paired_t;

/* System s's submitter m (0: its view). */
static shmb_transfer_run_t *view_of(paired_t *p, size_t s, int m)
{
    return m == 0 ? &p->views[s] : &p->subs[s * (size_t)(p->k - 1) + (size_t)m - 1];
}

/* A member's batch of system p->which, on its own part of dst. */
static void submit(shmb_crew_t *crew, int m, void *arg)
{
    paired_t *p = arg;
    (void)crew;
    p->t0[m] = shmb_clock_now_ns();
    shmb_transfer_bench_part(view_of(p, p->which, m), p->part, p->fn, p->size, p->batch);
    p->t1[m] = shmb_clock_now_ns();
}

/* One batch of system `which` (shmb_paired_slice_fn); -ETIMEDOUT at the
 * start of a round once the minimum is timed and the budget spent. */
static int slice(void *ctx, size_t which, double *ns)
{
    paired_t *p = ctx;
    if (p->slices % p->non == 0 && p->slices / p->non >= p->least && p->spent >= p->budget)
        return -ETIMEDOUT;
    uint64_t span;
    if (p->k > 1) { /* the wall span of the batch: per request as each submitter sees it */
        p->which = p->on[which];
        int ret = shmb_crew_run(p->crew, submit, p);
        if (ret < 0)
            return ret;
        span = (uint64_t)shmb_crew_wall_ns(p->t0, p->t1, 1, p->k);
    } else {
        const uint64_t t0 = shmb_clock_now_ns();
        shmb_transfer_bench_part(&p->views[p->on[which]], p->part, p->fn, p->size, p->batch);
        span = shmb_clock_now_ns() - t0;
    }
    *ns = (double)span / (double)(p->batch * shmb_transfer_descriptors(p->base.cfg, p->part)); /* per descriptor */
    p->spent += span;
    p->slices++;
    return 0;
}

/* Room for `rounds` samples of each system. */
static int reserve(paired_t *p, size_t rounds)
{
    if (rounds <= p->cap)
        return 0;
    for (size_t s = 0; s < p->n; s++) {
        double *v = realloc(p->samples[s], rounds * sizeof(*v));
        if (!v)
            return shmb_error_record("malloc", ENOMEM, NULL);
        p->samples[s] = v;
    }
    p->cap = rounds;
    return 0;
}

/* Up to `planned` rounds, chunk by chunk; how many ran into *done. */
static int run_rounds(paired_t *p, size_t planned, size_t *done)
{
    const size_t chunk = CHUNK_ROUNDS * p->non;
    size_t k = 0;
    p->slices = 0;
    p->spent = 0;
    while (k < planned) {
        const size_t len = planned - k < chunk ? planned - k : chunk;
        int ret = reserve(p, k + len);
        if (ret < 0)
            return ret;
        double *at[SHMB_PAIRED_MAX_SYSTEMS];
        for (size_t s = 0; s < p->non; s++)
            at[s] = p->samples[p->on[s]] + k;
        ret = shmb_paired_run(p->non, len, slice, p, at);
        if (ret == -ETIMEDOUT) {
            k = p->slices / p->non;
            break;
        }
        if (ret < 0)
            return ret;
        k += len;
    }
    *done = k;
    return 0;
}

/* The rows of one paired part: each system's (rates from its median, as a
 * --system row's), then each one's ratio to the baseline; its first row's
 * index into *first. */
static int push_part(paired_t *p, shmb_rows_t *rows, size_t rounds, size_t *first)
{
    shmb_row_t tmpl = shmb_row_make(shmb_transfer_part_name(p->part), "size_kb", p->size / 1024,
                                    p->base.cfg->repetition);
    tmpl.threads = p->k > 1 ? p->k : p->base.cfg->threads;
    tmpl.iterations = p->batch * shmb_transfer_descriptors(p->base.cfg, p->part);
    shmb_transfer_per_submit_arg(&tmpl, p->base.cfg, p->part);
    const char *names[SHMB_PAIRED_MAX_SYSTEMS];
    double *samples[SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < p->non; s++)
        names[s] = p->names.v[p->on[s]], samples[s] = p->samples[p->on[s]];
    int ret = shmb_paired_push_rows(rows, &tmpl, names, p->non, samples, rounds, first);
    if (ret == -ENOMEM)
        return shmb_error_record("malloc", ENOMEM, NULL);
    if (ret < 0)
        return ret;
    for (size_t s = 0; s < p->non; s++)
        shmb_transfer_rates(&rows->v[*first + s], p->part, p->size);
    return 0;
}

/* The skip rule: mooncake_upstream runs translate and submit only, and
 * submit (the model's slice of upstream's steps) runs only beside it, with
 * mooncake and its control; flowipc_jemalloc_upstream runs translate only. */
static int covers(shmb_system_t s, shmb_transfer_part_t part)
{
    if (s == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
        return part == SHMB_TRANSFER_TRANSLATE || part == SHMB_TRANSFER_SUBMIT;
    if (s == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM) /* to_address alone */
        return part == SHMB_TRANSFER_TRANSLATE;
    return part != SHMB_TRANSFER_SUBMIT || s == SHMB_SYSTEM_MOONCAKE;
}

/* System s's place among the systems that run part. */
static size_t place(const paired_t *p, shmb_transfer_part_t part, size_t s)
{
    size_t k = 0;
    for (size_t i = 0; i < s; i++)
        k += covers(p->systems[i], part);
    return k;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    return b ? gcd(b, a % b) : a;
}

/* One part paired over the systems that run it: each checked, one batch
 * size for all, the rounds, the misses and (with verify, for the request;
 * an upstream system's landing always) each one checked again after them,
 * the rows. */
static int measure_part(paired_t *p, shmb_rows_t *rows, shmb_transfer_part_t part, shmb_copy_method_t m,
                        uint64_t size, size_t *first)
{
    const shmb_transfer_config_t *cfg = p->base.cfg;
    int ret = 0;
    p->non = 0;
    for (size_t s = 0; s < p->n; s++)
        if (covers(p->systems[s], part))
            p->on[p->non++] = s;
    for (size_t k = 0; k < p->non; k++)
        for (int j = 0; j < p->k && ret == 0; j++)
            ret = shmb_transfer_bench_check(view_of(p, p->on[k], j), part, m, size);
    if (ret < 0)
        return ret;
    p->part = part;
    p->fn = shmb_copy_kernel(m);
    p->size = size;
    p->batch = 1;
    uint64_t whole = 1; /* spread: each batch's requests go round the buffers a whole number of times */
    for (size_t k = 0; k < p->non; k++) {
        const uint64_t b = shmb_transfer_bench_batch(&p->views[p->on[k]], part, p->fn, size);
        const uint64_t nb = p->views[p->on[k]].translation.spread, per = shmb_transfer_descriptors(cfg, part);
        p->batch = b > p->batch ? b : p->batch;
        if (nb && (part == SHMB_TRANSFER_TRANSLATE || part == SHMB_TRANSFER_SUBMIT))
            whole = nb / gcd(nb, part == SHMB_TRANSFER_SUBMIT ? per : 1);
    }
    p->batch = (p->batch + whole - 1) / whole * whole;
    /* The batches a --system run would time: num_transfers, and for a part
     * that moves no bytes at least SHMB_TRANSFER_MIN_PART_BATCHES batches;
     * a count given, SHMB_PAIRED_MIN_ROUNDS (the fewest with an interval). */
    const uint64_t batches = cfg->num_transfers / p->batch;
    p->least = cfg->count_given ? SHMB_PAIRED_MIN_ROUNDS : SHMB_TRANSFER_MIN_PART_BATCHES;
    const size_t planned = batches > p->least ? (size_t)batches : p->least;
    p->budget = (uint64_t)(cfg->time_per_size_ms * 1e6) * p->non;
    for (size_t k = 0; k < p->non; k++) /* spread: every system's rounds go round the buffers alike */
        p->views[p->on[k]].translation.next = 0;
    size_t rounds = 0;
    if ((ret = run_rounds(p, planned, &rounds)) < 0)
        return ret;
    for (size_t k = 0; k < p->non; k++)
        for (int j = 0; j < p->k && ret == 0; j++) {
            shmb_transfer_run_t *v = view_of(p, p->on[k], j);
            ret = shmb_transfer_bench_verify_translations(v);
            if (ret == 0 && ((cfg->verify && part == SHMB_TRANSFER_REQUEST) || v->translation.upstream ||
                             v->translation.fipcup))
                ret = shmb_transfer_bench_recheck(v, part, m, size);
        }
    return ret < 0 ? ret : push_part(p, rows, rounds, first);
}

/* Each system's parts as shares of its own request's p50 (the copy row is
 * every system's), and on its request row the copy and what the parts add
 * up to, as a --system run's notes. */
static void shares(const paired_t *p, shmb_rows_t *rows, const size_t first[3], const shmb_row_t *copy)
{
    for (size_t s = 0; s < p->n; s++) {
        if (p->systems[s] == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM) /* labelled as the model's translate */
            snprintf(rows->v[first[1] + place(p, SHMB_TRANSFER_TRANSLATE, s)].note, sizeof(rows->v[0].note), "%s",
                     SHMB_TRANSFER_NOT_UPSTREAM);
        if (!covers(p->systems[s], SHMB_TRANSFER_REQUEST))
            continue;
        shmb_row_t *parts[2] = {&rows->v[first[0] + place(p, SHMB_TRANSFER_REQUEST_PATH, s)],
                                &rows->v[first[1] + place(p, SHMB_TRANSFER_TRANSLATE, s)]};
        shmb_row_t *req = &rows->v[first[2] + place(p, SHMB_TRANSFER_REQUEST, s)];
        shmb_transfer_share_notes(req, parts, 2, copy->ns.p50, copy->variant);
        if (p->systems[s] == SHMB_SYSTEM_FLOWIPC_JEMALLOC) /* its control too, when it is the baseline */
            shmb_transfer_handoff_notes(req, parts[1], SHMB_TRANSFER_WRITE_PATH);
    }
}

/* The view that hands SHM-jemalloc's objects over, or NULL. */
static shmb_transfer_run_t *jemalloc_view(paired_t *p)
{
    for (size_t s = 0; s < p->n; s++)
        if (p->views[s].translation.handoff && p->views[s].translation.system == SHMB_SYSTEM_FLOWIPC_JEMALLOC)
            return &p->views[s];
    return NULL;
}

/* The rows of one size: request_path and translate paired, each method's
 * copy once, the request paired, copying with the first method; beside
 * mooncake_upstream, submit. */
static int measure_size(paired_t *p, shmb_rows_t *rows, uint64_t size, shmb_copy_method_t first_method)
{
    const shmb_transfer_config_t *cfg = p->base.cfg;
    size_t first[3];
    if (cfg->zero_copy)
        return measure_part(p, rows, SHMB_TRANSFER_ZERO_COPY, first_method, size, &first[0]);
    int ret = measure_part(p, rows, SHMB_TRANSFER_REQUEST_PATH, first_method, size, &first[0]);
    if (ret == 0)
        ret = measure_part(p, rows, SHMB_TRANSFER_TRANSLATE, first_method, size, &first[1]);
    for (int m = 0; m < SHMB_COPY_METHODS && ret == 0; m++)
        if (cfg->run[m])
            ret = shmb_transfer_bench_warm(&p->base, rows, SHMB_TRANSFER_COPY, (shmb_copy_method_t)m, size);
    if (ret == 0)
        ret = measure_part(p, rows, SHMB_TRANSFER_REQUEST, first_method, size, &first[2]);
    if (ret == 0 && jemalloc_view(p))
        ret = shmb_transfer_handoff_copy_out(jemalloc_view(p), rows, first_method, size);
    size_t submit;
    for (size_t s = 0; s < p->n && ret == 0; s++)
        if (p->systems[s] == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
            ret = measure_part(p, rows, SHMB_TRANSFER_SUBMIT, first_method, size, &submit);
    if (ret < 0)
        return ret;
    shares(p, rows, first,
           shmb_rows_find(rows, shmb_copy_method_name(first_method), "", size / 1024, cfg->repetition));
    return 0;
}

/* Does system s hand objects over (zero-copy rows: every flavour; else
 * SHM-jemalloc, whose write is a hand-off)? */
static int hands_over(const shmb_transfer_config_t *cfg, shmb_system_t s)
{
    return s != SHMB_SYSTEM_MOONCAKE && (cfg->zero_copy || s == SHMB_SYSTEM_FLOWIPC_JEMALLOC);
}

/* Each system's translation over base's src, dst and crew, checked; the
 * hand-off link of the systems that hand over. */
static int views_start(paired_t *p, uint64_t max, char *why, size_t why_cap)
{
    const shmb_transfer_config_t *cfg = p->base.cfg;
    int flavour[SHMB_SYSTEMS + 3] = {0}, any = 0; /* + 3: the upstream systems, which hand nothing over */
    for (size_t s = 0; s < p->n; s++)
        any |= flavour[p->systems[s]] = hands_over(cfg, p->systems[s]);
    int ret = any ? shmb_transfer_handoff_open(cfg, flavour, max, &p->link, why, why_cap) : 0;
    int upstream = 0;
    for (size_t s = 0; s < p->n; s++)
        upstream |= p->systems[s] == SHMB_SYSTEM_MOONCAKE_UPSTREAM;
    for (size_t s = 0; s < p->n && ret == 0; s++) {
        p->cfgs[s] = *cfg;
        p->cfgs[s].nsystems = 0;
        p->cfgs[s].translate = 1;
        p->cfgs[s].system = p->systems[s];
        shmb_transfer_run_t *v = &p->views[s];
        shmb_transfer_bench_run_init(v, &p->cfgs[s], why, why_cap);
        ret = shmb_transfer_view_start(v, &p->base);
        if (hands_over(cfg, p->systems[s]))
            v->translation.handoff = p->link;
        if (ret == 0)
            ret = shmb_transfer_bench_verify_translations(v);
        if (upstream && p->systems[s] == SHMB_SYSTEM_MOONCAKE) /* the model and its control, as upstream's */
            v->translation.spread = cfg->num_segments;
    }
    return ret;
}

/* Submitter m's own hand-off link and borrower process. */
static int own_link(shmb_transfer_run_t *sub, int m, uint64_t max)
{
    sub->translation.handoff = NULL;
    int ret = shmb_transfer_handoff_writer(sub, max);
    if (ret == 0 && m == 1)
        sub->translation.handoff->wrong_tag = shmb_transfer_bench_submitter_wrong_tag;
    return ret;
}

/* Each borrower on its submitter's CPU (the crew's plan from cfg->cpu on),
 * as the one borrower shares the measuring CPU with one submitter: the
 * writer waits for each return message, so the two take turns. A forked
 * borrower had its parent's affinity, --cpu's. */
static int pin_borrowers(paired_t *p)
{
    int cpus[SHMB_TRANSFER_MAX_THREADS];
    int ret = shmb_sysinfo_plan_cpus(p->base.cfg->cpu, p->k, cpus);
    for (size_t s = 0; s < p->n && ret >= 0; s++)
        for (int m = 0; m < p->k && ret >= 0 && p->views[s].translation.handoff; m++)
            ret = shmb_handoff_link_pin_peer(view_of(p, s, m)->translation.handoff, cpus[m]);
    return ret < 0 ? ret : 0;
}

/* k > 1: each system's submitters 1..k-1, each a stride further into dst
 * (a submit's descriptors of the largest size), SHM-jemalloc's each with
 * its own link, and the crew that runs them with the views, pinned from
 * cfg->cpu on as --threads' crews. */
static int submitters_start(paired_t *p, uint64_t max)
{
    const shmb_transfer_config_t *cfg = p->base.cfg;
    p->k = cfg->submitters > 1 ? cfg->submitters : 1;
    if (p->k == 1)
        return 0;
    const uint64_t stride = max * shmb_transfer_descriptors(cfg, SHMB_TRANSFER_REQUEST);
    p->subs = calloc(p->n * (size_t)(p->k - 1), sizeof(*p->subs));
    p->t0 = calloc((size_t)p->k, sizeof(*p->t0));
    p->t1 = calloc((size_t)p->k, sizeof(*p->t1));
    if (!p->subs || !p->t0 || !p->t1)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = 0;
    for (size_t s = 0; s < p->n; s++)
        for (int m = 1; m < p->k && ret == 0; m++) {
            ret = shmb_transfer_submitter_start(view_of(p, s, m), &p->views[s], (uint64_t)m * stride);
            if (ret == 0 && p->views[s].translation.handoff)
                ret = own_link(view_of(p, s, m), m, max);
        }
    if (ret == 0 && p->link)
        ret = pin_borrowers(p);
    const shmb_crew_config_t cc = {.threads = p->k, .cpu = cfg->cpu, .pin = SHMB_CREW_PIN_OWN, .caller_joins = 1};
    return ret < 0 ? ret : shmb_crew_start(&p->crew, &cc);
}

/* What submitters_start made undone, their links' borrowers reaped: ret,
 * or the first stop's error when it had none. */
static int submitters_stop(paired_t *p, int ret)
{
    shmb_crew_stop(p->crew);
    for (size_t i = 0; p->subs && i < p->n * (size_t)(p->k - 1); i++) {
        if (p->subs[i].translation.handoff != p->link)
            ret = shmb_transfer_handoff_close(p->subs[i].translation.handoff, ret);
        shmb_transfer_submitter_stop(&p->subs[i]);
    }
    free(p->subs);
    free(p->t0);
    free(p->t1);
    return ret;
}

int shmb_transfer_bench_paired(const shmb_transfer_config_t *cfg, const uint64_t *sizes, size_t nsizes,
                               shmb_copy_method_t first, shmb_rows_t *rows, char *why, size_t why_cap)
{
    paired_t *p = calloc(1, sizeof(*p));
    if (!p)
        return shmb_error_record("malloc", ENOMEM, NULL);
    p->n = cfg->nsystems;
    memcpy(p->systems, cfg->systems, p->n * sizeof(*p->systems));
    p->k = 1;
    shmb_transfer_paired_names(p->systems, p->n, &p->names);
    shmb_transfer_bench_run_init(&p->base, cfg, why, why_cap);
    const size_t start = rows->n;
    int ret = shmb_transfer_bench_prepare(&p->base, sizes[nsizes - 1]);
    if (ret == 0)
        ret = views_start(p, sizes[nsizes - 1], why, why_cap);
    if (ret == 0)
        ret = submitters_start(p, sizes[nsizes - 1]);
    uint64_t kb = 0;
    shmb_transfer_progress_plan(cfg->progress, sizes, nsizes);
    for (size_t i = 0; i < nsizes && ret == 0; i++) {
        shmb_transfer_progress_size(cfg->progress, &kb, sizes[i], "paired ");
        ret = measure_size(p, rows, sizes[i], first);
    }
    ret = submitters_stop(p, ret);
    for (size_t s = 0; s < p->n; s++) {
        shmb_transfer_bench_translation_stop(&p->views[s]);
        free(p->samples[s]);
    }
    shmb_transfer_bench_copier_stop(&p->base);
    ret = shmb_transfer_handoff_close(p->link, ret);
    if (ret == 0)
        shmb_transfer_bench_speedups(rows, start);
    int rd = shmb_transfer_buffers_destroy(&p->base);
    free(p);
    return ret < 0 ? ret : rd;
}
