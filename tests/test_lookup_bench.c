#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shmbench/lookup_bench.h"

static shmb_lookup_config_t small(void)
{
    shmb_lookup_config_t c;
    memset(&c, 0, sizeof(c));
    c.num_segments = 50;
    c.num_lookups = 1000;
    c.segment_size_mb = 64;
    c.lookup_len_kb = 4;
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++)
        c.run[s] = 1;
    c.seed = 5;
    c.min_time_ms = 1;
    return c;
}

static void test_check(void **state)
{
    (void)state;
    shmb_lookup_config_t c = small();
    assert_int_equal(shmb_lookup_bench_check(&c), 0);
    c.num_segments = 0;
    assert_int_equal(shmb_lookup_bench_check(&c), -EINVAL);
    c = small();
    c.num_lookups = 0;
    assert_int_equal(shmb_lookup_bench_check(&c), -EINVAL);
    c = small();
    c.lookup_len_kb = 64 * 1024 + 1; /* longer than a segment */
    assert_int_equal(shmb_lookup_bench_check(&c), -EINVAL);
    c.lookup_len_kb = 64 * 1024;     /* exactly a segment */
    assert_int_equal(shmb_lookup_bench_check(&c), 0);
    c = small();
    c.num_segments = 1048577;        /* x 64 MB > 64 TiB */
    assert_int_equal(shmb_lookup_bench_check(&c), -EOVERFLOW);
    c.num_segments = 1048576;        /* exactly 64 TiB */
    assert_int_equal(shmb_lookup_bench_check(&c), 0);
    c = small();
    c.segment_size_mb = UINT64_MAX / 2;
    assert_int_equal(shmb_lookup_bench_check(&c), -EOVERFLOW);
}

static void check_rows(int sequential)
{
    shmb_lookup_config_t c = small();
    c.sequential = sequential;
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 4);
    static const char *names[] = {"linear", "lower_bound", "tree", "arithmetic"};
    for (int i = 0; i < 4; i++) {
        const shmb_row_t *r = &rows.v[i];
        assert_string_equal(r->variant, names[i]);
        assert_string_equal(r->step, "");
        assert_string_equal(r->arg_name, "segments");
        assert_true(r->arg == 50);
        /* batches of 4096 (the minimum), a pool of 32 batches */
        assert_string_equal(r->note, "verified 131072/131072");
        assert_true(r->ns.count >= SHMB_LOOKUP_MIN_BATCHES);
        assert_true(r->iterations == r->ns.count * SHMB_LOOKUP_MIN_BATCH);
        assert_true(r->ns.mean > 0);
        assert_float_equal(r->speedup, rows.v[0].ns.mean / r->ns.mean, 1e-9);
    }
    assert_float_equal(rows.v[0].speedup, 1.0, 1e-12);
    shmb_rows_free(&rows);
}

static void test_random_rows(void **state)
{
    (void)state;
    check_rows(0);
}

static void test_sequential_rows(void **state)
{
    (void)state;
    check_rows(1);
}

static void test_subset_without_linear_has_no_speedup(void **state)
{
    (void)state;
    shmb_lookup_config_t c = small();
    c.run[SHMB_LOOKUP_LINEAR] = 0;
    c.run[SHMB_LOOKUP_TREE] = 0;
    c.num_segments = 1;
    c.num_lookups = 1;
    shmb_rows_t rows = {0};
    char why[256];
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 2);
    assert_string_equal(rows.v[0].variant, "lower_bound");
    assert_true(rows.v[0].speedup == 0);
    assert_string_equal(rows.v[1].note, "verified 131072/131072");
    assert_true(rows.v[1].iterations >= SHMB_LOOKUP_MIN_BATCH * SHMB_LOOKUP_MIN_BATCHES);
    shmb_rows_free(&rows);
}

static void test_large_batches_make_the_pool(void **state)
{
    (void)state;
    shmb_lookup_config_t c = small();
    c.num_lookups = 100000; /* two windows of 100000 >= the minimum pool */
    c.run[SHMB_LOOKUP_LINEAR] = c.run[SHMB_LOOKUP_TREE] = c.run[SHMB_LOOKUP_LOWER_BOUND] = 0;
    shmb_rows_t rows = {0};
    char why[256];
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
    assert_string_equal(rows.v[0].note, "verified 200000/200000");
    assert_true(rows.v[0].iterations == rows.v[0].ns.count * 100000);
    shmb_rows_free(&rows);
}

static void test_bad_config_appends_nothing(void **state)
{
    (void)state;
    shmb_lookup_config_t c = small();
    c.segment_size_mb = 0;
    shmb_rows_t rows = {0};
    char why[256];
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    assert_int_equal(rows.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_random_rows),
        cmocka_unit_test(test_sequential_rows),
        cmocka_unit_test(test_subset_without_linear_has_no_speedup),
        cmocka_unit_test(test_large_batches_make_the_pool),
        cmocka_unit_test(test_bad_config_appends_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
