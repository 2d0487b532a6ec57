/* The workload run (shmbench/workload.h, docs/workload.md) on the transfer
 * driver's machinery: the same buffers, translation and request path as a
 * --system row, fed with a request's descriptors (each from src to dst at
 * the same offset, shmb_workload_descriptor, through the request path as
 * its own batch of one; sglang: all of a request's in one batch);
 * SHM-jemalloc's request hands each descriptor over. */
#include "workload_internal.h"

#include "base/runner_internal.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/paired.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef shmb_workload_replay_t replay_t;

/* The transfer driver's config for this replay: one size (the largest
 * request, in KB), the system's translation, the copy's method, the
 * backing of src and dst. */
static void transfer_config(replay_t *w, uint64_t max_bytes)
{
    const shmb_workload_config_t *c = w->cfg;
    shmb_transfer_config_t tc = {0};
    tc.transfer_size_kb = tc.max_transfer_size_kb = (max_bytes + 1023) / 1024;
    tc.num_transfers = 1;
    tc.run[c->method] = 1;
    tc.threads = c->threads;
    tc.cpu = c->cpu;
    tc.translate = 1;
    tc.system = c->system;
    tc.num_segments = c->num_segments;
    tc.time_per_size_ms = 1;
    tc.timer_overhead_ns = c->timer_overhead_ns;
    tc.shm_prefix = c->shm_prefix;
    tc.repetition = c->repetition;
    tc.backing = c->backing;
    tc.granted = c->granted;
    w->tc = tc;
}

static void handoff_close(replay_t *w)
{
    shmb_transfer_handoff_close(w->r.translation.handoff, -ECANCELED);
    w->r.translation.handoff = NULL;
}

int shmb_workload_replay_start(replay_t *w, const shmb_workload_config_t *cfg, uint64_t max_bytes, char *why,
                               size_t why_cap)
{
    memset(w, 0, sizeof(*w));
    w->cfg = cfg;
    w->per_submit = shmb_workload_per_submit(&cfg->shape);
    shmb_transfer_bench_run_init(&w->r, NULL, why, why_cap);
    if ((unsigned)cfg->method >= SHMB_COPY_METHODS || max_bytes == 0)
        return -EINVAL;
    transfer_config(w, max_bytes);
    shmb_transfer_bench_run_init(&w->r, &w->tc, why, why_cap);
    if (shmb_transfer_bench_config_check(&w->tc) < 0)
        return -EINVAL;
    if (!(w->copy = shmb_copy_kernel(cfg->method)))
        return -ENOTSUP;
    int ret = shmb_transfer_bench_prepare(&w->r, w->tc.max_transfer_size_kb * 1024);
    return ret < 0 ? ret : shmb_transfer_handoff_writer(&w->r, w->tc.max_transfer_size_kb * 1024);
}

void shmb_workload_replay_stop(replay_t *w)
{
    for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++)
        shmb_stats_release(&w->samples[p]);
    shmb_workload_batch_free(w);
    if (!w->r.cfg)
        return;
    handoff_close(w);
    shmb_transfer_bench_copier_stop(&w->r);
    shmb_transfer_buffers_destroy(&w->r);
}

/* The descriptor at offset `at` of d bytes through the request path (hooks
 * NULL: no translation, no copy; else both): did it reach what it should? */
static int submit_ok(replay_t *w, uint64_t at, uint64_t d, const shmb_mooncake_hooks_t *hooks)
{
    shmb_transfer_translation_t *t = &w->r.translation;
    const uint64_t remote = t->remote_addr + at;
    unsigned char *src = w->r.src.addr, *dst = w->r.dst.addr;
    const shmb_mooncake_request_t req = {SHMB_MOONCAKE_WRITE, src + at, SHMB_PATH_MOONCAKE_TARGET_ID, remote, d};
    shmb_mooncake_submitted_t out;
    if (shmb_mooncake_engine_submit(t->engine, &req, hooks, &out) != 0 || out.buffer_addr != t->buffer_addr)
        return 0;
    if (!hooks)
        return out.target == (void *)(uintptr_t)remote;
    return out.target == dst + at && out.transferred_bytes == d;
}

/* One pass of a part over the request's descriptors, in order (stream by
 * stream, block by block: no division in the loop); a descriptor that does
 * not land where it should counts in r.translation.missed. Batched, the
 * request path's and the request's (a hand-off's too) in one submit. */
static void pass(replay_t *w, shmb_workload_part_t part, const shmb_workload_fanout_t *f)
{
    shmb_transfer_translation_t *t = &w->r.translation;
    unsigned char *src = w->r.src.addr, *dst = w->r.dst.addr;
    const shmb_mooncake_hooks_t hooks = {shmb_transfer_translate_dst, shmb_transfer_copy_request, &w->r},
                                written = t->handoff ? shmb_transfer_handoff_hooks(&w->r) : hooks;
    t->copy = w->copy;
    if (w->per_submit > 1 && (part == SHMB_WORKLOAD_REQUEST_PATH || part == SHMB_WORKLOAD_REQUEST)) {
        shmb_workload_batch_pass(w, f, part == SHMB_WORKLOAD_REQUEST ? &written : NULL);
        return;
    }
    for (uint64_t s = 0, at = 0; s < f->streams; s++)
        for (uint64_t j = 0; j < f->blocks; j++) {
            const uint64_t d = j + 1 == f->blocks ? f->last_bytes : f->descriptor_bytes;
            void *p = NULL;
            switch (part) {
            case SHMB_WORKLOAD_REQUEST_PATH: t->missed += !submit_ok(w, at, d, NULL); break;
            case SHMB_WORKLOAD_TRANSLATE:
                t->missed += shmb_transfer_translate_dst(&w->r, SHMB_PATH_MOONCAKE_TARGET_ID, t->remote_addr + at,
                                                         d, &p) != 0 || p != dst + at;
                break;
            case SHMB_WORKLOAD_COPY: shmb_copy_batch(w->r.crew, w->copy, dst + at, src + at, (size_t)d, 1); break;
            default:
                t->missed += t->handoff ? !shmb_transfer_handoff_write(&w->r, src + at, t->remote_addr + at, d)
                                        : !submit_ok(w, at, d, &hooks);
                break;
            }
            at += d;
        }
}

typedef struct passes {
    replay_t *w;
    shmb_workload_part_t part;
    const shmb_workload_fanout_t *f;
} passes_t;

static int run_passes(void *ctx, uint64_t count)
{
    const passes_t *p = ctx;
    for (uint64_t i = 0; i < count; i++)
        pass(p->w, p->part, p->f);
    return 0; /* a miss is counted in missed, checked after */
}

/* The part's time for the whole request, one sample: one pass, or when that
 * is shorter than 100 timer overheads (its sample dropped), as many passes
 * as make one that long, timed together and averaged. */
static int timed(replay_t *w, shmb_workload_part_t part, const shmb_workload_fanout_t *f)
{
    const double min_ns = shmb_transfer_min_batch_ns(w->cfg->timer_overhead_ns);
    shmb_samples_t *s = &w->samples[part];
    passes_t p = {w, part, f};
    shmb_runner_plan_t plan = {.ops = 1, .batches = 1};
    int ret = shmb_runner_run(&plan, run_passes, &p, s, NULL);
    if (ret == 0 && s->v[s->n - 1] < min_ns) {
        const double ns = s->v[--s->n];
        plan.ops = (uint64_t)ceil(min_ns / (ns > 1.0 ? ns : 1.0));
        ret = shmb_runner_run(&plan, run_passes, &p, s, NULL);
    }
    if (ret < 0)
        return shmb_error_record("malloc", ENOMEM, NULL); /* the passes never fail */
    w->bytes[part] += (double)f->bytes;
    w->ns[part] += s->v[s->n - 1];
    return 0;
}

/* -EPROTO unless every descriptor of the part landed where it should and,
 * for the parts that copy, dst holds the request's bytes. */
static int check(replay_t *w, shmb_workload_part_t part, const shmb_workload_fanout_t *f)
{
    shmb_transfer_translation_t *t = &w->r.translation;
    const char *system = shmb_system_name((shmb_system_t)t->system);
    size_t bad;
    int ret = shmb_transfer_handoff_verify(&w->r); /* a failed hand-off's reason first */
    if (ret < 0)
        return ret;
    if (t->missed) {
        snprintf(w->r.why, w->r.why_cap, "%s: request %zu, %s: %llu descriptor passes of %llu did not reach "
                 "their place in dst", system, w->index, shmb_workload_part_name(part),
                 (unsigned long long)t->missed, (unsigned long long)f->descriptors);
        return -EPROTO;
    }
    const int writes_dst = part == SHMB_WORKLOAD_COPY || (part == SHMB_WORKLOAD_REQUEST && !t->handoff);
    const int batched = w->per_submit > 1 && part == SHMB_WORKLOAD_REQUEST; /* its sources shifted */
    if (!writes_dst || !(batched ? shmb_workload_batch_differs(w, f, &bad)
                                 : shmb_copy_verify(w->r.dst.addr, (size_t)f->bytes, &bad)))
        return 0;
    snprintf(w->r.why, w->r.why_cap, "%s: request %zu, %s: descriptor %llu of %llu: first differing byte at "
             "offset %zu", system, w->index, shmb_workload_part_name(part),
             (unsigned long long)shmb_workload_descriptor_at(f, bad), (unsigned long long)f->descriptors, bad);
    return -EPROTO;
}

/* Before SHM-jemalloc's request is timed: the request handed over untimed
 * as the timed passes submit it (batched or not), the borrower reading back
 * every byte of every descriptor. */
static int checked_handoff(replay_t *w, const shmb_workload_fanout_t *f)
{
    shmb_transfer_translation_t *t = &w->r.translation;
    t->check_payload = 1;
    pass(w, SHMB_WORKLOAD_REQUEST, f);
    t->check_payload = 0;
    return check(w, SHMB_WORKLOAD_REQUEST_PATH, f);
}

int shmb_workload_replay_request(replay_t *w, const shmb_workload_fanout_t *f)
{
    int ret = shmb_workload_batch_room(w, f);
    for (int p = 0; p < SHMB_WORKLOAD_PARTS && ret == 0; p++) {
        if (p == SHMB_WORKLOAD_COPY || p == SHMB_WORKLOAD_REQUEST)
            memset(w->r.dst.addr, SHMB_TRANSFER_POISON, (size_t)f->bytes);
        w->r.translation.missed = 0;
        if (p == SHMB_WORKLOAD_REQUEST && w->r.translation.handoff)
            ret = checked_handoff(w, f);
        if (ret == 0 && (ret = timed(w, (shmb_workload_part_t)p, f)) == 0)
            ret = check(w, (shmb_workload_part_t)p, f);
    }
    return ret;
}

int shmb_workload_replay_prepare(replay_t *w, const shmb_workload_fanout_t *f)
{
    memset(w->r.dst.addr, SHMB_TRANSFER_POISON, (size_t)f->bytes);
    w->r.translation.missed = 0;
    const int ret = shmb_workload_batch_room(w, f);
    return ret == 0 && w->r.translation.handoff ? checked_handoff(w, f) : ret;
}

int shmb_workload_replay_once(replay_t *w, const shmb_workload_fanout_t *f, uint64_t *start, uint64_t *done)
{
    *start = shmb_clock_now_ns();
    pass(w, SHMB_WORKLOAD_REQUEST, f);
    *done = shmb_clock_now_ns();
    return check(w, SHMB_WORKLOAD_REQUEST, f);
}

/* A part's row as both runs name it: model:<preset> in arg_text. */
static shmb_row_t part_row(const shmb_workload_config_t *c, int p)
{
    shmb_row_t row = shmb_row_make(shmb_workload_part_name((shmb_workload_part_t)p), "model", 0, c->repetition);
    snprintf(row.arg_text, sizeof(row.arg_text), "%s", c->shape.model->name);
    row.threads = c->threads;
    return row;
}

/* One system's rows, at at[part]: the copy's and the request's rates over
 * all their passes; each part's share of the request's p50 in its note. */
static void finish_rows(const replay_t *w, shmb_rows_t *rows, const size_t at[SHMB_WORKLOAD_PARTS])
{
    shmb_row_t *req = &rows->v[at[SHMB_WORKLOAD_REQUEST]];
    double sum = 0;
    for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++) {
        shmb_row_t *row = &rows->v[at[p]];
        if (p == SHMB_WORKLOAD_COPY || p == SHMB_WORKLOAD_REQUEST)
            row->bytes_per_second = w->bytes[p] * 1e9 / w->ns[p];
        if (p == SHMB_WORKLOAD_REQUEST)
            continue;
        sum += row->ns.p50;
        snprintf(row->note, sizeof(row->note), "%.3f%% of request p50", 100.0 * row->ns.p50 / req->ns.p50);
    }
    snprintf(req->note, sizeof(req->note), "parts add up to %.1f%%", 100.0 * sum / req->ns.p50);
    if (w->cfg->shape.reuse) /* the stream's hit share, beside the figures it shrank */
        snprintf(req->note + strlen(req->note), sizeof(req->note) - strlen(req->note), "; hits %.1f%% of blocks",
                 w->hit_share);
    if (w->r.translation.handoff)
        shmb_transfer_handoff_notes(req, &rows->v[at[SHMB_WORKLOAD_TRANSLATE]], "each descriptor handed over");
}

static int push_rows(replay_t *w, shmb_rows_t *rows)
{
    size_t at[SHMB_WORKLOAD_PARTS];
    for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++) {
        shmb_row_t row = part_row(w->cfg, p);
        if (w->cfg->name_system)
            snprintf(row.step, sizeof(row.step), "%s", shmb_system_name(w->cfg->system));
        row.iterations = w->samples[p].n;
        at[p] = rows->n;
        int ret = shmb_rows_push_samples(rows, &row, w->samples[p].v, w->samples[p].n);
        if (ret < 0)
            return ret;
    }
    finish_rows(w, rows, at);
    return 0;
}

/* ---- paired: every system replays each request in turn ---- */

/* A replay of system `c->system` over the buffers and crew of `owner` (a
 * started replay): its own translation and request path, checked. Stop it
 * with view_stop, whatever this returned. */
static int view_start(replay_t *w, const shmb_workload_config_t *c, const replay_t *owner, char *why,
                      size_t why_cap)
{
    memset(w, 0, sizeof(*w));
    w->cfg = c;
    w->copy = owner->copy;
    w->per_submit = owner->per_submit;
    transfer_config(w, owner->tc.max_transfer_size_kb * 1024);
    shmb_transfer_bench_run_init(&w->r, &w->tc, why, why_cap);
    int ret = shmb_transfer_view_start(&w->r, &owner->r);
    if (ret == 0)
        ret = shmb_transfer_bench_verify_translations(&w->r);
    return ret < 0 ? ret : shmb_transfer_handoff_writer(&w->r, w->tc.max_transfer_size_kb * 1024);
}

static void view_stop(replay_t *w)
{
    handoff_close(w);
    for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++)
        shmb_stats_release(&w->samples[p]);
    shmb_workload_batch_free(w);
    shmb_transfer_bench_translation_stop(&w->r);
}

/* Per part, each system's row and each one's ratio to the baseline, paired
 * request by request (shmb_paired_push_rows); then each system's notes. */
static int push_paired(replay_t *w, size_t n, const char *const *names, size_t requests, shmb_rows_t *rows)
{
    size_t first[SHMB_WORKLOAD_PARTS], at[SHMB_WORKLOAD_PARTS];
    for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++) {
        shmb_row_t tmpl = part_row(w[0].cfg, p);
        tmpl.iterations = 1; /* a sample is one request */
        double *samples[SHMB_PAIRED_MAX_SYSTEMS];
        for (size_t s = 0; s < n; s++)
            samples[s] = w[s].samples[p].v;
        int ret = shmb_paired_push_rows(rows, &tmpl, names, n, samples, requests, &first[p]);
        if (ret == -ENOMEM)
            return shmb_error_record("malloc", ENOMEM, NULL);
        if (ret < 0)
            return ret;
    }
    for (size_t s = 0; s < n; s++) {
        for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++)
            at[p] = first[p] + s;
        finish_rows(&w[s], rows, at);
    }
    return 0;
}

/* Request i's fan-out (checked by shmb_workload_totals before), or 0 when
 * it moves nothing (reuse: every block hit). */
static int fanout(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream, size_t i,
                  shmb_workload_fanout_t *f)
{
    const uint64_t tokens = shmb_workload_tokens(&cfg->shape, &stream->v[i]);
    return tokens && shmb_workload_fanout(&cfg->shape, tokens, f) == 0;
}

static double hit_share(const shmb_workload_totals_t *t)
{
    return t->hash_ids ? 100.0 * (double)t->hits / (double)t->hash_ids : 0.0;
}

/* Says which request starts (between requests, never inside one). */
static void progress_request(const shmb_workload_config_t *cfg, const char *who, size_t i, size_t n)
{
    char label[64];
    snprintf(label, sizeof(label), "replay %s: request %zu/%zu", who, i + 1, n);
    shmb_progress_step(cfg->progress, i, label);
}

/* The paired replay: the baseline's replay owns src, dst and the crew; each
 * other system (the control too) a replay over them; request by request,
 * every system replays it, in the order of shmb_paired_order. */
int shmb_workload_paired_replay(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream,
                                const shmb_workload_totals_t *totals, shmb_rows_t *rows, char *why, size_t why_cap)
{
    const size_t n = cfg->nsystems;
    shmb_workload_config_t *cfgs = calloc(n, sizeof(*cfgs));
    replay_t *w = calloc(n, sizeof(*w));
    if (!cfgs || !w) {
        free(cfgs);
        free(w);
        return shmb_error_record("malloc", ENOMEM, NULL);
    }
    for (size_t s = 0; s < n; s++) {
        cfgs[s] = *cfg;
        cfgs[s].nsystems = 0;
        cfgs[s].name_system = 0;
        cfgs[s].system = cfg->systems[s];
    }
    shmb_transfer_paired_names_t names;
    shmb_transfer_paired_names(cfg->systems, n, &names);
    int ret = shmb_workload_replay_start(&w[0], &cfgs[0], totals->max_bytes, why, why_cap);
    size_t started = 1;
    for (; started < n && ret == 0; started++)
        ret = view_start(&w[started], &cfgs[started], &w[0], why, why_cap);
    shmb_progress_plan(cfg->progress, stream->n);
    for (size_t i = 0; i < stream->n && ret == 0; i++) {
        shmb_workload_fanout_t f;
        if (!fanout(cfg, stream, i, &f))
            continue;
        progress_request(cfg, "paired", i, stream->n);
        for (size_t pos = 0; pos < n && ret == 0; pos++) {
            replay_t *one = &w[shmb_paired_order(n, i, pos)];
            one->index = i;
            ret = shmb_workload_replay_request(one, &f);
        }
    }
    for (size_t s = 0; s < n; s++)
        w[s].hit_share = hit_share(totals);
    if (ret == 0)
        ret = push_paired(w, n, names.v, stream->n - totals->wholly_hit, rows);
    for (size_t s = started; s-- > 1;)
        view_stop(&w[s]);
    shmb_workload_replay_stop(&w[0]);
    free(w);
    free(cfgs);
    return ret;
}

int shmb_workload_closed_replay(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream,
                                const shmb_workload_totals_t *totals, shmb_rows_t *rows, char *why, size_t why_cap)
{
    replay_t w;
    int ret = shmb_workload_replay_start(&w, cfg, totals->max_bytes, why, why_cap);
    w.hit_share = hit_share(totals);
    shmb_progress_plan(cfg->progress, stream->n);
    for (size_t i = 0; i < stream->n && ret == 0; i++) {
        shmb_workload_fanout_t f;
        if (!fanout(cfg, stream, i, &f))
            continue;
        progress_request(cfg, shmb_system_name(cfg->system), i, stream->n);
        w.index = i;
        ret = shmb_workload_replay_request(&w, &f);
    }
    if (ret == 0)
        ret = push_rows(&w, rows);
    shmb_workload_replay_stop(&w);
    return ret;
}
