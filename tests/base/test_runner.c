#include <stdatomic.h>

#include "helpers.h"

#include "base/runner_internal.h"
#include "shmbench/clock.h"

/* A batch that records its counts, spins ns_per_op per operation (slow_ns in all from slow_from on),
 * fails at call fail_at (1-based; 0: never) and sets a stop flag after stop_after calls. */
typedef struct probe {
    uint64_t counts[64];
    size_t calls;
    uint64_t ns_per_op;
    uint64_t slow_from, slow_ns;
    size_t fail_at;
    size_t stop_after;
    atomic_int *stop;
} probe_t;

static int probe_fn(void *ctx, uint64_t count)
{
    probe_t *p = ctx;
    if (p->calls < 64)
        p->counts[p->calls] = count;
    p->calls++;
    if (p->fail_at && p->calls == p->fail_at)
        return -EPROTO;
    const uint64_t ns = p->slow_from && count >= p->slow_from ? p->slow_ns : count * p->ns_per_op;
    const uint64_t until = shmb_clock_now_ns() + ns;
    while (ns && shmb_clock_now_ns() < until)
        ;
    if (p->stop && p->calls == p->stop_after)
        atomic_store(p->stop, 1);
    return 0;
}

#define ANY SIZE_MAX /* a figure a row does not check */

/* Plans differing in values: calls, per-call counts, samples, ops done (NULL when ANY), and the result. */
static void test_plans(void **state)
{
    static atomic_int stop;
    static const struct {
        const char *what;
        shmb_runner_plan_t plan;
        size_t fail_at, stop_after;
        int ret;
        size_t calls, samples, done;
        uint64_t counts[5];
    } rows[] = {
        {"7 ops in 3 batches split evenly", {.ops = 7, .batches = 3, .budget_ns = UINT64_MAX}, 0, 0, 0, 3, 3, 7,
         {3, 2, 2}},
        {"more batches than ops: one op each", {.ops = 2, .batches = 5, .budget_ns = UINT64_MAX}, 0, 0, 0, 2, ANY, 2,
         {1, 1}},
        {"a zero budget, spent by the first batch: min_batches run", {.ops = 4, .budget_ns = 0, .min_batches = 5},
         0, 0, 0, 5, 5, ANY, {4, 4, 4, 4, 4}},
        {"the first batch runs whatever the budget", {.ops = 3, .batches = 10, .budget_ns = 0}, 0, 0, 0, 1, ANY, ANY,
         {0}},
        {"the stop flag ends the run", {.ops = 1, .budget_ns = UINT64_MAX, .stop = &stop}, 0, 3, 0, 3, ANY, ANY, {0}},
        {"a failure stops and is returned", {.ops = 6, .batches = 3, .budget_ns = UINT64_MAX}, 2, 0, -EPROTO, 2, 1, 2,
         {0}},
        {"no ops is refused", {.ops = 0, .batches = 1}, 0, 0, -EINVAL, 0, ANY, ANY, {0}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        atomic_store(&stop, 0);
        probe_t p = {.fail_at = rows[i].fail_at, .stop_after = rows[i].stop_after,
                     .stop = rows[i].stop_after ? &stop : NULL};
        shmb_samples_t s = {0};
        uint64_t done = 0;
        const int ret = shmb_runner_run(&rows[i].plan, probe_fn, &p, &s, rows[i].done == ANY ? NULL : &done);
        int ok = ret == rows[i].ret && p.calls == rows[i].calls && (rows[i].samples == ANY || s.n == rows[i].samples) &&
                 (rows[i].done == ANY || done == rows[i].done);
        for (size_t k = 0; k < 5 && rows[i].counts[k]; k++)
            ok = ok && p.counts[k] == rows[i].counts[k];
        const size_t samples = s.n;
        shmb_stats_release(&s);
        if (!ok)
            fail_msg("%s: returned %d after %zu calls, %zu samples, %llu done", rows[i].what, ret, p.calls, samples,
                     (unsigned long long)done);
    }
}

/* before and after run untimed around each batch, with its count, in order; either's failure ends the run,
 * after's even when the batch failed first (the batch's error wins). */
typedef struct hooked {
    probe_t batch, before, after;
    char order[64];
    size_t n;
} hooked_t;

static int hook_batch(void *ctx, uint64_t count)
{
    hooked_t *h = ctx;
    h->order[h->n++] = 'b';
    return probe_fn(&h->batch, count);
}

static int hook_before(void *ctx, uint64_t count)
{
    hooked_t *h = ctx;
    h->order[h->n++] = '<';
    return probe_fn(&h->before, count);
}

static int hook_after(void *ctx, uint64_t count)
{
    hooked_t *h = ctx;
    h->order[h->n++] = '>';
    return probe_fn(&h->after, count);
}

static void test_hooks_around_each_batch_untimed(void **state)
{
    /* the hooks spin 10 ms per operation each: a sample under 20 ms per operation timed the batch alone */
    hooked_t h = {.before = {.ns_per_op = 10000000}, .after = {.ns_per_op = 10000000}};
    shmb_samples_t s = {0};
    uint64_t done = 0;
    shmb_runner_plan_t plan = {.ops = 5, .batches = 2, .budget_ns = UINT64_MAX, .before = hook_before,
                               .after = hook_after};
    assert_int_equal(shmb_runner_run(&plan, hook_batch, &h, &s, &done), 0);
    assert_string_equal(h.order, "<b><b>");
    assert_int_equal(h.before.counts[0], 3);
    assert_int_equal(h.after.counts[0], 3);
    assert_int_equal(h.before.counts[1], 2);
    assert_int_equal(h.after.counts[1], 2);
    assert_int_equal(done, 5);
    assert_int_equal(s.n, 2);
    for (size_t i = 0; i < s.n; i++)
        assert_true(s.v[i] < 20000000.0);
    shmb_stats_release(&s);
    /* a failing before: no batch; a failing after: its batch's sample not kept */
    hooked_t b = {.before = {.fail_at = 2}};
    assert_int_equal(shmb_runner_run(&plan, hook_batch, &b, &s, &done), -EPROTO);
    assert_string_equal(b.order, "<b><");
    assert_int_equal(s.n, 1);
    shmb_stats_release(&s);
    hooked_t a = {.after = {.fail_at = 1}};
    assert_int_equal(shmb_runner_run(&plan, hook_batch, &a, &s, &done), -EPROTO);
    assert_string_equal(a.order, "<b>");
    assert_int_equal(s.n, 0);
    /* the batch fails and after still runs (it lets go of what the batch holds) */
    hooked_t f = {.batch = {.fail_at = 1}, .after = {.fail_at = 1}};
    plan.before = NULL;
    assert_int_equal(shmb_runner_run(&plan, hook_batch, &f, &s, &done), -EPROTO);
    assert_string_equal(f.order, "b>");
    shmb_stats_release(&s);
}

static void test_samples_are_ns_per_op(void **state)
{
    probe_t p = {.ns_per_op = 20000};
    shmb_samples_t s = {0};
    const shmb_runner_plan_t plan = {.ops = 10, .batches = 2, .budget_ns = UINT64_MAX};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, NULL), 0);
    assert_int_equal(s.n, 2);
    for (size_t i = 0; i < s.n; i++)
        assert_true(s.v[i] >= 20000.0 && s.v[i] < 20000.0 * 50);
    shmb_stats_release(&s);
}

/* clocks: each batch's start and end bracket the batch, and are set when after runs. */
typedef struct clocked {
    uint64_t clocks[2], inside[2], seen[2][2];
    int calls;
} clocked_t;

static int clocked_batch(void *ctx, uint64_t count)
{
    (void)count;
    clocked_t *c = ctx;
    c->inside[c->calls] = shmb_clock_now_ns();
    return 0;
}

static int clocked_after(void *ctx, uint64_t count)
{
    (void)count;
    clocked_t *c = ctx;
    c->seen[c->calls][0] = c->clocks[0];
    c->seen[c->calls][1] = c->clocks[1];
    c->calls++;
    return 0;
}

static void test_clocks_bracket_each_batch(void **state)
{
    clocked_t c = {0};
    shmb_samples_t s = {0};
    const shmb_runner_plan_t plan = {.ops = 2, .batches = 2, .budget_ns = UINT64_MAX, .after = clocked_after,
                                     .clocks = c.clocks};
    assert_int_equal(shmb_runner_run(&plan, clocked_batch, &c, &s, NULL), 0);
    assert_int_equal(c.calls, 2);
    for (int b = 0; b < 2; b++) {
        assert_true(c.seen[b][0] <= c.inside[b] && c.inside[b] <= c.seen[b][1]);
        assert_true(s.v[b] == (double)(c.seen[b][1] - c.seen[b][0]));
    }
    assert_true(c.seen[0][1] <= c.seen[1][0]);
    shmb_stats_release(&s);
}

/* The batch doubles until it lasts min_ns (8 spins 300 ms) or hits the cap; a failure returns 0 and its error. */
static void test_batch_sizes(void **state)
{
    static const struct {
        const char *what;
        probe_t probe;
        double min_ns;
        uint64_t cap, want;
        int err;
        size_t calls;
    } rows[] = {
        {"doubles until min_ns", {.slow_from = 8, .slow_ns = 300000000}, 200e6, 1u << 20, 8, 0, 4},
        {"stops at the cap", {.calls = 0}, 1e12, 16, 16, 0, 5},
        {"a failure returns 0", {.fail_at = 2}, 1e12, 1u << 20, 0, -EPROTO, 2},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        probe_t p = rows[i].probe;
        int err = 7;
        const uint64_t got = shmb_runner_batch(probe_fn, &p, rows[i].min_ns, rows[i].cap, &err);
        if (got != rows[i].want || err != rows[i].err || p.calls != rows[i].calls ||
            (got && p.counts[p.calls - 1] != got))
            fail_msg("%s: %llu after %zu calls, err %d", rows[i].what, (unsigned long long)got, p.calls, err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plans),
        cmocka_unit_test(test_hooks_around_each_batch_untimed),
        cmocka_unit_test(test_samples_are_ns_per_op),
        cmocka_unit_test(test_clocks_bracket_each_batch),
        cmocka_unit_test(test_batch_sizes),
    };
    return shmb_test_run(tests, NULL, NULL);
}
