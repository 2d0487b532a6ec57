#include <math.h>

#include "helpers.h"

#include "shmbench/stats.h"

static void test_one_sample(void **state)
{
    double v[] = {7.0};
    shmb_stats_t s;
    assert_int_equal(shmb_stats_compute(v, 1, &s), 0);
    assert_int_equal(s.count, 1);
    assert_float_equal(s.min, 7.0, 1e-12);
    assert_float_equal(s.max, 7.0, 1e-12);
    assert_float_equal(s.mean, 7.0, 1e-12);
    assert_float_equal(s.stddev, 0.0, 1e-12);
    assert_float_equal(s.p50, 7.0, 1e-12);
    assert_float_equal(s.p99, 7.0, 1e-12);
    assert_float_equal(s.p999, 7.0, 1e-12);
}

/* Odd count, given unsorted: {5, 1, 4, 2, 3}. */
static void test_odd_count(void **state)
{
    double v[] = {5, 1, 4, 2, 3};
    shmb_stats_t s;
    assert_int_equal(shmb_stats_compute(v, 5, &s), 0);
    assert_float_equal(s.min, 1.0, 1e-12);
    assert_float_equal(s.max, 5.0, 1e-12);
    assert_float_equal(s.mean, 3.0, 1e-12);
    /* sum of squares 4+1+0+1+4 = 10, / (n-1) = 2.5 */
    assert_float_equal(s.stddev, sqrt(2.5), 1e-12);
    assert_float_equal(s.p50, 3.0, 1e-12);
    /* rank (n-1)*0.9 = 3.6: 4 + 0.6 * (5 - 4) */
    assert_float_equal(s.p90, 4.6, 1e-12);
    /* rank 3.96 */
    assert_float_equal(s.p99, 4.96, 1e-12);
    /* rank 3.996 */
    assert_float_equal(s.p999, 4.996, 1e-12);
    /* sorted in place */
    for (int i = 0; i < 5; i++)
        assert_float_equal(v[i], (double)(i + 1), 1e-12);
}

/* Even count: the median lies between the two middle samples. */
static void test_even_count(void **state)
{
    double v[] = {4, 1, 3, 2};
    shmb_stats_t s;
    assert_int_equal(shmb_stats_compute(v, 4, &s), 0);
    assert_float_equal(s.mean, 2.5, 1e-12);
    assert_float_equal(s.p50, 2.5, 1e-12);
    /* rank 3 * 0.9 = 2.7: 3 + 0.7 */
    assert_float_equal(s.p90, 3.7, 1e-12);
    /* sum of squares 2.25+0.25+0.25+2.25 = 5, / 3 */
    assert_float_equal(s.stddev, sqrt(5.0 / 3.0), 1e-12);
}

static void test_ties(void **state)
{
    double v[] = {2, 2, 2, 9, 2, 2};
    shmb_stats_t s;
    assert_int_equal(shmb_stats_compute(v, 6, &s), 0);
    assert_float_equal(s.min, 2.0, 1e-12);
    assert_float_equal(s.p50, 2.0, 1e-12);
    assert_float_equal(s.max, 9.0, 1e-12);
    assert_float_equal(s.mean, 19.0 / 6.0, 1e-12);
    /* rank 5 * 0.9 = 4.5: 2 + 0.5 * 7 */
    assert_float_equal(s.p90, 5.5, 1e-12);
}

static void test_percentile_bounds(void **state)
{
    const double v[] = {10, 20, 30};
    assert_float_equal(shmb_stats_percentile(v, 3, 0.0), 10.0, 1e-12);
    assert_float_equal(shmb_stats_percentile(v, 3, 100.0), 30.0, 1e-12);
    assert_float_equal(shmb_stats_percentile(v, 3, 25.0), 15.0, 1e-12);
}

static void test_empty_and_null(void **state)
{
    double v[] = {1};
    shmb_stats_t s = {.count = 99};
    assert_int_equal(shmb_stats_compute(v, 0, &s), -EINVAL);
    assert_int_equal(shmb_stats_compute(NULL, 1, &s), -EINVAL);
    assert_int_equal(shmb_stats_compute(v, 1, NULL), -EINVAL);
    assert_int_equal(s.count, 99); /* untouched on error */
}

static void test_append_grows_and_keeps_order(void **state)
{
    shmb_samples_t set = {0};
    for (int i = 0; i < 1000; i++) /* past several doublings */
        assert_int_equal(shmb_stats_append(&set, (double)i), 0);
    assert_int_equal(set.n, 1000);
    assert_true(set.cap >= 1000);
    for (int i = 0; i < 1000; i++)
        assert_float_equal(set.v[i], (double)i, 0.0);
    shmb_stats_t s;
    assert_int_equal(shmb_stats_compute(set.v, set.n, &s), 0);
    assert_float_equal(s.mean, 499.5, 1e-9);
    shmb_stats_release(&set);
    assert_null(set.v);
    assert_int_equal(set.n, 0);
    assert_int_equal(set.cap, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_sample),      cmocka_unit_test(test_odd_count),
        cmocka_unit_test(test_even_count),      cmocka_unit_test(test_ties),
        cmocka_unit_test(test_percentile_bounds), cmocka_unit_test(test_empty_and_null),
        cmocka_unit_test(test_append_grows_and_keeps_order),
    };
    return shmb_test_run(tests, NULL, NULL);
}
