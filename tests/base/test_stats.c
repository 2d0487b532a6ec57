#include <math.h>

#include "helpers.h"

#include "shmbench/stats.h"

static int ascending(const void *a, const void *b)
{
    return (*(const double *)a > *(const double *)b) - (*(const double *)a < *(const double *)b);
}

/* count, min, max, mean, sample stddev and interpolated percentiles (rank (n-1)p) of each set, sorted in place. */
static void test_samples(void **state)
{
    static const struct {
        const char *what;
        double v[6];
        size_t n;
        double min, max, mean, stddev, p50, p90, p99, p999;
    } cases[] = {
        {"one sample", {7}, 1, 7, 7, 7, 0, 7, 7, 7, 7},
        /* sum of squares 4+1+0+1+4 = 10, / (n-1); p90: rank 3.6, 4 + 0.6 * (5 - 4) */
        {"odd count, unsorted", {5, 1, 4, 2, 3}, 5, 1, 5, 3, 1.5811388300841898, 3, 4.6, 4.96, 4.996},
        /* the median between the two middle samples; squares 2.25+0.25+0.25+2.25 = 5, / 3; p90: rank 2.7 */
        {"even count", {4, 1, 3, 2}, 4, 1, 4, 2.5, 1.2909944487358056, 2.5, 3.7, 3.97, 3.997},
        /* squares 101 - 6 * (19/6)^2 = 245/6, / 5; p90: rank 4.5, 2 + 0.5 * 7 */
        {"ties", {2, 2, 2, 9, 2, 2}, 6, 2, 9, 19.0 / 6, 2.8577380332470415, 2, 5.5, 8.65, 8.965},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double v[6];
        memcpy(v, cases[i].v, sizeof(v));
        shmb_stats_t s;
        assert_int_equal(shmb_stats_compute(v, cases[i].n, &s), 0);
        const double got[] = {s.min, s.max, s.mean, s.stddev, s.p50, s.p90, s.p99, s.p999};
        const double want[] = {cases[i].min, cases[i].max, cases[i].mean, cases[i].stddev,
                               cases[i].p50, cases[i].p90, cases[i].p99, cases[i].p999};
        static const char *const field[] = {"min", "max", "mean", "stddev", "p50", "p90", "p99", "p999"};
        for (size_t k = 0; k < 8; k++)
            if (fabs(got[k] - want[k]) > 1e-12)
                fail_msg("%s: %s %.15g, expected %.15g", cases[i].what, field[k], got[k], want[k]);
        if (s.count != cases[i].n)
            fail_msg("%s: count %llu", cases[i].what, (unsigned long long)s.count);
        double sorted[6];
        memcpy(sorted, cases[i].v, sizeof(sorted));
        qsort(sorted, cases[i].n, sizeof(double), ascending);
        if (memcmp(v, sorted, cases[i].n * sizeof(double)) != 0)
            fail_msg("%s: not sorted in place", cases[i].what);
    }
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
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_percentile_bounds), cmocka_unit_test(test_empty_and_null),
        cmocka_unit_test(test_append_grows_and_keeps_order),
    };
    return shmb_test_run(tests, NULL, NULL);
}
