
#include "helpers.h"
#include <dirent.h>
#include <signal.h>
#include <time.h>

#include "lookup/lookup_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/segment.h"

#define PREFIX shmb_test_prefix()

/* A run across two processes left nothing: no segment of ours, none registered for the signal clean-up, no child. */
static void assert_peer_run_left_nothing(void)
{
    shmb_test_assert_clean();
    shmb_test_assert_no_child();
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

/* Runs c, which must succeed (else fails with its why), and returns its rows. */
static shmb_rows_t run_ok(const shmb_lookup_config_t *c)
{
    shmb_rows_t rows = {0};
    char why[256] = "";
    const int ret = shmb_lookup_bench_run(c, &rows, why, sizeof(why));
    if (ret != 0)
        fail_msg("%d: %s", ret, why);
    return rows;
}

/* The check: a lookup up to a whole segment, segments up to 64 TiB in all; nothing empty. */
static void test_check(void **state)
{
    static const struct { uint64_t segments, lookups, segment_mb, len_kb; int want; } cases[] = {
        {50, 1000, 64, 4, 0},
        {0, 1000, 64, 4, -EINVAL},
        {50, 0, 64, 4, -EINVAL},
        {50, 1000, 64, 64 * 1024 + 1, -EINVAL}, /* longer than a segment */
        {50, 1000, 64, 64 * 1024, 0},           /* exactly a segment */
        {1048577, 1000, 64, 4, -EOVERFLOW},     /* x 64 MB > 64 TiB */
        {1048576, 1000, 64, 4, 0},              /* exactly 64 TiB */
        {50, 1000, UINT64_MAX / 2, 4, -EOVERFLOW},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_lookup_config_t c = small();
        c.num_segments = cases[i].segments;
        c.num_lookups = cases[i].lookups;
        c.segment_size_mb = cases[i].segment_mb;
        c.lookup_len_kb = cases[i].len_kb;
        const int ret = shmb_lookup_bench_check(&c);
        if (ret != cases[i].want)
            fail_msg("case %zu: %d, expected %d", i, ret, cases[i].want);
    }
}

/* TENT's model through the view both sides build; runs in one and in two processes verified per request. */
static void test_mooncake_run(void **state)
{
    shmb_lookup_config_t c = small();
    shmb_lookup_setup_t s;
    assert_int_equal(shmb_lookup_bench_prepare(&c, &s), 0);
    assert_int_equal(shmb_lookup_bench_alloc_slots(&c, &s), 0);
    const char *names[50];
    for (int i = 0; i < 50; i++)
        names[i] = "/never_attached";
    const shmb_path_view_t view = shmb_lookup_bench_view(&c, &s, names);
    assert_int_equal(shmb_lookup_bench_path_setup(&s, SHMB_SYSTEM_MOONCAKE, &view), 0);
    assert_int_equal(shmb_mooncake_attached(s.state.mooncake), 0);
    shmb_lookup_bench_teardown(&s);
    for (int peer = 0; peer < 2; peer++) {
        c = small();
        c.num_segments = 20;
        c.segment_size_mb = 1;
        c.peer_process = peer;
        memset(c.run, 0, sizeof(c.run));
        c.run_system[SHMB_SYSTEM_MOONCAKE] = 1;
        shmb_rows_t rows = {0};
        char why[256] = "";
        int ret = shmb_lookup_bench_run(&c, &rows, why, sizeof(why));
        if (ret != 0)
            fail_msg("peer %d: %d %s", peer, ret, why);
        assert_int_equal(rows.n, 2);
        assert_string_equal(rows.v[0].note, "verified 131072/131072");
        assert_int_equal(rows.v[1].iterations, 20); /* a first use per buffer */
        shmb_rows_free(&rows);
    }
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* Every kernel's row, random and sequential: 4096-lookup batches from a pool of 32, speedup vs linear. */
static void test_kernel_rows(void **state)
{
    for (int sequential = 0; sequential < 2; sequential++) {
        shmb_lookup_config_t c = small();
        c.sequential = sequential;
        shmb_rows_t rows = run_ok(&c);
        assert_int_equal(rows.n, 4);
        static const char *names[] = {"linear", "lower_bound", "tree", "arithmetic"};
        for (int i = 0; i < 4; i++) {
            const shmb_row_t *r = &rows.v[i];
            assert_string_equal(r->variant, names[i]);
            assert_string_equal(r->step, "");
            assert_string_equal(r->arg_name, "segments");
            assert_true(r->arg == 50);
            assert_string_equal(r->note, "verified 131072/131072");
            assert_true(r->ns.count >= SHMB_LOOKUP_MIN_BATCHES);
            assert_true(r->iterations == r->ns.count * SHMB_LOOKUP_MIN_BATCH);
            assert_true(r->ns.mean > 0);
            assert_float_equal(r->speedup, rows.v[0].ns.p50 / r->ns.p50, 1e-9);
        }
        assert_float_equal(rows.v[0].speedup, 1.0, 1e-12);
        shmb_rows_free(&rows);
    }
}

static void test_subset_without_linear_has_no_speedup(void **state)
{
    shmb_lookup_config_t c = small();
    c.run[SHMB_LOOKUP_LINEAR] = 0;
    c.run[SHMB_LOOKUP_TREE] = 0;
    c.num_segments = 1;
    c.num_lookups = 1;
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, 2);
    assert_string_equal(rows.v[0].variant, "lower_bound");
    assert_true(rows.v[0].speedup == 0);
    assert_string_equal(rows.v[1].note, "verified 131072/131072");
    assert_true(rows.v[1].iterations >= SHMB_LOOKUP_MIN_BATCH * SHMB_LOOKUP_MIN_BATCHES);
    shmb_rows_free(&rows);
}

static void test_large_batches_make_the_pool(void **state)
{
    shmb_lookup_config_t c = small();
    c.num_lookups = 100000; /* two windows of 100000 >= the minimum pool */
    c.run[SHMB_LOOKUP_LINEAR] = c.run[SHMB_LOOKUP_TREE] = c.run[SHMB_LOOKUP_LOWER_BOUND] = 0;
    shmb_rows_t rows = run_ok(&c);
    assert_string_equal(rows.v[0].note, "verified 200000/200000");
    assert_true(rows.v[0].iterations == rows.v[0].ns.count * 100000);
    shmb_rows_free(&rows);
}

/* Systems (mooncake with first_use) before kernels; speedup vs mooncake; its real segments gone after. */
static void test_systems_beside_kernels(void **state)
{
    shmb_lookup_config_t c = small();
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        c.run_system[s] = 1;
    shmb_rows_t rows = run_ok(&c);
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
    shmb_test_assert_clean();
    shmb_rows_free(&rows);
}

/* Both kinds: per path its throughput row then its latency row, speedup vs the baseline of that kind. */
static void test_both_modes(void **state)
{
    shmb_lookup_config_t c = small();
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    c.run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC] = 1;
    shmb_rows_t rows = run_ok(&c);
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
    rows = run_ok(&c);
    assert_int_equal(rows.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(rows.v[i].variant, names[i]);
        assert_string_equal(rows.v[i].step, "latency");
        assert_float_equal(rows.v[i].speedup, rows.v[1].ns.p50 / rows.v[i].ns.p50, 1e-9);
    }
    shmb_rows_free(&rows);
}

/* The placement orders registrations by address: descending, ascending or random; a seed places alike. */
static void test_placement(void **state)
{
    enum { N = 50 };
    shmb_lookup_segment_t seg[N], again[N];
    shmb_lookup_config_t c = small();
    for (int p = 0; p < SHMB_LOOKUP_PLACEMENTS; p++) {
        c.placement = (shmb_lookup_placement_t)p;
        assert_int_equal(shmb_lookup_bench_place(&c, seg), 0);
        int up = 0, down = 0;
        for (int i = 0; i < N; i++) {
            assert_true(seg[i].size == 64ull << 20 && seg[i].local_base == NULL);
            assert_true(seg[i].peer_base >= SHMB_PATH_PEER_START && seg[i].peer_base % 4096 == 0);
            assert_true(seg[i].peer_base + seg[i].size <= SHMB_PATH_PEER_START + SHMB_LOOKUP_SPAN_BYTES);
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
}

/* Two threads on every path: rows carry threads = 2, each thread timed the minimum batches, all checked. */
static void test_two_threads(void **state)
{
    shmb_lookup_config_t c = small();
    for (int p = 0; p < SHMB_SYSTEMS; p++)
        c.run_system[p] = 1;
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    c.threads = 2;
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, 2 * (SHMB_SYSTEMS + SHMB_LOOKUP_STRATEGIES) + 1);
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
    shmb_test_assert_clean();
    shmb_rows_free(&rows);
}

/* A thread's wrong batch sum stops the crew: -EPROTO, no row, why names that thread. */
static void test_thread_checksum_fails_the_crew(void **state)
{
    shmb_lookup_config_t c = small();
    c.threads = 2;
    shmb_lookup_setup_t s;
    assert_int_equal(shmb_lookup_bench_prepare(&c, &s), 0);
    const shmb_path_view_t view = shmb_lookup_bench_view(&c, &s, NULL);
    assert_int_equal(shmb_lookup_bench_path_setup(&s, SHMB_SYSTEMS, &view), 0);
    s.expected_sum[s.windows / 2] ^= 1;
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_lookup_bench_measure(&c, &s, SHMB_SYSTEMS, 0, &rows, NULL, why, sizeof(why)),
                     -EPROTO);
    assert_int_equal(rows.n, 0);
    assert_non_null(strstr(why, "checksum of a timed batch"));
    assert_true(strncmp(why, "linear, thread ", 15) == 0);
    shmb_lookup_bench_teardown(&s);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* /dev/shm space: none alone; with a peer, a page per pooled request (at most every page) and 4 MiB. */
static void test_shm_bytes(void **state)
{
    shmb_lookup_config_t c = small();
    uint64_t bytes = 1;
    assert_int_equal(shmb_lookup_bench_shm_bytes(&c, &bytes), 0);
    assert_true(bytes == 0);
    c.peer_process = 1;
    assert_int_equal(shmb_lookup_bench_shm_bytes(&c, &bytes), 0);
    assert_true(bytes == (SHMB_LOOKUP_MIN_POOL + 1024) * 4096ull);
    c.num_lookups = 100000; /* the pool: two batches of 100000 */
    assert_int_equal(shmb_lookup_bench_shm_bytes(&c, &bytes), 0);
    assert_true(bytes == (200000 + 1024) * 4096ull);
    c.num_segments = 1;
    c.segment_size_mb = 1; /* 256 pages */
    c.lookup_len_kb = 1;
    assert_int_equal(shmb_lookup_bench_shm_bytes(&c, &bytes), 0);
    assert_true(bytes == (256 + 1024) * 4096ull);
    c.num_segments = 0;
    bytes = 7;
    assert_int_equal(shmb_lookup_bench_shm_bytes(&c, &bytes), -EINVAL);
    assert_true(bytes == 7);
}

static shmb_lookup_config_t peer_config(void)
{
    shmb_lookup_config_t c = small();
    c.num_segments = 20;
    c.segment_size_mb = 1; /* few pages to tag */
    c.peer_process = 1;
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        c.run_system[s] = 1;
    return c;
}

/* Refused by check and by run (nothing appended, no child); threads 1..MAX_THREADS, one with a peer. */
static void test_check_table(void **state)
{
    static const struct {
        int peer, threads, mode, placement;
        uint64_t segment_size_mb;
        int want;
    } cases[] = {
        {0, SHMB_LOOKUP_MAX_THREADS, 0, 0, 64, 0},
        {0, SHMB_LOOKUP_MAX_THREADS + 1, 0, 0, 64, -EINVAL},
        {0, 0, 0, 0, 64, -EINVAL},
        {1, 2, 0, 0, 1, -EINVAL},
        {0, 1, SHMB_LOOKUP_MODE_BOTH + 1, 0, 64, -EINVAL},
        {0, 1, 0, SHMB_LOOKUP_PLACEMENTS, 64, -EINVAL},
        {0, 1, 0, 0, 0, -EINVAL},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        shmb_lookup_config_t c = cases[k].peer ? peer_config() : small();
        c.threads = cases[k].threads;
        c.mode = (shmb_lookup_mode_t)cases[k].mode;
        c.placement = (shmb_lookup_placement_t)cases[k].placement;
        c.segment_size_mb = cases[k].segment_size_mb;
        assert_int_equal(shmb_lookup_bench_check(&c), cases[k].want);
        if (cases[k].want == 0)
            continue;
        shmb_rows_t rows = {0};
        char why[256];
        assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), cases[k].want);
        assert_int_equal(rows.n, 0);
        shmb_test_assert_no_child();
    }
}

/* Two processes: every path's rows, verified in the peer; first_use per buffer, pools once; nothing left. */
static void test_peer_process_rows(void **state)
{
    shmb_lookup_config_t c = peer_config();
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    c.placement = SHMB_LOOKUP_PLACE_RANDOM;
    shmb_rows_t rows = run_ok(&c);
    static const char *const want[][2] = {
        {"mooncake", ""},         {"mooncake", "latency"},         {"mooncake", "first_use"},
        {"flowipc_classic", ""},  {"flowipc_classic", "latency"},  {"flowipc_classic", "attach"},
        {"flowipc_jemalloc", ""}, {"flowipc_jemalloc", "latency"}, {"flowipc_jemalloc", "attach"},
        {"linear", ""},           {"linear", "latency"},           {"lower_bound", ""},
        {"lower_bound", "latency"}, {"tree", ""},                  {"tree", "latency"},
        {"arithmetic", ""},       {"arithmetic", "latency"}};
    const size_t n = sizeof(want) / sizeof(want[0]);
    assert_int_equal(rows.n, n);
    for (size_t i = 0; i < n; i++) {
        const shmb_row_t *r = &rows.v[i];
        assert_string_equal(r->variant, want[i][0]);
        assert_string_equal(r->step, want[i][1]);
        assert_int_equal(r->threads, 1);
        assert_true(r->iterations > 0 && r->ns.p50 > 0);
        if (strcmp(r->step, "first_use") == 0 || strcmp(r->step, "attach") == 0) {
            assert_true(r->speedup == 0);
            continue;
        }
        assert_string_equal(r->note, "verified 131072/131072");
        assert_true(r->ns.count >= SHMB_LOOKUP_MIN_BATCHES);
        assert_true(r->iterations == r->ns.count * SHMB_LOOKUP_MIN_BATCH);
        const shmb_row_t *base = shmb_rows_find(&rows, "mooncake", r->step, 20, 0);
        assert_float_equal(r->speedup, base->ns.p50 / r->ns.p50, 1e-9);
    }
    assert_true(rows.v[2].iterations == 20);  /* a first use per buffer */
    assert_true(rows.v[5].iterations == 1);   /* one classic pool */
    assert_true(rows.v[8].iterations >= 1);   /* a sample per jemalloc pool */
    assert_true(rows.v[2].ns.p50 > rows.v[0].ns.p50); /* attaching costs more than a cached relocate */
    shmb_rows_free(&rows);
    assert_peer_run_left_nothing();
}

/* One system: rows by step, same keys for every system, one or two processes, dash rows; a kernel is refused. */
static void test_system_rows(void **state)
{
    static const struct {
        int peer;
        shmb_lookup_mode_t mode;
        size_t n;
        const char *steps[3];
    } cases[] = {{0, SHMB_LOOKUP_MODE_THROUGHPUT, 2, {"", "attach"}},
                 {0, SHMB_LOOKUP_MODE_BOTH, 3, {"", "latency", "attach"}},
                 {1, SHMB_LOOKUP_MODE_THROUGHPUT, 2, {"", "attach"}}};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (int s = 0; s < SHMB_SYSTEMS; s++) {
            shmb_lookup_config_t c = cases[k].peer ? peer_config() : small();
            memset(c.run, 0, sizeof(c.run));
            memset(c.run_system, 0, sizeof(c.run_system));
            c.run_system[s] = 1;
            c.system_rows = 1;
            c.mode = cases[k].mode;
            c.sequential = cases[k].peer;
            c.placement = cases[k].peer ? SHMB_LOOKUP_PLACE_ASCENDING : SHMB_LOOKUP_PLACE_DESCENDING;
            shmb_rows_t rows = run_ok(&c);
            assert_int_equal(rows.n, cases[k].n);
            for (size_t i = 0; i < rows.n; i++) {
                assert_string_equal(rows.v[i].variant, "");
                assert_string_equal(rows.v[i].step, cases[k].steps[i]);
                if (i + 1 < rows.n)
                    assert_true(rows.v[i].iterations > 0 && rows.v[i].speedup == 0);
            }
            const shmb_row_t *attach = &rows.v[rows.n - 1];
            assert_int_equal(attach->iterations > 0, cases[k].peer || s == SHMB_SYSTEM_MOONCAKE);
            if (s == SHMB_SYSTEM_MOONCAKE)
                assert_int_equal(attach->iterations, c.num_segments); /* one per buffer */
            shmb_rows_free(&rows);
            c.run[SHMB_LOOKUP_LINEAR] = 1;
            char why[256];
            assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
            assert_int_equal(rows.n, 0);
        }
    }
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_test_assert_no_child();
}

/* Kernels alone run in the peer, over segments it attaches itself. */
static void test_peer_process_kernels(void **state)
{
    shmb_lookup_config_t c = peer_config();
    memset(c.run_system, 0, sizeof(c.run_system));
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, SHMB_LOOKUP_STRATEGIES);
    for (size_t i = 0; i < rows.n; i++)
        assert_string_equal(rows.v[i].note, "verified 131072/131072");
    shmb_rows_free(&rows);
    assert_peer_run_left_nothing();
}

/* The pid of a child of `parent` other than `not`, or 0. */
static pid_t child_of(pid_t parent, pid_t not)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char path[64], buf[512];
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0 || pid == not)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[got] = '\0';
        const char *close_paren = strrchr(buf, ')');
        int ppid = 0;
        char st;
        if (close_paren && sscanf(close_paren + 1, " %c %d", &st, &ppid) == 2 && ppid == (int)parent)
            found = pid;
    }
    if (d)
        closedir(d);
    return found;
}

/* The peer SIGKILLed while it measures: -EPIPE within a slice or so, the death recorded, nothing left. */
static void test_peer_process_peer_killed(void **state)
{
    _Atomic uint64_t *killed_at = mmap(NULL, sizeof(*killed_at), PROT_READ | PROT_WRITE,
                                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(killed_at != MAP_FAILED);
    *killed_at = 0;
    const pid_t me = getpid();
    pid_t killer = fork();
    assert_true(killer >= 0);
    if (killer == 0) {
        const uint64_t deadline = shmb_clock_now_ns() + 10000000000ull;
        pid_t peer = 0;
        while (!(peer = child_of(me, getpid())) && shmb_clock_now_ns() < deadline) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        struct timespec wait = {0, 300000000}; /* the peer is measuring by then */
        nanosleep(&wait, NULL);
        *killed_at = shmb_clock_now_ns();
        _exit(peer && kill(peer, SIGKILL) == 0 ? 0 : 1);
    }
    shmb_lookup_config_t c = peer_config();
    memset(c.run, 0, sizeof(c.run));
    memset(c.run_system, 0, sizeof(c.run_system));
    c.run_system[SHMB_SYSTEM_FLOWIPC_CLASSIC] = 1;
    c.min_time_ms = 20000;
    shmb_rows_t rows = {0};
    char why[256] = "";
    int ret = shmb_lookup_bench_run(&c, &rows, why, sizeof(why));
    const uint64_t returned_at = shmb_clock_now_ns();
    shmb_test_reap_ok(killer);
    assert_int_equal(ret, -EPIPE);
    assert_string_equal(shmb_error_last()->call, "peer process");
    assert_non_null(strstr(shmb_error_last()->object, "killed by signal 9"));
    assert_true(returned_at - *killed_at < 1500000000ull);
    assert_int_equal(rows.n, 0);
    assert_peer_run_left_nothing();
    munmap((void *)killed_at, sizeof(*killed_at));
}

/* Verification names the path and request of one wrong expected address; teardown leaves no path set up. */
static void test_verify_catches_a_wrong_translation(void **state)
{
    shmb_lookup_config_t c = small();
    shmb_lookup_setup_t s;
    assert_int_equal(shmb_lookup_bench_prepare(&c, &s), 0);
    const uint64_t pool = s.window * s.windows;
    const shmb_path_view_t view = shmb_lookup_bench_view(&c, &s, NULL);
    for (int p = SHMB_SYSTEM_FLOWIPC_CLASSIC; p < SHMB_PATHS; p++) {
        assert_int_equal(shmb_lookup_bench_path_setup(&s, p, &view), 0);
        char why[256] = "";
        assert_int_equal(shmb_lookup_bench_verify(&s, p, pool, why, sizeof(why)), 0);
        s.expected[pool - 1] += 8;
        assert_int_equal(shmb_lookup_bench_verify(&s, p, pool, why, sizeof(why)), -EPROTO);
        assert_non_null(strstr(why, shmb_path_name(p)));
        char request[64];
        snprintf(request, sizeof(request), "request %llu ", (unsigned long long)(pool - 1));
        assert_non_null(strstr(why, request));
        s.expected[pool - 1] -= 8;
    }
    shmb_lookup_bench_teardown(&s);
    for (int p = 0; p < SHMB_PATHS; p++)
        assert_int_equal(s.up[p], 0);
    assert_int_equal(s.state.kernels, 0);
    assert_null(s.state.repo);
}

/* A paired run's systems: mooncake, `other`, mooncake's control. */
static void pair_with(shmb_lookup_config_t *c, shmb_system_t other)
{
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++)
        c->run[s] = 0;
    shmb_test_pair_with(&c->nsystems, c->systems, c->system_names, other);
}

/* Paired translation in one process: per kind a row per system, then ratio rows vs mooncake; nothing left. */
static void test_paired_translation_rows(void **state)
{
    shmb_lookup_config_t c = small();
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    pair_with(&c, SHMB_SYSTEM_FLOWIPC_JEMALLOC);
    shmb_rows_t rows = run_ok(&c);
    static const char *const systems[] = {"mooncake", "flowipc_jemalloc", "mooncake_control"};
    assert_int_equal(rows.n, 2 * 5);
    for (size_t i = 0; i < rows.n; i++) {
        const shmb_row_t *r = &rows.v[i];
        const size_t k = i % 5;
        assert_string_equal(r->step, i < 5 ? "" : "latency");
        assert_string_equal(r->variant, "");
        assert_string_equal(r->system, systems[k < 3 ? k : k - 2]);
        assert_true(r->arg == 50 && r->ns.p50 != 0);
        if (k < 3) {
            assert_string_equal(r->vs, "");
            assert_string_equal(r->note, "verified 131072/131072");
            assert_true(r->ns.count >= SHMB_LOOKUP_PAIRED_MIN_ROUNDS && r->ns.count % 6 == 0);
            assert_true(r->iterations == r->ns.count * SHMB_LOOKUP_MIN_BATCH);
        } else {
            assert_string_equal(r->vs, "mooncake");
            assert_non_null(r->verdict);
            assert_true(r->ratio_lo <= r->speedup && r->speedup <= r->ratio_hi);
        }
    }
    shmb_test_assert_row_name("shm_lookup", &rows.v[4], "shm_lookup/segments:50/system:mooncake_control/vs:mooncake");
    shmb_rows_free(&rows);
    shmb_test_assert_clean();

    c.threads = 2; /* what cannot be paired */
    char why[256];
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    c.threads = 1;
    c.run[SHMB_LOOKUP_LINEAR] = 1;
    assert_int_equal(shmb_lookup_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    assert_int_equal(rows.n, 0);
}

/* Paired first attach in two processes: a total per system and round, its count noted; nothing left. */
static void test_paired_attach_rows(void **state)
{
    shmb_lookup_config_t c = peer_config();
    pair_with(&c, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    c.nsystems = 4;
    c.systems[2] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    c.systems[3] = SHMB_SYSTEM_MOONCAKE;
    c.system_names[2] = "flowipc_jemalloc";
    c.system_names[3] = "mooncake_control";
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, 7);
    for (size_t i = 0; i < rows.n; i++) {
        assert_string_equal(rows.v[i].step, "attach");
        assert_true(rows.v[i].iterations == 24); /* 20 at least, in whole blocks of 2 x 4 systems */
    }
    assert_string_equal(rows.v[0].note, "receiver's total: 20 buffers");
    assert_string_equal(rows.v[1].note, "receiver's total: 1 pool");
    assert_non_null(strstr(rows.v[2].note, "receiver's total: "));
    assert_string_equal(rows.v[3].note, "receiver's total: 20 buffers");
    assert_string_equal(rows.v[6].system, "mooncake_control");
    assert_string_equal(rows.v[6].vs, "mooncake");
    shmb_rows_free(&rows);
    assert_peer_run_left_nothing();
}

/* SHM-jemalloc's first attach lends every pool: unlent pool, unanswered LendPool, wrong tag each refuse. */
static void test_lend_planted_faults(void **state)
{
    for (int paired = 0; paired < 2; paired++) {
        shmb_lookup_config_t c = peer_config();
        memset(c.run, 0, sizeof(c.run));
        if (paired) {
            pair_with(&c, SHMB_SYSTEM_FLOWIPC_JEMALLOC);
        } else {
            memset(c.run_system, 0, sizeof(c.run_system));
            c.run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC] = 1;
            c.system_rows = 1;
        }
        shmb_rows_t rows = run_ok(&c);
        const shmb_row_t *attach = &rows.v[1]; /* paired: flowipc_jemalloc's; else the second row */
        assert_string_equal(attach->step, "attach");
        assert_string_equal(paired ? strstr(attach->note, "pools, lent") : attach->note,
                            paired ? "pools, lent" : "per pool: LendPool, shm_open + mmap (read-only), Response");
        shmb_rows_free(&rows);
        assert_peer_run_left_nothing();
        static const char *const said[] = {[SHMB_LOOKUP_LEND_FAULT_POOL] = "lent",
                                           [SHMB_LOOKUP_LEND_FAULT_TAG] = "not the owner's tag"};
        for (int fault = SHMB_LOOKUP_LEND_FAULT_POOL; fault <= SHMB_LOOKUP_LEND_FAULT_TAG; fault++) {
            char why[256] = "";
            shmb_lookup_lend_fault = fault;
            const int ret = shmb_lookup_bench_run(&c, &rows, why, sizeof(why));
            shmb_lookup_lend_fault = 0;
            assert_int_equal(ret, -EPROTO);
            if (!strstr(why, said[fault]) && !(fault == SHMB_LOOKUP_LEND_FAULT_POOL && strstr(why, "answered")))
                fail_msg("fault %d: %s", fault, why);
            assert_int_equal(rows.n, 0);
            assert_peer_run_left_nothing();
        }
    }
}

/* The peer of a paired attach reads the owner's tag: a pool block holding another tag fails, naming it. */
static void test_paired_attach_checks_tags(void **state)
{
    shmb_lookup_config_t c = peer_config();
    c.num_segments = 2;
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(PREFIX, 8u << 20, &pool), 0);
    shmb_lookup_block_t blocks[2];
    shmb_lookup_object_t object;
    memset(&object, 0, sizeof(object));
    snprintf(object.name, sizeof(object.name), "%s", shmb_fipc_classic_name(pool));
    object.bytes = shmb_fipc_classic_size(pool);
    unsigned char *base = shmb_fipc_classic_base(pool);
    for (uint64_t id = 0; id < 2; id++) {
        void *block;
        assert_int_equal(shmb_fipc_classic_alloc(pool, 1u << 20, &block), 0);
        const uint64_t tag = lookup_paired_tag(&c, 1, id) + (id == 1); /* the second one wrong */
        memcpy(block, &tag, sizeof(tag));
        blocks[id] = (shmb_lookup_block_t){.key = (uint64_t)((unsigned char *)block - base)};
    }
    shmb_lookup_peer_t side;
    memset(&side, 0, sizeof(side));
    side.cfg = &c;
    shmb_peer_cmd_t cmd = {.op = LOOKUP_OP_OBJECTS, .arg = {1 | (uint64_t)LOOKUP_GROUP_CLASSIC << 8, 0, 1, 1}};
    assert_int_equal(shmb_lookup_bench_take(&side, &cmd, &object, sizeof(object)), 0);
    cmd = (shmb_peer_cmd_t){.op = LOOKUP_OP_BLOCKS, .arg = {1, 0, 2, 0}};
    assert_int_equal(shmb_lookup_bench_take(&side, &cmd, blocks, sizeof(blocks)), 0);
    char why[256] = "";
    uint64_t result[SHMB_PEER_RESULTS] = {0};
    assert_int_equal(shmb_lookup_bench_paired_attach(&side, 1, why, sizeof(why), result), -EPROTO);
    assert_non_null(strstr(why, "segment 1's first word"));
    const uint64_t right = lookup_paired_tag(&c, 1, 1);
    memcpy(base + blocks[1].key, &right, sizeof(right));
    assert_int_equal(shmb_lookup_bench_paired_attach(&side, 1, why, sizeof(why), result), 0);
    assert_true(result[0] > 0 && result[1] == 1); /* its total, of one pool */
    free(side.paired[1].t.objects);
    free(side.paired[1].t.blocks);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_mooncake_run),
        cmocka_unit_test(test_kernel_rows),
        cmocka_unit_test(test_subset_without_linear_has_no_speedup),
        cmocka_unit_test(test_large_batches_make_the_pool),
        cmocka_unit_test(test_systems_beside_kernels),
        cmocka_unit_test(test_system_rows),
        cmocka_unit_test(test_both_modes),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_thread_checksum_fails_the_crew),
        cmocka_unit_test(test_shm_bytes),
        cmocka_unit_test(test_verify_catches_a_wrong_translation),
        cmocka_unit_test(test_check_table),
        cmocka_unit_test(test_paired_translation_rows),
        cmocka_unit_test(test_paired_attach_rows),
        cmocka_unit_test(test_lend_planted_faults),
        cmocka_unit_test(test_paired_attach_checks_tags),
        cmocka_unit_test(test_peer_process_rows),
        cmocka_unit_test(test_peer_process_kernels),
        cmocka_unit_test(test_peer_process_peer_killed),
    };
    return shmb_test_run_shm("/shmb_test_lookup_", tests, NULL, NULL);
}
