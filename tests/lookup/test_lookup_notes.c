/* lookup and hand-off notes: each mode's notes, worded as the tables print them. */

#include "helpers.h"

#include "shmbench/handoff_bench.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/notes.h"

static shmb_lookup_config_t lookup_cfg(void)
{
    shmb_lookup_config_t c;
    memset(&c, 0, sizeof(c));
    c.segment_size_mb = 64;
    c.lookup_len_kb = 4;
    c.threads = 1;
    c.cpu = -1;
    return c;
}

static shmb_handoff_bench_config_t handoff_cfg(int peer_process)
{
    shmb_handoff_bench_config_t c;
    memset(&c, 0, sizeof(c));
    c.run_system[SHMB_SYSTEM_FLOWIPC_JEMALLOC] = 1;
    c.object_kb = 4;
    c.count = 1;
    c.peer_process = peer_process;
    return c;
}

static void test_lookup_default(void **state)
{
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 6);
    assert_string_equal(r.notes[0], "segments of 64 MB, requests of 4 KB, random pattern; every translation "
                                    "verified before timing");
    assert_true(
        shmb_test_has_note(&r, "placement: descending (the peer registers its segments in descending address order"));
    assert_true(shmb_test_has_note(&r, "systems: mooncake, flowipc_classic, flowipc_jemalloc"));
    assert_true(shmb_test_has_note(&r, "ns per lookup = batch time"));
    assert_true(shmb_test_has_note(&r, "step -: throughput"));
    assert_false(shmb_test_has_note(&r, "step latency"));
    assert_true(shmb_test_has_note(&r, "first_use: mooncake's first request to each buffer (shm_open + mmap + close)"));
}

static void test_lookup_modes(void **state)
{
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    c.sequential = 1;
    c.segment_size_mb = 2;
    c.lookup_len_kb = 8;
    c.placement = SHMB_LOOKUP_PLACE_RANDOM;
    c.mode = SHMB_LOOKUP_MODE_LATENCY;
    c.system_rows = 1;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 5);
    assert_string_equal(r.notes[0], "segments of 2 MB, requests of 8 KB, sequential pattern; every translation "
                                    "verified before timing");
    assert_true(shmb_test_has_note(&r, "placement: random (the peer registers its segments in an order unrelated"));
    assert_false(shmb_test_has_note(&r, "systems:"));
    assert_false(shmb_test_has_note(&r, "step -"));
    assert_true(shmb_test_has_note(&r, "step latency: the same requests as a dependent chain"));

    c = lookup_cfg();
    c.placement = SHMB_LOOKUP_PLACE_ASCENDING;
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    c.peer_process = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 7);
    assert_string_equal(r.notes[1],
                        "placement: ascending (the peer registers its segments in ascending address order)");
    assert_true(shmb_test_has_note(&r, "two processes (--peer_process)"));
    assert_true(shmb_test_has_note(&r, "step -"));
    assert_true(shmb_test_has_note(&r, "step latency"));
    assert_true(shmb_test_has_note(&r, "first_use: mooncake's first request to each buffer in the peer"));

    c = lookup_cfg();
    c.run_system[SHMB_SYSTEM_MOONCAKE] = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 6);
}

/* Kernels are reference points, not bounds: flowipc_classic beats arithmetic, and the notes say why. */
static void test_lookup_kernels_are_no_bounds(void **state)
{
    shmb_notes_t store = {0};
    shmb_lookup_config_t lc = lookup_cfg();
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &lc), 6);
    assert_true(
        shmb_test_has_note(&r, "systems: mooncake, flowipc_classic, flowipc_jemalloc (what a request costs); "
                               "kernels: linear, lower_bound, tree, arithmetic (the minimal C operation of each way "
                               "to find one segment among several: reference points, not lower bounds; "));
    assert_true(shmb_test_note_says(&r,
                                    "flowipc_classic's one pool needs no table: base + offset, the base in a register, "
                                    "so it can come in below arithmetic)"));
    assert_false(shmb_test_note_says(&r, "no implementation beats"));
}

static void test_lookup_threads(void **state)
{
    char cpus[256], want[1024];
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    c.threads = 3;
    c.cpu = 1;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 6);
    shmb_test_expected_cpus(3, 1, cpus, sizeof(cpus));
    snprintf(want, sizeof(want),
             "threads: 3 at once, each its own request stream, sharing the path's metadata, pool and "
             "repository, %s; ns per lookup per thread = batch time / lookups in the batch (>= 4096), p50, "
             "p99, max over every thread's batches; ops_per_s = all threads' lookups / wall time; first_use: "
             "one thread",
             cpus);
    assert_string_equal(r.notes[3], want);
}

/* The most threads the binary allows: their CPU list fits in a fresh store. */
static void test_lookup_most_threads_fit(void **state)
{
    shmb_notes_t store = {0};
    shmb_lookup_config_t l = lookup_cfg();
    l.threads = SHMB_LOOKUP_MAX_THREADS;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &l), 6);
    assert_non_null(strstr(r.notes[3], "threads: 256 at once, each its own request stream"));
}

static int compose(shmb_report_t *r, shmb_notes_t *store, const void *cfg)
{
    return shmb_notes_lookup(r, store, cfg);
}

/* A store too full for the notes refuses them, untouched (helpers.h). */
static void test_lookup_store_full(void **state)
{
    shmb_lookup_config_t c = lookup_cfg();
    shmb_test_notes_store_full(compose, &c, 6);
}

/* The hand-off's two notes follow the lookup's, worded for a peer or not; no room: refused, untouched. */
static void test_handoff(void **state)
{
    shmb_notes_t store = {0};
    shmb_lookup_config_t l = lookup_cfg();
    shmb_handoff_bench_config_t h = handoff_cfg(0);
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &l), 6);
    const char *first = r.notes[0];
    shmb_test_assert_notes(&r, shmb_notes_handoff(&r, &store, &h), 8);
    assert_ptr_equal(r.notes[0], first);
    assert_true(shmb_test_has_note(&r, "handoff: Flow-IPC's object API, per object of 4 KB"));
    assert_non_null(strstr(r.notes[6], "no message crossing, timed in batches of 256"));
    assert_non_null(strstr(r.notes[6], "speedup = mooncake's relocate p50"));
    assert_true(shmb_test_has_note(&r, "pool_once: flowipc_jemalloc lending each pool"));

    h = handoff_cfg(1);
    l.peer_process = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_lookup(&r, &store, &l), 6);
    shmb_test_assert_notes(&r, shmb_notes_handoff(&r, &store, &h), 8);
    assert_non_null(strstr(r.notes[6], "both messages crossing"));
    assert_non_null(strstr(r.notes[6], "no speedup"));

    r = shmb_test_fresh_report();
    for (size_t i = 0; i < SHMB_TEST_NOTES_CAP - 1; i++)
        r.notes[i] = "a note";
    r.notes[SHMB_TEST_NOTES_CAP - 1] = NULL;
    const size_t used = store.used;
    assert_int_equal(shmb_notes_handoff(&r, &store, &h), -EOVERFLOW);
    assert_null(r.notes[SHMB_TEST_NOTES_CAP - 1]);
    assert_int_equal(store.used, used);
}

/* A count below what a batch or a paired run needs: one note says what was run instead (--num_lookups). */
static void test_lookup_counts(void **state)
{
    shmb_notes_t store = {0};
    shmb_report_t r;
    shmb_lookup_config_t l = lookup_cfg();
    l.run[0] = 1;
    l.num_lookups = 1000;
    l.count_given = 1;
    assert_int_equal(shmb_lookup_bench_batches(&l), 1);
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_lookup(&r, &store, &l) > 0);
    assert_true(shmb_test_has_note(&r,
                                   "count: num_lookups=1000: 1 batch of 4096 lookups per row (a shorter batch of the "
                                   "fastest paths lasts under 100x the timer overhead), min_time_ms not applied: too "
                                   "few for percentiles"));
    l.num_lookups = 100000;
    assert_int_equal(shmb_lookup_bench_batches(&l), 24);
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_lookup(&r, &store, &l) > 0);
    assert_true(shmb_test_has_note(&r,
                                   "count: num_lookups=100000: 24 batches of 4096 lookups per row (a shorter batch of "
                                   "the fastest paths lasts under 100x the timer overhead), min_time_ms not applied"));
    l.count_given = 0;
    assert_int_equal(shmb_lookup_bench_batches(&l), 0);
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_lookup(&r, &store, &l) > 0);
    assert_false(shmb_test_has_note(&r, "count:"));
}

/* Every combination of the modes: at most what report->notes holds, then its NULL. */
static void test_lookup_never_overflows(void **state)
{
    for (unsigned m = 0; m < 64; m++) {
        shmb_notes_t store = {0};
        shmb_report_t r;
        int ret;
        shmb_lookup_config_t l = lookup_cfg();
        l.system_rows = m & 1;
        l.peer_process = (m >> 1) & 1;
        l.threads = (m >> 2) & 1 ? 2 : 1;
        l.mode = (shmb_lookup_mode_t)((m >> 3) % 3);
        l.run_system[SHMB_SYSTEM_MOONCAKE] = 1;
        r = shmb_test_fresh_report();
        ret = shmb_notes_lookup(&r, &store, &l);
        assert_true(ret >= 1 && (size_t)ret <= SHMB_TEST_NOTES_CAP && r.notes[ret] == NULL);
        shmb_handoff_bench_config_t h = handoff_cfg(l.peer_process);
        ret = shmb_notes_handoff(&r, &store, &h);
        assert_true(ret >= 3 && (size_t)ret <= SHMB_TEST_NOTES_CAP && r.notes[ret] == NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_default),
        cmocka_unit_test(test_lookup_modes),
        cmocka_unit_test(test_lookup_kernels_are_no_bounds),
        cmocka_unit_test(test_lookup_threads),
        cmocka_unit_test(test_lookup_most_threads_fit),
        cmocka_unit_test(test_lookup_store_full),
        cmocka_unit_test(test_handoff),
        cmocka_unit_test(test_lookup_counts),
        cmocka_unit_test(test_lookup_never_overflows),
    };
    return shmb_test_run(tests, NULL, NULL);
}
