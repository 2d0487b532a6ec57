/* alloc notes: each mode's notes, worded as the tables print them. */

#include "helpers.h"

#include "alloc/alloc_internal.h"
#include "shmbench/notes.h"

static shmb_peer_t peer; /* only its address is used: "a peer runs" */

static shmb_alloc_config_t alloc_cfg(void)
{
    shmb_alloc_config_t c;
    memset(&c, 0, sizeof(c));
    c.num_iterations = 1000;
    c.min_ops = SHMB_ALLOC_MIN_OPS;
    c.cleanup = 1;
    c.threads = 1;
    c.cpu = -1;
    return c;
}

static void test_alloc_default(void **state)
{
    shmb_report_t r = shmb_test_fresh_report();
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
    assert_true(shmb_test_has_note(&r, "posix (Mooncake's registration cost, paid once per registered buffer"));
    assert_true(
        shmb_test_has_note(&r, "speedup = Mooncake's p50 / the row's p50: alloc, free, alloc_reuse, touch, "
                               "touch_reuse (per block) against the same step of Mooncake's like (the object layers "
                               "bipc_object, jemalloc_object against offset; the allocators bipc, jemalloc, "
                               "jemalloc_tcache and the arena against offset_bare); register (per pool) against "
                               "posix total"));
    assert_true(shmb_test_has_note(&r, "pools: bipc (system: flowipc_classic's allocator; bipc_object"));
    assert_true(shmb_test_has_note(&r, "pools: register = one pool per size"));
    assert_false(shmb_test_has_note(&r, "offset (system: mooncake): "));
    assert_int_equal(store.used, strlen(r.notes[3]) + 1); /* the pools' steps, composed */
    c.touch = 1; /* first-touch rows: what makes one no first touch, in the pools' note */
    shmb_report_t t = shmb_test_fresh_report();
    shmb_test_assert_notes(&t, shmb_notes_alloc(&t, &store, &c), 4);
    for (int i = 0; i < 3; i++)
        assert_string_equal(t.notes[i], r.notes[i]);
    assert_true(strncmp(t.notes[3], r.notes[3], strlen(r.notes[3])) == 0);
    assert_string_equal(t.notes[3] + strlen(r.notes[3]),
                        "; touch: one byte per page of each fresh block, timed block by block; the pages already "
                        "in memory before it (mincore, untimed: the allocator wrote in them, e.g. bipc's block "
                        "header, or a neighbour's touch did) are counted on the row, which is then no first touch "
                        "and has no speedup");
    c.run[SHMB_ALLOC_OFFSET] = 1; /* Mooncake's block allocator: its path, item by item */
    t = shmb_test_fresh_report();
    shmb_test_assert_notes(&t, shmb_notes_alloc(&t, &store, &c), 5);
    assert_true(
        shmb_test_has_note(&t, "pools: offset (system: mooncake, below; offset_bare: its OffsetAllocator alone)"));
    assert_true(shmb_test_has_note(&t, "offset (system: mooncake): Mooncake Store's OffsetBufferAllocator"));
    assert_non_null(strstr(t.notes[3], "weak_ptr (shared_from_this), the AllocatedBuffer (make_unique), the "
                                       "cur_size_ atomic and the master's allocated-bytes gauges"));
}

static void test_alloc_modes(void **state)
{
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.measure_mmap_only = 1;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
    assert_true(shmb_test_has_note(&r, "posix (--measure_mmap_only): one segment per size"));
    assert_non_null(strstr(r.notes[1], "register against posix mmap alone (not createSharedMemory)"));

    c = alloc_cfg();
    c.system_rows = 1;
    c.measure_mmap_only = 1; /* --system wins: the main refuses the pair */
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 3);
    assert_true(shmb_test_has_note(&r,
                                   "rows of the system: register/size_kb:S/buffers:N = making N blocks of S KB usable, "
                                   "whole (mooncake: N buffers, each createSharedMemory"));
    assert_false(shmb_test_has_note(&r, "pools: bipc (system"));
    assert_true(shmb_test_has_note(&r, "alloc, free: none"));
    /* each system's object layer, then its bare allocator, each under one key, so that the headers pair */
    static const int systems[][3] = {{SHMB_ALLOC_POSIX, SHMB_ALLOC_OFFSET, SHMB_ALLOC_OFFSET_BARE},
                                     {SHMB_ALLOC_BIPC_OBJECT, SHMB_ALLOC_BIPC, SHMB_ALLOC_BIPC},
                                     {SHMB_ALLOC_JEMALLOC_OBJECT, SHMB_ALLOC_JEMALLOC, SHMB_ALLOC_JEMALLOC}};
    static const char *objects[] = {"alloc, free: offset, Mooncake Store's OffsetBufferAllocator",
                                    "alloc, free: bipc_object, Flow-IPC SHM-classic's Pool_arena::construct",
                                    "alloc, free: jemalloc_object, Flow-IPC SHM-jemalloc's Ipc_arena::construct"};
    static const char *bare[] = {"alloc_bare, free_bare: offset_bare, Mooncake Store's OffsetAllocator::allocate",
                                 "alloc_bare, free_bare: bipc, boost.interprocess",
                                 "alloc_bare, free_bare: jemalloc, mallocx"};
    for (int i = 0; i < 3; i++) {
        memset(c.run, 0, sizeof(c.run));
        for (int k = 0; k < 3; k++)
            c.run[systems[i][k]] = 1;
        r = shmb_test_fresh_report();
        shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
        assert_non_null(strstr(r.notes[0], "rows of the system: register/size_kb:S/buffers:N"));
        assert_true(strncmp(r.notes[1], objects[i], strlen(objects[i])) == 0);
        assert_true(strncmp(r.notes[2], bare[i], strlen(bare[i])) == 0);
        assert_true(strncmp(r.notes[3], "pools: alloc, free, alloc_reuse", 31) == 0);
    }

    c = alloc_cfg();
    c.peer = &peer;
    c.run[SHMB_ALLOC_OFFSET] = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 7);
    assert_true(shmb_test_has_note(&r, "peer_process: attach, detach and translate"));
    assert_true(shmb_test_has_note(&r, "peer_process pools (bipc, jemalloc)"));
}

static void test_alloc_threads(void **state)
{
    char cpus[256], want[512];
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.threads = 2;
    c.run[SHMB_ALLOC_OFFSET] = 1;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 7);
    shmb_test_expected_cpus(2, -1, cpus, sizeof(cpus));
    snprintf(want, sizeof(want), "threads: 2 at once per allocator and size, %s; a barrier starts every timed phase",
             cpus);
    assert_string_equal(r.notes[5], want);
    assert_true(shmb_test_has_note(&r, "threads: ns = per thread per op"));
    assert_int_equal(store.used, strlen(want) + 1 + strlen(r.notes[4]) + 1); /* + the pools' steps */
}

/* jemalloc's settings, read at each width they have, and the thread cache's
 * reach built on them: a class up to tcache_max keeps an even count, above
 * it nothing. */
static void test_tcache_reach(void **state)
{
    int64_t v = -1;
    assert_int_equal(shmb_fipc_jemalloc_setting("no.such.setting", &v), -ENOENT);
    assert_int_equal(shmb_fipc_jemalloc_setting(NULL, &v), -EINVAL);
    assert_int_equal(shmb_fipc_jemalloc_setting("opt.tcache", NULL), -EINVAL);
    assert_true(v == -1);
    assert_int_equal(shmb_fipc_jemalloc_setting("opt.tcache", &v), 0); /* bool */
    assert_true(v == 0 || v == 1);
    assert_int_equal(shmb_fipc_jemalloc_setting("arenas.bin.0.nregs", &v), 0); /* uint32_t */
    assert_true(v > 1);
    int64_t max = 0;
    assert_int_equal(shmb_fipc_jemalloc_setting("arenas.tcache_max", &max), 0); /* size_t */
    uint64_t got_max = 0, slots = 0;
    assert_int_equal(shmb_alloc_tcache_reach(1, &got_max, &slots), 0);
    assert_true(got_max == (uint64_t)max && slots >= 2 && slots % 2 == 0);
    assert_int_equal(shmb_alloc_tcache_reach((uint64_t)max, &got_max, &slots), 0);
    assert_true(slots >= 1);
    assert_int_equal(shmb_alloc_tcache_reach((uint64_t)max + 1, &got_max, &slots), 0);
    assert_true(slots == 0);
}

/* jemalloc_tcache: the cache's limits, read from jemalloc, per size of the
 * run, against the working set. */
static void test_alloc_tcache(void **state)
{
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.run[SHMB_ALLOC_JEMALLOC_TCACHE] = 1;
    c.min_size_kb = 4;
    c.max_size_kb = 64;
    c.working_set = 2048;
    uint64_t max = 0, slots = 0;
    assert_int_equal(shmb_alloc_tcache_reach(4096, &max, &slots), 0);
    assert_true(max >= 4096 && slots >= 2); /* jemalloc caches a page-sized class, an even count */
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 5);
    char want[128];
    snprintf(want, sizeof(want), "jemalloc_tcache: the thread cache holds sizes <= %llu KiB (arenas.tcache_max)",
             (unsigned long long)(max / 1024));
    assert_true(shmb_test_has_note(&r, want));
    assert_non_null(strstr(r.notes[4], "64 KB 0; a working set of 2048 exceeds it at every size, so most calls "
                                       "reach the arena"));
    c.working_set = 2; /* the smallest count jemalloc keeps: fits below tcache_max, not above */
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 5);
    assert_non_null(strstr(r.notes[4], "a working set of 2 fits it where it holds 2 or more"));
    assert_non_null(strstr(r.notes[3], "; a working set under 2048 blocks makes short batches: each carries the "
                                       "header's timer overhead, that divided by the working set per op"));
    c.max_size_kb = 4;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 5);
    assert_non_null(strstr(r.notes[4], "a working set of 2 fits it at every size: the cache can serve the calls"));
}

/* A peer and threads (refused by the run) need 9 notes: they fit, the
 * report NULL-terminated after them. */
static void test_alloc_peer_and_threads(void **state)
{
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.run[SHMB_ALLOC_OFFSET] = 1;
    c.peer = &peer;
    c.threads = 2;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 9);
}

/* --allocator=ready: the pool row's note, the caller's limits in order, and
 * with a grow block the grow rows' note naming its size; a store with no
 * room left refuses them, the report and the store untouched. */
static void test_alloc_ready(void **state)
{
    shmb_notes_t store = {0};
    const char *limits[] = {"limit one", "limit two"};
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc_ready(&r, &store, 0, limits, 2), 3);
    assert_true(shmb_test_has_note(&r, "ready: ns per pool from create to prefaulted;"));
    assert_string_equal(r.notes[1], "limit one");
    assert_string_equal(r.notes[2], "limit two");
    assert_int_equal(store.used, 0);
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc_ready(&r, &store, 64, NULL, 0), 2);
    assert_true(shmb_test_has_note(&r, "grow: ns to reach pool_mb of live bytes"));
    assert_non_null(strstr(r.notes[1], "flowipc_jemalloc blocks of 64 KB from the SHM-jemalloc model"));
    store.used = SHMB_NOTES_TEXT_BYTES - 10;
    r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_alloc_ready(&r, &store, 64, limits, 2), -EOVERFLOW);
    shmb_test_assert_untouched(&r);
    assert_int_equal(store.used, SHMB_NOTES_TEXT_BYTES - 10);
}

/* --allocator=space: five notes, the churn's rounds and share from the
 * library's constants; the mooncake_upstream note, last, only when its rows
 * ran (alone or paired), naming the build's commit (empty here). */
static void test_alloc_space_and_upstream(void **state)
{
    shmb_notes_t store = {0};
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc_space(&r, &store), 5);
    char churn[128];
    snprintf(churn, sizeof(churn), "space: churn %d rounds, each frees %d%% of the live blocks",
             SHMB_ALLOC_SPACE_ROUNDS, SHMB_ALLOC_SPACE_FREE_PERCENT);
    assert_true(shmb_test_has_note(&r, churn));
    assert_true(shmb_test_has_note(&r, "space_alloc: ns of each allocation, timed alone"));
    shmb_alloc_config_t c = alloc_cfg();
    c.run[SHMB_ALLOC_OFFSET] = 1;
    r = shmb_test_fresh_report();
    const int plain = shmb_notes_alloc(&r, &store, &c);
    assert_false(shmb_test_has_note(&r, "mooncake_upstream:"));
    c.upstream = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &c), plain + 1);
    assert_string_equal(r.notes[plain], "mooncake_upstream: Mooncake's own OffsetAllocator (alloc_bare, free_bare; "
                                        "its other rows not covered), compiled from commit  (docs/upstream.md)");
    c.upstream = 0;
    c.systems[0] = SHMB_SYSTEM_MOONCAKE;
    c.systems[1] = SHMB_SYSTEM_MOONCAKE_UPSTREAM;
    c.nsystems = 2;
    r = shmb_test_fresh_report();
    const int paired = shmb_notes_alloc(&r, &store, &c);
    assert_true(paired > 0);
    assert_true(shmb_test_has_note(&r, "mooncake_upstream: Mooncake's own OffsetAllocator"));
    assert_true(strncmp(r.notes[paired - 1], "mooncake_upstream:", 18) == 0);
}

/* The arena is a reference point, not a bound: the notes never call it one. */
static void test_alloc_kernels_are_no_bounds(void **state)
{
    shmb_notes_t store = {0};
    shmb_alloc_config_t ac = alloc_cfg();
    for (int offset = 0; offset < 2; offset++) {
        ac.run[SHMB_ALLOC_OFFSET] = offset;
        ac.threads = 2;
        shmb_report_t r = shmb_test_fresh_report();
        assert_true(shmb_notes_alloc(&r, &store, &ac) > 0);
        assert_true(shmb_test_note_says(&r, "arena (kernel: an ideal lock-free pool in one process, a reference point, "
                                            "not a lower bound)"));
        assert_false(shmb_test_note_says(&r, "the lower bound"));
        assert_false(shmb_test_note_says(&r, "the bound"));
    }
}

/* The most threads the binary allows: their CPU list fits in a fresh store. */
static void test_alloc_most_threads_fit(void **state)
{
    shmb_notes_t store = {0};
    shmb_alloc_config_t a = alloc_cfg();
    a.threads = SHMB_ALLOC_MAX_THREADS;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &a), 6);
    assert_non_null(strstr(r.notes[4], "threads: 256 at once per allocator and size, "));
}

/* A count below what a batch or a paired run needs: one note says what
 * was run instead (--num_iterations). */
static void test_alloc_counts(void **state)
{
    shmb_notes_t store = {0};
    shmb_alloc_config_t a = alloc_cfg();
    for (int k = 1; k < SHMB_ALLOC_KINDS; k++)
        a.run[k] = 1;
    a.num_iterations = a.min_ops = 100;
    a.count_given = 1;
    shmb_report_t r = shmb_test_fresh_report();
    const int with = shmb_notes_alloc(&r, &store, &a);
    assert_true(shmb_test_has_note(&r,
                                   "count: 100 operations per pool step asked; a batch is the working set of 2048 "
                                   "blocks (a shorter one lasts under 100x the timer overhead), so each step times 1 "
                                   "batch of it: too few for percentiles"));
    a.min_ops = 4096; /* two whole rounds: no note */
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_alloc(&r, &store, &a), with - 1);
    assert_false(shmb_test_has_note(&r, "count:"));

    shmb_alloc_config_t p = alloc_cfg();
    shmb_test_pair_with(&p.nsystems, p.systems, p.system_names, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    p.num_iterations = p.min_ops = 3;
    p.count_given = 1;
    uint64_t block, reg[SHMB_ALLOC_REGISTER_COUNTS];
    shmb_alloc_bench_paired_rounds(&p, &block, reg);
    assert_int_equal(block, 6);   /* SHMB_PAIRED_MIN_ROUNDS, a whole block of 2 x 3 */
    assert_int_equal(reg[0], 12); /* SHMB_ALLOC_REGISTER_MIN_ROUNDS, in whole blocks */
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_alloc(&r, &store, &p) > 0);
    assert_true(
        shmb_test_has_note(&r, "count: 3 operations per pool step asked; a batch is the working set of 2048 blocks "
                               "(a shorter one lasts under 100x the timer overhead), so each step times one batch "
                               "per round; the count asks for 1 rounds of alloc, free, alloc_reuse: 6 at least, the "
                               "fewest with a 95% interval"));
    p.count_given = 0; /* the default's minimum */
    shmb_alloc_bench_paired_rounds(&p, &block, reg);
    assert_int_equal(block, 24);
}

/* Every combination of the modes: at most what report->notes holds, then
 * its NULL. */
static void test_alloc_never_overflows(void **state)
{
    for (unsigned m = 0; m < 64; m++) {
        shmb_notes_t store = {0};
        shmb_report_t r;
        int ret;
        shmb_alloc_config_t a = alloc_cfg();
        a.peer = m & 1 ? &peer : NULL;
        a.system_rows = (m >> 1) & 1;
        a.measure_mmap_only = (m >> 2) & 1;
        a.cleanup = (m >> 3) & 1;
        a.touch = (m >> 4) & 1;
        a.threads = m & 32 ? 2 : 1;
        r = shmb_test_fresh_report();
        ret = shmb_notes_alloc(&r, &store, &a);
        assert_true(ret >= 1 && (size_t)ret <= SHMB_TEST_NOTES_CAP && r.notes[ret] == NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_default),
        cmocka_unit_test(test_alloc_modes),
        cmocka_unit_test(test_alloc_threads),
        cmocka_unit_test(test_tcache_reach),
        cmocka_unit_test(test_alloc_tcache),
        cmocka_unit_test(test_alloc_peer_and_threads),
        cmocka_unit_test(test_alloc_ready),
        cmocka_unit_test(test_alloc_space_and_upstream),
        cmocka_unit_test(test_alloc_kernels_are_no_bounds),
        cmocka_unit_test(test_alloc_most_threads_fit),
        cmocka_unit_test(test_alloc_counts),
        cmocka_unit_test(test_alloc_never_overflows),
    };
    return shmb_test_run(tests, NULL, NULL);
}
