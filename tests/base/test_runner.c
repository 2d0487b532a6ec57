#include <stdatomic.h>

#include "helpers.h"

#include "base/runner_internal.h"
#include "shmbench/clock.h"

/* A batch function that records the counts it was given, spins ns_per_op
 * per operation (a batch of slow_from operations or more: slow_ns in all),
 * fails at call fail_at (1-based; 0: never) and may set a stop flag after
 * stop_after calls. */
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

static void test_batches_split_ops_evenly(void **state)
{
    probe_t p = {0};
    shmb_samples_t s = {0};
    uint64_t done = 0;
    const shmb_runner_plan_t plan = {.ops = 7, .batches = 3, .budget_ns = UINT64_MAX};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, &done), 0);
    assert_int_equal(p.calls, 3);
    assert_int_equal(p.counts[0], 3);
    assert_int_equal(p.counts[1], 2);
    assert_int_equal(p.counts[2], 2);
    assert_int_equal(s.n, 3);
    assert_int_equal(done, 7);
    shmb_stats_release(&s);
}

static void test_more_batches_than_ops_runs_one_op_each(void **state)
{
    probe_t p = {0};
    shmb_samples_t s = {0};
    uint64_t done = 0;
    const shmb_runner_plan_t plan = {.ops = 2, .batches = 5, .budget_ns = UINT64_MAX};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, &done), 0);
    assert_int_equal(p.calls, 2);
    assert_int_equal(p.counts[0], 1);
    assert_int_equal(p.counts[1], 1);
    assert_int_equal(done, 2);
    shmb_stats_release(&s);
}

static void test_budget_stops_after_min_batches(void **state)
{
    probe_t p = {0};
    shmb_samples_t s = {0};
    /* A zero budget is spent by the first batch: only min_batches run. */
    const shmb_runner_plan_t plan = {.ops = 4, .budget_ns = 0, .min_batches = 5};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, NULL), 0);
    assert_int_equal(p.calls, 5);
    assert_int_equal(s.n, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(p.counts[i], 4);
    shmb_stats_release(&s);
}

static void test_first_batch_runs_whatever_the_budget(void **state)
{
    probe_t p = {0};
    shmb_samples_t s = {0};
    const shmb_runner_plan_t plan = {.ops = 3, .batches = 10, .budget_ns = 0};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, NULL), 0);
    assert_int_equal(p.calls, 1);
    shmb_stats_release(&s);
}

static void test_stop_flag_ends_the_run(void **state)
{
    atomic_int stop = 0;
    probe_t p = {.stop = &stop, .stop_after = 3};
    shmb_samples_t s = {0};
    const shmb_runner_plan_t plan = {.ops = 1, .budget_ns = UINT64_MAX, .stop = &stop};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, NULL), 0);
    assert_int_equal(p.calls, 3);
    shmb_stats_release(&s);
}

static void test_failure_stops_and_is_returned(void **state)
{
    probe_t p = {.fail_at = 2};
    shmb_samples_t s = {0};
    uint64_t done = 0;
    const shmb_runner_plan_t plan = {.ops = 6, .batches = 3, .budget_ns = UINT64_MAX};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, &done), -EPROTO);
    assert_int_equal(p.calls, 2);
    assert_int_equal(s.n, 1);
    assert_int_equal(done, 2);
    shmb_stats_release(&s);
}

/* before and after run untimed around each batch, with its count, in
 * order; a failure of either ends the run with it, after's even when the
 * batch failed first (the batch's error wins). */
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
    /* the hooks spin 10 ms per operation each, the batch nothing: timed with them a sample would be
     * 20 ms per operation at least, so under that it is the batch alone (a stall of 40 ms or more
     * in an empty batch would fail it) */
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

static void test_no_ops_is_refused(void **state)
{
    probe_t p = {0};
    shmb_samples_t s = {0};
    const shmb_runner_plan_t plan = {.ops = 0, .batches = 1};
    assert_int_equal(shmb_runner_run(&plan, probe_fn, &p, &s, NULL), -EINVAL);
    assert_int_equal(p.calls, 0);
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

static void test_batch_doubles_until_min_ns(void **state)
{
    int err = 1;
    /* Batches of 1, 2 and 4 return at once, one of 8 spins 300 ms: the
     * 200 ms floor is first met at 8 (a busy machine would have to stall a
     * batch of nothing for 200 ms to stop the doubling early). */
    probe_t p = {.slow_from = 8, .slow_ns = 300000000};
    assert_int_equal(shmb_runner_batch(probe_fn, &p, 200e6, 1u << 20, &err), 8);
    assert_int_equal(err, 0);
    assert_int_equal(p.calls, 4);
    assert_int_equal(p.counts[3], 8);
}

static void test_batch_stops_at_cap(void **state)
{
    int err = 1;
    probe_t p = {0};
    assert_int_equal(shmb_runner_batch(probe_fn, &p, 1e12, 16, &err), 16);
    assert_int_equal(err, 0);
    assert_int_equal(p.calls, 5);
}

static void test_batch_failure_returns_zero(void **state)
{
    int err = 0;
    probe_t p = {.fail_at = 2};
    assert_int_equal(shmb_runner_batch(probe_fn, &p, 1e12, 1u << 20, &err), 0);
    assert_int_equal(err, -EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_split_ops_evenly),
        cmocka_unit_test(test_more_batches_than_ops_runs_one_op_each),
        cmocka_unit_test(test_budget_stops_after_min_batches),
        cmocka_unit_test(test_first_batch_runs_whatever_the_budget),
        cmocka_unit_test(test_stop_flag_ends_the_run),
        cmocka_unit_test(test_failure_stops_and_is_returned),
        cmocka_unit_test(test_hooks_around_each_batch_untimed),
        cmocka_unit_test(test_no_ops_is_refused),
        cmocka_unit_test(test_samples_are_ns_per_op),
        cmocka_unit_test(test_batch_doubles_until_min_ns),
        cmocka_unit_test(test_batch_stops_at_cap),
        cmocka_unit_test(test_batch_failure_returns_zero),
    };
    return shmb_test_run(tests, NULL, NULL);
}
