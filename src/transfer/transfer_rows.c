/* The rows, each part run here or in the peer, checked before it is timed
 * and timed through base/runner (transfer_internal.h). */
#include "transfer_internal.h"

#include "base/runner_internal.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MAX_BATCH (1u << 20)
#define SAMPLES_PER_REPLY (SHMB_TRANSFER_PEER_DATA_BYTES / sizeof(double))

typedef shmb_transfer_run_t run_t;

/* ---- the owner's buffers, and its calls to its peer ---- */

/* The owner's buffer seg as a backing of r->cfg's kind (for send and residency). */
static shmb_backing_t backing_of(const run_t *r, const shmb_segment_t *seg)
{
    shmb_backing_t b;
    memset(&b, 0, sizeof(b));
    b.kind = r->cfg->backing.kind;
    b.seg = *seg;
    b.owner = 1;
    shmb_backing_page_size(&r->cfg->backing, &b.page_size);
    return b;
}

/* src's and dst's residency, summed, read back from the kernel. */
static int granted(const run_t *r, shmb_backing_residency_t *out)
{
    shmb_backing_residency_t sum = {0, 0, 0};
    const shmb_segment_t *segs[2] = {&r->src, &r->dst};
    for (int i = 0; i < 2; i++) {
        shmb_backing_t b = backing_of(r, segs[i]);
        shmb_backing_residency_t one;
        int ret = shmb_backing_residency(&b, &one);
        if (ret < 0)
            return ret;
        sum.resident_bytes += one.resident_bytes;
        sum.huge_bytes += one.huge_bytes;
        sum.allocated_bytes += one.allocated_bytes;
    }
    *out = sum;
    return 0;
}

static int call(const run_t *r, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, const char *name,
                uint64_t result[SHMB_PEER_RESULTS])
{
    return shmb_peer_command(r->cfg->peer, op, a0, a1, a2, 0, name, result);
}

/* A command about the owner's buffer seg: a tmpfs one goes by its name, the
 * others as a descriptor on the channel first (the peer takes it off the
 * channel before anything else, so the stream stays in step). A send that
 * finds the peer gone (-EPIPE: it held its end) still makes the call, which
 * then records how the peer ended. */
static int call_with(run_t *r, uint32_t op, uint64_t a0, uint64_t a1, const shmb_segment_t *seg,
                     uint64_t result[SHMB_PEER_RESULTS])
{
    if (r->cfg->backing.kind != SHMB_BACKING_TMPFS) {
        shmb_backing_t b = backing_of(r, seg);
        int ret = shmb_backing_send(&b, &r->cfg->peer->channel);
        if (ret < 0 && ret != -EPIPE)
            return ret;
        return call(r, op, a0, a1, 0, NULL, result);
    }
    return call(r, op, a0, a1, 0, seg->name, result);
}

static int peer_attach(run_t *r, uint64_t max)
{
    uint64_t res[SHMB_PEER_RESULTS];
    r->peer_holds = 1;
    int ret = call_with(r, SHMB_TRANSFER_OP_ATTACH, 0, max, &r->src, res);
    if (ret == 0)
        ret = call_with(r, SHMB_TRANSFER_OP_ATTACH, 1, max, &r->dst, res);
    if (ret < 0)
        return ret;
    memcpy(r->cfg->peer->data, r->cfg, sizeof(*r->cfg));
    if ((ret = call(r, SHMB_TRANSFER_OP_SETUP, 0, 0, 0, NULL, res)) < 0)
        return ret;
    r->translation.missed = res[0];
    return 0;
}

static int peer_copy(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size, int timed,
                     uint64_t *done)
{
    uint64_t res[SHMB_PEER_RESULTS];
    int ret = shmb_peer_command(r->cfg->peer, SHMB_TRANSFER_OP_COPY, (uint64_t)m, size, (uint64_t)timed,
                                (uint64_t)part, NULL, res);
    if (ret < 0)
        return ret;
    *done = res[0];
    r->translation.missed = res[2];
    r->samples.n = 0;
    while (r->samples.n < res[1]) {
        uint64_t got[SHMB_PEER_RESULTS];
        if ((ret = call(r, SHMB_TRANSFER_OP_SAMPLES, r->samples.n, 0, 0, NULL, got)) < 0)
            return ret;
        if (got[0] == 0 || got[0] > SAMPLES_PER_REPLY || got[0] > res[1] - r->samples.n)
            return shmb_error_record("peer samples", EPROTO, NULL);
        const double *v = r->cfg->peer->data;
        for (uint64_t i = 0; i < got[0]; i++)
            if ((ret = shmb_transfer_bench_add_sample(r, v[i])) < 0)
                return ret;
    }
    return 0;
}

int shmb_transfer_peer_first_write(run_t *r, shmb_copy_method_t m, const shmb_segment_t *fresh, uint64_t size,
                                   uint64_t *ns)
{
    uint64_t res[SHMB_PEER_RESULTS];
    int ret = call_with(r, SHMB_TRANSFER_OP_COLD, (uint64_t)m, size, fresh, res);
    if (ret == 0)
        *ns = res[0];
    return ret;
}

int shmb_transfer_peer_detach(run_t *r)
{
    return call(r, SHMB_TRANSFER_OP_DETACH, 0, 0, 0, NULL, NULL);
}

/* ---- the rows ---- */

void shmb_transfer_bench_part(run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size, uint64_t count)
{
    if (shmb_transfer_handoff_runs(r, part)) /* SHM-jemalloc's write path: a hand-off per descriptor */
        shmb_transfer_handoff_part(r, part, fn, size, count);
    else
        shmb_transfer_copier_part(r, part, fn, size, count);
}

/* A part's batch for the runner. */
typedef struct batch {
    run_t *r;
    shmb_transfer_part_t part;
    shmb_copy_fn fn;
    uint64_t size;
} batch_t;

static int run_batch(void *ctx, uint64_t count)
{
    const batch_t *b = ctx;
    shmb_transfer_bench_part(b->r, b->part, b->fn, b->size, count);
    return 0; /* a miss is counted in r->translation.missed, checked after */
}

uint64_t shmb_transfer_bench_batch(run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size)
{
    batch_t b = {r, part, fn, size};
    int err;
    return shmb_runner_batch(run_batch, &b, shmb_transfer_min_batch_ns(r->cfg->timer_overhead_ns), MAX_BATCH, &err);
}

/* num_transfers exactly, in batches as even as can be, each at least
 * min_batch long (fewer transfers: one batch), until the budget runs out.
 * A part that moves no bytes runs at least SHMB_TRANSFER_MIN_PART_BATCHES
 * full batches (a count given: one), so that its percentiles have samples. */
static int timed_transfers(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size,
                           uint64_t *done)
{
    batch_t b = {r, part, shmb_copy_kernel(m), size};
    const uint64_t min_batch = shmb_transfer_bench_batch(r, part, b.fn, size);
    uint64_t num = r->cfg->num_transfers;
    const uint64_t least = r->cfg->count_given ? min_batch : min_batch * SHMB_TRANSFER_MIN_PART_BATCHES;
    if (!shmb_transfer_part_copies(part) && num < least)
        num = least;
    const shmb_runner_plan_t plan = {.ops = num, .batches = num / min_batch ? num / min_batch : 1,
                                     .budget_ns = (uint64_t)(r->cfg->time_per_size_ms * 1e6)};
    *done = 0;
    r->samples.n = 0;
    int ret = shmb_runner_run(&plan, run_batch, &b, &r->samples, done);
    const uint64_t per = shmb_transfer_descriptors(r->cfg, part); /* the rows are per descriptor */
    for (size_t i = 0; i < r->samples.n && per > 1; i++)
        r->samples.v[i] /= (double)per;
    *done *= per;
    return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
}

int shmb_transfer_bench_copy(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size, int timed,
                             uint64_t *done)
{
    if ((unsigned)part >= SHMB_TRANSFER_PARTS || (part != SHMB_TRANSFER_COPY && r->translation.system < 0))
        return -EINVAL;
    if (timed)
        return timed_transfers(r, part, m, size, done);
    shmb_transfer_bench_part(r, part, shmb_copy_kernel(m), size, 1);
    *done = 1;
    return 0;
}

int shmb_transfer_bench_first_write(run_t *r, shmb_copy_method_t m, void *dst, uint64_t size, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_copy_first_write(r->crew, shmb_copy_kernel(m), dst, r->src.addr, (size_t)size);
    *ns = shmb_clock_now_ns() - t0;
    return ret;
}

int shmb_transfer_bench_verify_translations(run_t *r)
{
    int ret = shmb_transfer_handoff_verify(r);
    if (ret < 0 || r->translation.missed == 0)
        return ret;
    snprintf(r->why, r->why_cap,
             r->translation.spread ? "%s: %llu translations or requests did not land where their buffer is"
                                   : "%s: %llu translations or requests of dst did not give its address",
             shmb_transfer_system_name((shmb_system_t)r->translation.system),
             (unsigned long long)r->translation.missed);
    return -EPROTO;
}

int shmb_transfer_bench_prepare(run_t *r, uint64_t max)
{
    max *= shmb_transfer_descriptors(r->cfg, SHMB_TRANSFER_REQUEST); /* a submit's descriptors, side by side */
    const uint64_t dst_bytes = max * (r->cfg->submitters > 1 ? (uint64_t)r->cfg->submitters : 1); /* each its own */
    int ret = shmb_transfer_create_buffer(r, &r->src, max, 1);
    if (ret == 0)
        ret = shmb_transfer_create_buffer(r, &r->dst, dst_bytes, 1);
    if (ret < 0)
        return ret;
    shmb_copy_fill_pattern(r->src.addr, (size_t)max);
    memset(r->dst.addr, SHMB_TRANSFER_POISON, (size_t)dst_bytes);
    if (r->cfg->granted && (ret = granted(r, r->cfg->granted)) < 0)
        return ret;
    ret = r->cfg->peer ? peer_attach(r, max) : shmb_transfer_bench_copier_start(r);
    return ret < 0 ? ret : shmb_transfer_bench_verify_translations(r);
}

/* The part writes dst, whose bytes are then verified: a hand-off writes an
 * object of its own instead, which the borrower checks. */
static int moves_dst(const run_t *r, shmb_transfer_part_t part)
{
    return shmb_transfer_part_copies(part) && !shmb_transfer_handoff_runs(r, part);
}

/* The part runs in this process: without a peer, and a hand-off always
 * (the writer is this process, the reader the hand-off's borrower process). */
static int here(const run_t *r, shmb_transfer_part_t part)
{
    return !r->cfg->peer || shmb_transfer_handoff_runs(r, part);
}

static int check(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size, const char *when)
{
    uint64_t done;
    memset(r->dst.addr, SHMB_TRANSFER_POISON, (size_t)(size * shmb_transfer_descriptors(r->cfg, part)));
    r->translation.check_payload = 1; /* a hand-off's borrower checks every byte it got */
    int ret = here(r, part) ? shmb_transfer_bench_copy(r, part, m, size, 0, &done)
                            : peer_copy(r, part, m, size, 0, &done);
    r->translation.check_payload = 0;
    if (ret == 0)
        ret = shmb_transfer_bench_verify_translations(r); /* a missed translation copied nothing */
    if (ret == 0 && r->translation.system == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
        ret = shmb_transfer_upstream_check(r, part);
    if (ret == 0 && r->translation.system == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM)
        ret = shmb_transfer_fipcup_check(r, part);
    if (ret == 0 && r->translation.spread && (part == SHMB_TRANSFER_TRANSLATE || part == SHMB_TRANSFER_SUBMIT))
        ret = shmb_transfer_spread_check(r, part, size); /* every buffer's landing */
    if (ret == 0 && r->translation.spread)
        ret = shmb_transfer_bench_verify_translations(r);
    if (ret == 0 && moves_dst(r, part))
        ret = shmb_transfer_verify_descriptors(r, part, m, size, when);
    return ret;
}

int shmb_transfer_bench_check(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size)
{
    return check(r, part, m, size, "before timing");
}

int shmb_transfer_bench_recheck(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size)
{
    return check(r, part, m, size, "after the rounds");
}

int shmb_transfer_bench_warm(run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part, shmb_copy_method_t m,
                             uint64_t size)
{
    int (*copy)(run_t *, shmb_transfer_part_t, shmb_copy_method_t, uint64_t, int, uint64_t *) =
        here(r, part) ? shmb_transfer_bench_copy : peer_copy;
    const int verify_after = moves_dst(r, part) && (r->cfg->verify || r->cfg->peer);
    uint64_t done;
    int ret = shmb_transfer_bench_check(r, part, m, size);
    if (ret < 0)
        return ret;
    if (verify_after)
        memset(r->dst.addr, SHMB_TRANSFER_POISON, (size_t)(size * shmb_transfer_descriptors(r->cfg, part)));
    if ((ret = copy(r, part, m, size, 1, &done)) < 0)
        return ret;
    if (verify_after && (ret = shmb_transfer_verify_descriptors(r, part, m, size, "after timing")) < 0)
        return ret;
    if ((ret = shmb_transfer_bench_verify_translations(r)) < 0)
        return ret;
    return shmb_transfer_bench_push_row(r, rows, part, m, size, "", done);
}

int shmb_transfer_handoff_copy_out(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size)
{
    shmb_handoff_object_t o;
    void *payload;
    int ret = shmb_transfer_handoff_object(r, size, &o, &payload);
    if (ret < 0)
        return ret;
    shmb_transfer_config_t cfg = *r->cfg;
    cfg.peer = NULL; /* the reader's copy runs here, over the arena's pages */
    run_t view = *r;
    memset(&view.samples, 0, sizeof(view.samples));
    view.cfg = &cfg;
    view.src.addr = payload;
    view.translation.handoff = NULL; /* the object is held until the copies are done: checked after */
    ret = shmb_transfer_bench_warm(&view, rows, SHMB_TRANSFER_COPY_OUT, m, size);
    shmb_stats_release(&view.samples);
    return shmb_transfer_handoff_release(r, &o, size, ret);
}
