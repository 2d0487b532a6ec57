/* handoff_bench: each flavour's and one system's rows, planted faults, a borrower that dies,
 * refused configurations, and the configuration derived from a lookup's. */
#include <dirent.h>
#include <unistd.h>

#include "helpers.h"

#include "models/fipc_internal.h"
#include "models/handoff_internal.h"
#include "shmbench/error.h"
#include "shmbench/handoff_bench.h"

static int cleanup(void **state)
{
    shmb_fipc_fault = SHMB_FIPC_FAULT_NONE;
    shmb_handoff_bench_wrong_tag = 0;
    shmb_handoff_bench_peer_dies_at = 0;
    shmb_test_remove_ours();
    return 0;
}

/* Nothing of the run left: no file of ours, no child process. */
static void assert_nothing_left(void)
{
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_test_assert_no_child();
}

static shmb_handoff_bench_config_t config(int classic, int jemalloc)
{
    shmb_handoff_bench_config_t c;
    memset(&c, 0, sizeof(c));
    c.run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC] = classic;
    c.run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC] = jemalloc;
    c.object_kb = 4;
    c.count = 300;
    c.min_time_ms = 0;
    c.seed = 42;
    c.shm_prefix = shmb_test_prefix();
    c.segments = 100;
    return c;
}

static const shmb_row_t *find(const shmb_rows_t *rows, const char *variant, const char *step)
{
    return shmb_rows_find(rows, variant, step, 100, 0);
}

/* A measured hand-off row: at least count hand-offs, all verified, and whether messages crossed. */
static void assert_handoff_row(const shmb_row_t *row, uint64_t count, const char *how)
{
    assert_non_null(row);
    assert_true(row->iterations >= count);
    char want[64];
    snprintf(want, sizeof(want), "verified %llu/%llu, %s", (unsigned long long)row->iterations,
             (unsigned long long)row->iterations, how);
    assert_string_equal(row->note, want);
    assert_true(row->ns.p50 > 0 && row->ns.p50 <= row->ns.p99 && row->ns.p99 <= row->ns.max);
}

/* Appends the rows of a run of c that must succeed (else the case fails naming why). */
static void run_ok(const shmb_handoff_bench_config_t *c, shmb_rows_t *rows)
{
    char why[256] = "";
    const int ret = shmb_handoff_bench_run(c, rows, why, sizeof(why));
    if (ret != 0)
        fail_msg("run: %d: %s", ret, why);
}

static void test_rows_one_process(void **state)
{
    shmb_handoff_bench_config_t c = config(1, 1);
    shmb_rows_t rows = {0};
    run_ok(&c, &rows);
    assert_int_equal(rows.n, 3);
    assert_string_equal(rows.v[0].variant, "flowipc_classic");
    assert_string_equal(rows.v[0].step, SHMB_HANDOFF_STEP);
    assert_handoff_row(&rows.v[0], 300, "no crossing");
    assert_handoff_row(find(&rows, "flowipc_jemalloc", SHMB_HANDOFF_STEP), 300, "no crossing");
    /* In batches: whole batches of hand-offs. */
    assert_int_equal(rows.v[0].iterations % shmb_handoff_bench_batch(4), 0);
    const shmb_row_t *pool = find(&rows, "flowipc_jemalloc", SHMB_HANDOFF_POOL_STEP);
    assert_non_null(pool);
    assert_true(pool->iterations >= 1);
    assert_string_equal(pool->note, "lend round trip per pool, no crossing");
    assert_null(find(&rows, "flowipc_classic", SHMB_HANDOFF_POOL_STEP));
    assert_true(rows.v[0].speedup == 0); /* no mooncake row to divide */
    shmb_rows_free(&rows);
    assert_nothing_left();
}

/* Against mooncake's translation row already there: its p50 / the row's. */
static void test_speedup_vs_mooncake(void **state)
{
    shmb_handoff_bench_config_t c = config(0, 1);
    shmb_rows_t rows = {0};
    shmb_row_t base = shmb_row_make("mooncake", "segments", 100, 0);
    base.iterations = 1;
    double sample = 1000.0;
    assert_int_equal(shmb_rows_push_samples(&rows, &base, &sample, 1), 0);
    run_ok(&c, &rows);
    const shmb_row_t *row = find(&rows, "flowipc_jemalloc", SHMB_HANDOFF_STEP);
    assert_non_null(row);
    assert_true(row->speedup > 0);
    assert_true(row->speedup * row->ns.p50 > 999.0 && row->speedup * row->ns.p50 < 1001.0);
    assert_true(find(&rows, "flowipc_jemalloc", SHMB_HANDOFF_POOL_STEP)->speedup == 0);
    shmb_rows_free(&rows);
}

/* One system: rows named by step, a step it does not have unmeasured, so two systems' runs pair by row. */
static void test_system_rows(void **state)
{
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        shmb_handoff_bench_config_t c = config(0, 0);
        c.run_system[s] = 1;
        c.system_rows = 1;
        shmb_rows_t rows = {0};
        run_ok(&c, &rows);
        assert_int_equal(rows.n, 2);
        assert_string_equal(rows.v[0].variant, "");
        assert_string_equal(rows.v[0].step, SHMB_HANDOFF_STEP);
        assert_string_equal(rows.v[1].variant, "");
        assert_string_equal(rows.v[1].step, SHMB_HANDOFF_POOL_STEP);
        assert_int_equal(rows.v[0].iterations > 0, s != SHMB_SYSTEM_MOONCAKE);
        assert_int_equal(rows.v[1].iterations > 0, s == SHMB_SYSTEM_FLOWIPC_JEMALLOC);
        shmb_rows_free(&rows);
    }
    assert_nothing_left();
}

/* With a borrower process: both flavours, each hand-off timed alone, no speedup; the process reaped. */
static void test_rows_peer(void **state)
{
    shmb_handoff_bench_config_t c = config(1, 1);
    c.peer_process = 1;
    c.count = 200;
    shmb_rows_t rows = {0};
    shmb_row_t base = shmb_row_make("mooncake", "segments", 100, 0);
    double sample = 1000.0;
    assert_int_equal(shmb_rows_push_samples(&rows, &base, &sample, 1), 0);
    run_ok(&c, &rows);
    assert_int_equal(rows.n, 4);
    const shmb_row_t *classic = find(&rows, "flowipc_classic", SHMB_HANDOFF_STEP);
    const shmb_row_t *jemalloc = find(&rows, "flowipc_jemalloc", SHMB_HANDOFF_STEP);
    assert_handoff_row(classic, 200, "blob + ack crossed");
    assert_handoff_row(jemalloc, 200, "2 msgs crossed");
    assert_int_equal(classic->iterations, 200);
    assert_true(classic->speedup == 0 && jemalloc->speedup == 0);
    assert_string_equal(find(&rows, "flowipc_jemalloc", SHMB_HANDOFF_POOL_STEP)->note,
                        "lend round trip per pool, crossed");
    shmb_rows_free(&rows);
    assert_nothing_left();
}

/* count 1: exactly one hand-off timed with a peer, one batch without. */
static void test_one_handoff(void **state)
{
    for (int peer = 0; peer < 2; peer++) {
        shmb_handoff_bench_config_t c = config(1, 1);
        c.count = 1;
        c.peer_process = peer;
        shmb_rows_t rows = {0};
        run_ok(&c, &rows);
        const uint64_t want = peer ? 1 : shmb_handoff_bench_batch(4);
        assert_int_equal(find(&rows, "flowipc_classic", SHMB_HANDOFF_STEP)->iterations, want);
        assert_int_equal(find(&rows, "flowipc_jemalloc", SHMB_HANDOFF_STEP)->iterations, want);
        shmb_rows_free(&rows);
    }
    assert_nothing_left();
}

/* Each flavour fails its run with -EPROTO and a reason, rows untouched. */
static void assert_refused(shmb_handoff_bench_config_t *c, const char *reason)
{
    for (int f = SHMB_SYSTEM_FLOWIPC_CLASSIC; f <= SHMB_SYSTEM_FLOWIPC_JEMALLOC; f++) {
        memset(c->run_system, 0, sizeof(c->run_system));
        c->run_system[f] = 1;
        shmb_rows_t rows = {0};
        char why[256] = "";
        assert_int_equal(shmb_handoff_bench_run(c, &rows, why, sizeof(why)), -EPROTO);
        assert_non_null(strstr(why, shmb_system_name((shmb_system_t)f)));
        assert_non_null(strstr(why, reason));
        assert_int_equal(rows.n, 0);
        shmb_rows_free(&rows);
    }
    assert_nothing_left();
}

/* Refused before timing: a model's fault; a wrong tag in a timed hand-off, in this process and the borrower. */
static void test_faults_refused(void **state)
{
    shmb_handoff_bench_config_t c = config(1, 1);
    shmb_fipc_fault = SHMB_FIPC_FAULT_BORROW_ADDR;
    assert_refused(&c, "step-by-step hand-off check failed");
    shmb_fipc_fault = SHMB_FIPC_FAULT_NONE;
    c.count = 600;
    shmb_handoff_bench_wrong_tag = 400;
    for (c.peer_process = 0; c.peer_process < 2; c.peer_process++)
        assert_refused(&c, "hand-off 399: the borrowed object");
}

/* The borrower dies midway: -EPIPE, recorded as "peer process" with how it ended; nothing left. */
static void test_peer_dies(void **state)
{
    for (int f = SHMB_SYSTEM_FLOWIPC_CLASSIC; f <= SHMB_SYSTEM_FLOWIPC_JEMALLOC; f++) {
        shmb_handoff_bench_config_t c = config(f == SHMB_SYSTEM_FLOWIPC_CLASSIC, f == SHMB_SYSTEM_FLOWIPC_JEMALLOC);
        c.peer_process = 1;
        shmb_handoff_bench_peer_dies_at = 100;
        shmb_rows_t rows = {0};
        char why[256] = "";
        shmb_error_clear();
        assert_int_equal(shmb_handoff_bench_run(&c, &rows, why, sizeof(why)), -EPIPE);
        assert_non_null(shmb_error_last()->call);
        assert_string_equal(shmb_error_last()->call, "peer process");
        assert_non_null(strstr(shmb_error_last()->object, "killed by signal 9"));
        assert_int_equal(rows.n, 0);
        shmb_rows_free(&rows);
        assert_nothing_left();
    }
}

/* A link stopped after a broken run (-EPIPE) while its borrower lives and a later borrower holds a
 * copy of its channel: the stop ends it (-EPIPE, no hang), then the other's, nothing left. */
static void test_stop_after_broken_run(void **state)
{
    char why[256] = "";
    shmb_handoff_link_t a, b;
    shmb_handoff_link_init(&a, 1, why, sizeof(why));
    shmb_handoff_link_init(&b, 2, why, sizeof(why));
    assert_int_equal(shmb_handoff_link_start_peer(&a, shmb_test_prefix()), 0);
    assert_int_equal(shmb_handoff_link_start_peer(&b, shmb_test_prefix()), 0);
    alarm(20); /* a stop waiting for a borrower that never sees its channel end: killed, failed */
    assert_int_equal(shmb_handoff_link_stop_peer(&a, -EPIPE), -EPIPE);
    assert_int_equal(shmb_handoff_link_stop_peer(&b, 0), 0);
    alarm(0);
    assert_int_equal(a.peer.pid, 0);
    assert_int_equal(b.peer.pid, 0);
    assert_nothing_left();
}

static void test_bad_config(void **state)
{
    shmb_handoff_bench_config_t good = config(1, 1);
    assert_int_equal(shmb_handoff_bench_check(&good), 0);
    shmb_handoff_bench_config_t bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = good;
    bad[0].run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC] = bad[0].run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC] = 0;
    bad[1].system_rows = 1; /* two systems */
    bad[2].object_kb = 0;
    bad[3].object_kb = SHMB_HANDOFF_MAX_OBJECT_KB + 1;
    bad[4].count = 0;
    bad[5].count = SHMB_HANDOFF_MAX_COUNT + 1;
    bad[6].min_time_ms = -1;
    bad[7].shm_prefix = "no_slash";
    for (int i = 0; i < 8; i++) {
        shmb_rows_t rows = {0};
        char why[64] = "";
        assert_int_equal(shmb_handoff_bench_check(&bad[i]), -EINVAL);
        assert_int_equal(shmb_handoff_bench_run(&bad[i], &rows, why, sizeof(why)), -EINVAL);
        assert_int_equal(rows.n, 0);
    }
    assert_int_equal(shmb_handoff_bench_batch(4), SHMB_HANDOFF_BATCH);
    assert_int_equal(shmb_handoff_bench_batch(SHMB_HANDOFF_MAX_OBJECT_KB), 16);
    assert_int_equal(shmb_handoff_bench_batch(2048), 128);
    assert_nothing_left();
}

static shmb_lookup_config_t lookup_config(int mooncake, int classic, int jemalloc)
{
    shmb_lookup_config_t l;
    memset(&l, 0, sizeof(l));
    l.run_system[SHMB_SYSTEM_MOONCAKE] = mooncake;
    l.run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC] = classic;
    l.run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC] = jemalloc;
    l.run[SHMB_LOOKUP_LINEAR] = 1;
    l.num_segments = 100;
    l.num_lookups = 10000;
    l.lookup_len_kb = 4;
    l.min_time_ms = 50;
    l.seed = 7;
    l.shm_prefix = shmb_test_prefix();
    l.repetition = 2;
    return l;
}

/* A marker in *out that a call must leave alone. */
static shmb_handoff_bench_config_t untouched(void)
{
    shmb_handoff_bench_config_t c;
    memset(&c, 0, sizeof(c));
    c.count = 12345;
    return c;
}

/* The lookup's Flow-IPC systems and its fields; mooncake only with system_rows. */
static void test_config_from_lookup(void **state)
{
    shmb_lookup_config_t l = lookup_config(1, 0, 1);
    l.peer_process = 1;
    shmb_handoff_bench_config_t c = untouched();
    assert_int_equal(shmb_handoff_bench_config_from_lookup(&l, 1, &c), 1);
    assert_int_equal(c.run_system[SHMB_SYSTEM_MOONCAKE], 0);
    assert_int_equal(c.run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC], 0);
    assert_int_equal(c.run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC], 1);
    assert_int_equal(c.system_rows, 0);
    assert_int_equal(c.object_kb, 4);
    assert_int_equal(c.count, 10000);
    assert_true(c.min_time_ms == 50);
    assert_int_equal(c.peer_process, 1);
    assert_int_equal(c.seed, 7);
    assert_string_equal(c.shm_prefix, shmb_test_prefix());
    assert_int_equal(c.segments, 100);
    assert_int_equal(c.repetition, 2);
    assert_int_equal(shmb_handoff_bench_check(&c), 0);

    /* One system, mooncake included: its rows pair with a Flow-IPC run's. */
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        l = lookup_config(s == SHMB_SYSTEM_MOONCAKE, s == SHMB_SYSTEM_FLOWIPC_CLASSIC,
                          s == SHMB_SYSTEM_FLOWIPC_JEMALLOC);
        l.system_rows = 1;
        c = untouched();
        assert_int_equal(shmb_handoff_bench_config_from_lookup(&l, 1, &c), 1);
        for (int t = 0; t < SHMB_SYSTEMS; t++)
            assert_int_equal(c.run_system[t], t == s);
        assert_int_equal(c.system_rows, 1);
        assert_int_equal(shmb_handoff_bench_check(&c), 0);
    }
}

/* Nothing to run: out untouched; an object too large: -EINVAL if anything runs; the largest accepted. */
static void test_config_from_lookup_none_and_limits(void **state)
{
    const shmb_lookup_config_t none[3] = {lookup_config(1, 1, 1), lookup_config(1, 0, 0), lookup_config(0, 0, 0)};
    for (int i = 0; i < 3; i++) {
        shmb_handoff_bench_config_t c = untouched();
        assert_int_equal(shmb_handoff_bench_config_from_lookup(&none[i], i != 0, &c), 0);
        assert_int_equal(c.count, 12345);
        shmb_lookup_config_t big = none[i];
        big.lookup_len_kb = SHMB_HANDOFF_MAX_OBJECT_KB + 1;
        assert_int_equal(shmb_handoff_bench_config_from_lookup(&big, i != 0, &c), 0);
        assert_int_equal(c.count, 12345);
    }
    shmb_lookup_config_t l = lookup_config(0, 1, 0);
    l.lookup_len_kb = SHMB_HANDOFF_MAX_OBJECT_KB + 1;
    shmb_handoff_bench_config_t c = untouched();
    assert_int_equal(shmb_handoff_bench_config_from_lookup(&l, 1, &c), -EINVAL);
    assert_int_equal(c.count, 12345);
    l.lookup_len_kb = SHMB_HANDOFF_MAX_OBJECT_KB;
    assert_int_equal(shmb_handoff_bench_config_from_lookup(&l, 1, &c), 1);
    assert_int_equal(c.object_kb, SHMB_HANDOFF_MAX_OBJECT_KB);
    assert_int_equal(shmb_handoff_bench_check(&c), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_rows_one_process, cleanup),
        cmocka_unit_test_teardown(test_speedup_vs_mooncake, cleanup),
        cmocka_unit_test_teardown(test_system_rows, cleanup),
        cmocka_unit_test_teardown(test_rows_peer, cleanup),
        cmocka_unit_test_teardown(test_one_handoff, cleanup),
        cmocka_unit_test_teardown(test_faults_refused, cleanup),
        cmocka_unit_test_teardown(test_peer_dies, cleanup),
        cmocka_unit_test_teardown(test_stop_after_broken_run, cleanup),
        cmocka_unit_test_teardown(test_bad_config, cleanup),
        cmocka_unit_test(test_config_from_lookup),
        cmocka_unit_test(test_config_from_lookup_none_and_limits),
    };
    return shmb_test_run_shm("/shmb_test_handoff_", tests, NULL, NULL);
}
