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
    c.threads = 1;
    c.cpu = -1;
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

/* Both kinds: per path its throughput row, then its latency row, each with
 * the speedup against the baseline's row of the same kind. */
static void test_both_modes(void **state)
{
    (void)state;
    shmb_lookup_config_t c = small();
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    c.run_system[SHMB_LOOKUP_FLOWIPC_CLASSIC] = 1;
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
    static const char *names[] = {"flowipc_classic", "linear", "lower_bound", "tree", "arithmetic"};
    assert_int_equal(rows.n, 10);
    for (int i = 0; i < 10; i++) {
        const shmb_row_t *r = &rows.v[i];
        const shmb_row_t *base = &rows.v[2 + i % 2]; /* linear's row of the same kind */
        assert_string_equal(r->variant, names[i / 2]);
        assert_string_equal(r->step, i % 2 ? "latency" : "");
        assert_string_equal(r->note, "verified 131072/131072");
        assert_true(r->ns.count >= SHMB_LOOKUP_MIN_BATCHES && r->ns.p50 > 0);
        assert_float_equal(r->speedup, base->ns.p50 / r->ns.p50, 1e-9);
    }
    shmb_rows_free(&rows);

    c.mode = SHMB_LOOKUP_MODE_LATENCY;
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(rows.v[i].variant, names[i]);
        assert_string_equal(rows.v[i].step, "latency");
        assert_float_equal(rows.v[i].speedup, rows.v[1].ns.p50 / rows.v[i].ns.p50, 1e-9);
    }
    shmb_rows_free(&rows);
}

/* With one system and both kinds, the keys are the same for every system:
 * throughput, latency, first_use. */
static void test_system_rows_both_modes(void **state)
{
    (void)state;
    for (int s = 0; s < SHMB_LOOKUP_SYSTEMS; s++) {
        shmb_lookup_config_t c = small();
        memset(c.run, 0, sizeof(c.run));
        c.run_system[s] = 1;
        c.system_rows = 1;
        c.mode = SHMB_LOOKUP_MODE_BOTH;
        shmb_rows_t rows = {0};
        char why[256] = "";
        assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
        assert_int_equal(rows.n, 3);
        static const char *steps[] = {"", "latency", "first_use"};
        for (int i = 0; i < 3; i++) {
            assert_string_equal(rows.v[i].variant, "");
            assert_string_equal(rows.v[i].step, steps[i]);
        }
        assert_true(rows.v[1].iterations > 0 && rows.v[1].speedup == 0);
        shmb_rows_free(&rows);
    }
    assert_int_equal(count_ours(), 0);
}

/* The placement decides the registration order by address: descending,
 * ascending or random; the same seed places the same way. */
static void test_placement(void **state)
{
    (void)state;
    enum { N = 50 };
    shmb_lookup_segment_t seg[N], again[N];
    shmb_lookup_config_t c = small();
    for (int p = 0; p < SHMB_LOOKUP_PLACEMENTS; p++) {
        c.placement = (shmb_lookup_placement_t)p;
        assert_int_equal(shmb_lookup_bench_place(&c, seg), 0);
        int up = 0, down = 0;
        for (int i = 0; i < N; i++) {
            assert_true(seg[i].size == 64ull << 20 && seg[i].local_base == NULL);
            assert_true(seg[i].peer_base >= SHMB_LOOKUP_PEER_START && seg[i].peer_base % 4096 == 0);
            assert_true(seg[i].peer_base + seg[i].size <= SHMB_LOOKUP_PEER_START + SHMB_LOOKUP_SPAN_BYTES);
            for (int j = 0; j < i; j++) /* none overlap */
                assert_true(seg[i].peer_base >= seg[j].peer_base + seg[j].size ||
                            seg[j].peer_base >= seg[i].peer_base + seg[i].size);
            if (i > 0) {
                up += seg[i].peer_base > seg[i - 1].peer_base;
                down += seg[i].peer_base < seg[i - 1].peer_base;
            }
        }
        switch (c.placement) {
        case SHMB_LOOKUP_PLACE_DESCENDING: assert_int_equal(down, N - 1); break;
        case SHMB_LOOKUP_PLACE_ASCENDING: assert_int_equal(up, N - 1); break;
        default: assert_true(up > N / 4 && down > N / 4); break;
        }
        assert_int_equal(shmb_lookup_bench_place(&c, again), 0);
        assert_memory_equal(seg, again, sizeof(seg));
        static const char *const placement_names[] = {"descending", "ascending", "random"};
        assert_string_equal(shmb_lookup_placement_name(c.placement), placement_names[p]);
        shmb_lookup_placement_t parsed;
        assert_int_equal(shmb_lookup_parse_placement(shmb_lookup_placement_name(c.placement), &parsed), 0);
        assert_int_equal(parsed, c.placement);
    }
    shmb_lookup_placement_t parsed;
    assert_int_equal(shmb_lookup_parse_placement("sideways", &parsed), -EINVAL);
    assert_int_equal(shmb_lookup_parse_placement(NULL, &parsed), -EINVAL);
    c.placement = SHMB_LOOKUP_PLACEMENTS;
    assert_int_equal(shmb_lookup_bench_place(&c, seg), -EINVAL);
    assert_int_equal(shmb_lookup_bench_check(&c), -EINVAL);
    c = small();
    c.mode = (shmb_lookup_mode_t)(SHMB_LOOKUP_MODE_BOTH + 1);
    assert_int_equal(shmb_lookup_bench_check(&c), -EINVAL);
}

/* Two threads at once on every path: rows carry threads = 2, both threads
 * timed at least the minimum of batches, every batch checked. */
static void test_two_threads(void **state)
{
    (void)state;
    shmb_lookup_config_t c = small();
    for (int p = 0; p < SHMB_LOOKUP_SYSTEMS; p++)
        c.run_system[p] = 1;
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    c.threads = 2;
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 2 * (SHMB_LOOKUP_SYSTEMS + SHMB_LOOKUP_STRATEGIES) + 1);
    for (size_t i = 0; i < rows.n; i++) {
        const shmb_row_t *r = &rows.v[i];
        if (strcmp(r->step, "first_use") == 0) {
            assert_int_equal(r->threads, 1); /* set-up, one thread */
            continue;
        }
        assert_int_equal(r->threads, 2);
        assert_string_equal(r->note, "verified 131072/131072");
        assert_true(r->ns.count >= 2 * SHMB_LOOKUP_MIN_BATCHES);
        assert_true(r->iterations == r->ns.count * SHMB_LOOKUP_MIN_BATCH);
        assert_true(r->items_per_second > 0); /* all threads' lookups over wall time */
        const shmb_row_t *base = shmb_rows_find(&rows, "mooncake", r->step, 50, 0);
        assert_non_null(base);
        assert_float_equal(r->speedup, base->ns.p50 / r->ns.p50, 1e-9);
    }
    assert_int_equal(count_ours(), 0);
    assert_int_equal(shmb_segment_registered(), 0);
    shmb_rows_free(&rows);
}

/* Thread i on the i-th allowed CPU from the first at or after cpu,
 * wrapping; not pinned when there are more threads than CPUs. */
static void test_thread_cpus(void **state)
{
    (void)state;
    static const int allowed[] = {0, 2, 5, 7};
    shmb_lookup_config_t c = small();
    c.cpus = allowed;
    c.ncpus = 4;
    c.threads = 2;
    int cpus[8] = {-9, -9, -9, -9, -9, -9, -9, -9};
    assert_int_equal(shmb_lookup_bench_thread_cpus(&c, cpus), 1);
    assert_true(cpus[0] == 0 && cpus[1] == 2 && cpus[2] == -9);
    c.cpu = 5;
    assert_int_equal(shmb_lookup_bench_thread_cpus(&c, cpus), 1);
    assert_true(cpus[0] == 5 && cpus[1] == 7);
    c.cpu = 6; /* not allowed itself: the next allowed one */
    c.threads = 3;
    assert_int_equal(shmb_lookup_bench_thread_cpus(&c, cpus), 1);
    assert_true(cpus[0] == 7 && cpus[1] == 0 && cpus[2] == 2);
    c.threads = 5;
    cpus[0] = -9;
    assert_int_equal(shmb_lookup_bench_thread_cpus(&c, cpus), 0);
    assert_int_equal(cpus[0], -9); /* untouched */
    c.threads = 1;
    assert_int_equal(shmb_lookup_bench_thread_cpus(&c, cpus), -EINVAL);
    c.threads = SHMB_LOOKUP_MAX_THREADS + 1;
    assert_int_equal(shmb_lookup_bench_thread_cpus(&c, cpus), -EINVAL);
    assert_int_equal(shmb_lookup_bench_check(&c), -EINVAL);
    c.threads = 0;
    assert_int_equal(shmb_lookup_bench_check(&c), -EINVAL);
    c.cpus = NULL; /* the calling thread's CPUs */
    c.threads = 2;
    c.cpu = -1;
    int ret = shmb_lookup_bench_thread_cpus(&c, cpus);
    assert_true(ret == 0 || ret == 1);
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
        cmocka_unit_test(test_both_modes),
        cmocka_unit_test(test_system_rows_both_modes),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_thread_cpus),
        cmocka_unit_test(test_bad_config_appends_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
