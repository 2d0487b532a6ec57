#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "shmbench/lookup_bench.h"
#include "shmbench/segment.h"

#define PREFIX "/shmb_test_lookup_"

static int count_ours(void)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, &PREFIX[1], strlen(PREFIX) - 1) == 0;
    if (d)
        closedir(d);
    return n;
}

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
    c.shm_prefix = PREFIX;
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
        assert_float_equal(r->speedup, rows.v[0].ns.p50 / r->ns.p50, 1e-9);
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

/* Systems first (mooncake with its first_use row), then kernels; speedup
 * against mooncake; mooncake's real segments gone afterwards. */
static void test_systems_beside_kernels(void **state)
{
    (void)state;
    shmb_lookup_config_t c = small();
    for (int s = 0; s < SHMB_LOOKUP_SYSTEMS; s++)
        c.run_system[s] = 1;
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
    static const char *names[][2] = {
        {"mooncake", ""}, {"mooncake", "first_use"}, {"flowipc_classic", ""}, {"flowipc_jemalloc", ""},
        {"linear", ""},   {"lower_bound", ""},       {"tree", ""},            {"arithmetic", ""}};
    assert_int_equal(rows.n, 8);
    for (int i = 0; i < 8; i++) {
        assert_string_equal(rows.v[i].variant, names[i][0]);
        assert_string_equal(rows.v[i].step, names[i][1]);
        assert_true(rows.v[i].ns.mean > 0);
    }
    const shmb_row_t *first_use = &rows.v[1];
    assert_true(first_use->iterations == 50 && first_use->ns.count == 50); /* one per buffer */
    assert_true(first_use->speedup == 0);
    assert_true(first_use->ns.p50 > rows.v[0].ns.p50); /* attaching costs more than a cached relocate */
    assert_float_equal(rows.v[0].speedup, 1.0, 1e-12);
    for (int i = 2; i < 8; i++)
        assert_float_equal(rows.v[i].speedup, rows.v[0].ns.p50 / rows.v[i].ns.p50, 1e-9);
    assert_int_equal(count_ours(), 0);
    assert_int_equal(shmb_segment_registered(), 0);
    shmb_rows_free(&rows);
}

/* With one system selected, rows are named by step alone and every system
 * has the same keys: first_use is a dash row where a system has none. */
static void test_system_rows(void **state)
{
    (void)state;
    for (int s = 0; s < SHMB_LOOKUP_SYSTEMS; s++) {
        shmb_lookup_config_t c = small();
        memset(c.run, 0, sizeof(c.run));
        c.run_system[s] = 1;
        c.system_rows = 1;
        shmb_rows_t rows = {0};
        char why[256] = "";
        assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
        assert_int_equal(rows.n, 2);
        assert_string_equal(rows.v[0].variant, "");
        assert_string_equal(rows.v[0].step, "");
        assert_string_equal(rows.v[1].variant, "");
        assert_string_equal(rows.v[1].step, "first_use");
        assert_true(rows.v[0].iterations > 0 && rows.v[0].speedup == 0);
        assert_true((rows.v[1].iterations > 0) == (s == SHMB_LOOKUP_MOONCAKE));
        shmb_rows_free(&rows);
        c.run[SHMB_LOOKUP_LINEAR] = 1; /* a kernel is no system */
        assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
        assert_int_equal(rows.n, 0);
    }
    assert_int_equal(count_ours(), 0);
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
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "skip: /dev/shm is not writable\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_random_rows),
        cmocka_unit_test(test_sequential_rows),
        cmocka_unit_test(test_subset_without_linear_has_no_speedup),
        cmocka_unit_test(test_large_batches_make_the_pool),
        cmocka_unit_test(test_systems_beside_kernels),
        cmocka_unit_test(test_system_rows),
        cmocka_unit_test(test_bad_config_appends_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
