/* notes: each mode's notes, worded as the tables print them, and the bounds
 * of report->notes and of the store. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"

#include "alloc/alloc_internal.h"
#include "shmbench/handoff_bench.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/notes.h"
#include "shmbench/transfer_bench.h"
#include "shmbench/sysinfo.h"

#define NOTES_CAP (sizeof(((shmb_report_t *)0)->notes) / sizeof(const char *) - 1)

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

static shmb_transfer_config_t transfer_cfg(void)
{
    shmb_transfer_config_t c;
    memset(&c, 0, sizeof(c));
    c.run[SHMB_COPY_MEMCPY] = 1;
    c.threads = 1;
    c.cpu = -1;
    c.num_segments = 100;
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

/* n notes set, each non-empty, then NULL. */
static void assert_notes(const shmb_report_t *r, int ret, int n)
{
    assert_int_equal(ret, n);
    for (int i = 0; i < n; i++) {
        assert_non_null(r->notes[i]);
        assert_true(r->notes[i] != shmb_test_sentinel && r->notes[i][0] != '\0');
    }
    assert_null(r->notes[n]);
}

static int has_note(const shmb_report_t *r, const char *start)
{
    for (size_t i = 0; i < NOTES_CAP && r->notes[i]; i++)
        if (strncmp(r->notes[i], start, strlen(start)) == 0)
            return 1;
    return 0;
}

/* The note the threads get: "pinned to CPUs a,b" or not pinned, as planned. */
static void expected_cpus(int threads, int cpu, char *out, size_t cap)
{
    int cpus[8];
    int pinned = shmb_sysinfo_plan_cpus(cpu, threads, cpus);
    assert_true(pinned >= 0);
    size_t len = (size_t)snprintf(out, cap, "%s", pinned ? "pinned to CPUs " : "not pinned (more threads than allowed CPUs)");
    for (int i = 0; pinned && i < threads; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%d", i ? "," : "", cpus[i]);
}

static void test_alloc_default(void **state)
{
    (void)state;
    shmb_report_t r = shmb_test_fresh_report();
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
    assert_true(has_note(&r, "posix (Mooncake's registration cost, paid once per registered buffer"));
    assert_true(has_note(&r, "speedup = Mooncake's p50 / the row's p50: alloc, free, alloc_reuse, touch, "
                             "touch_reuse (per block) against the same step of Mooncake's like (the object layers "
                             "bipc_object, jemalloc_object against offset; the allocators bipc, jemalloc, "
                             "jemalloc_tcache and the arena against offset_bare); register (per pool) against "
                             "posix total"));
    assert_true(has_note(&r, "pools: bipc (system: flowipc_classic's allocator; bipc_object"));
    assert_true(has_note(&r, "pools: register = one pool per size"));
    assert_false(has_note(&r, "offset (system: mooncake): "));
    assert_int_equal(store.used, strlen(r.notes[3]) + 1); /* the pools' steps, composed */
    c.touch = 1; /* first-touch rows: what makes one no first touch, in the pools' note */
    shmb_report_t t = shmb_test_fresh_report();
    assert_notes(&t, shmb_notes_alloc(&t, &store, &c), 4);
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
    assert_notes(&t, shmb_notes_alloc(&t, &store, &c), 5);
    assert_true(has_note(&t, "pools: offset (system: mooncake, below; offset_bare: its OffsetAllocator alone)"));
    assert_true(has_note(&t, "offset (system: mooncake): Mooncake Store's OffsetBufferAllocator"));
    assert_non_null(strstr(t.notes[3], "weak_ptr (shared_from_this), the AllocatedBuffer (make_unique), the "
                                       "cur_size_ atomic and the master's allocated-bytes gauges"));
}

static void test_alloc_modes(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.measure_mmap_only = 1;
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
    assert_true(has_note(&r, "posix (--measure_mmap_only): one segment per size"));
    assert_non_null(strstr(r.notes[1], "register against posix mmap alone (not createSharedMemory)"));

    c = alloc_cfg();
    c.system_rows = 1;
    c.measure_mmap_only = 1; /* --system wins: the main refuses the pair */
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 3);
    assert_true(has_note(&r, "rows of the system: register/size_kb:S/buffers:N = making N blocks of S KB usable, "
                             "whole (mooncake: N buffers, each createSharedMemory"));
    assert_false(has_note(&r, "pools: bipc (system"));
    assert_true(has_note(&r, "alloc, free: none"));
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
        assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
        assert_non_null(strstr(r.notes[0], "rows of the system: register/size_kb:S/buffers:N"));
        assert_true(strncmp(r.notes[1], objects[i], strlen(objects[i])) == 0);
        assert_true(strncmp(r.notes[2], bare[i], strlen(bare[i])) == 0);
        assert_true(strncmp(r.notes[3], "pools: alloc, free, alloc_reuse", 31) == 0);
    }

    c = alloc_cfg();
    c.peer = &peer;
    c.run[SHMB_ALLOC_OFFSET] = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 7);
    assert_true(has_note(&r, "peer_process: attach, detach and translate"));
    assert_true(has_note(&r, "peer_process pools (bipc, jemalloc)"));
}

static void test_alloc_threads(void **state)
{
    (void)state;
    char cpus[256], want[512];
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.threads = 2;
    c.run[SHMB_ALLOC_OFFSET] = 1;
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 7);
    expected_cpus(2, -1, cpus, sizeof(cpus));
    snprintf(want, sizeof(want), "threads: 2 at once per allocator and size, %s; a barrier starts every timed phase", cpus);
    assert_string_equal(r.notes[5], want);
    assert_true(has_note(&r, "threads: ns = per thread per op"));
    assert_int_equal(store.used, strlen(want) + 1 + strlen(r.notes[4]) + 1); /* + the pools' steps */
}

/* jemalloc_tcache: the cache's limits, read from jemalloc, per size of the
 * run, against the working set. */
static void test_alloc_tcache(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.run[SHMB_ALLOC_JEMALLOC_TCACHE] = 1;
    c.min_size_kb = 4;
    c.max_size_kb = 64;
    c.working_set = 2048;
    uint64_t max = 0, slots = 0;
    assert_int_equal(shmb_alloc_tcache_reach(4096, &max, &slots), 0);
    assert_true(max >= 4096 && slots >= 2); /* jemalloc caches a page-sized class, an even count */
    assert_int_equal(shmb_alloc_tcache_reach(max + 1, &max, &slots), 0);
    assert_true(slots == 0); /* above tcache_max: nothing cached */
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 5);
    char want[128];
    snprintf(want, sizeof(want), "jemalloc_tcache: the thread cache holds sizes <= %llu KiB (arenas.tcache_max)",
             (unsigned long long)(max / 1024));
    assert_true(has_note(&r, want));
    assert_non_null(strstr(r.notes[4], "64 KB 0; a working set of 2048 exceeds it at every size, so most calls "
                                       "reach the arena"));
    c.working_set = 2; /* the smallest count jemalloc keeps: fits below tcache_max, not above */
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 5);
    assert_non_null(strstr(r.notes[4], "a working set of 2 fits it where it holds 2 or more"));
    assert_non_null(strstr(r.notes[3], "; a working set under 2048 blocks makes short batches: each carries the "
                                       "header's timer overhead, that divided by the working set per op"));
    c.max_size_kb = 4;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 5);
    assert_non_null(strstr(r.notes[4], "a working set of 2 fits it at every size: the cache can serve the calls"));
}

/* A peer and threads (refused by the run) need 9 notes: they fit, the
 * report NULL-terminated after them. */
static void test_alloc_peer_and_threads(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.run[SHMB_ALLOC_OFFSET] = 1;
    c.peer = &peer;
    c.threads = 2;
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 9);
}

static void test_lookup_default(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 6);
    assert_string_equal(r.notes[0], "segments of 64 MB, requests of 4 KB, random pattern; every translation "
                                    "verified before timing");
    assert_true(has_note(&r, "placement: descending (the peer registers its segments in descending address order"));
    assert_true(has_note(&r, "systems: mooncake, flowipc_classic, flowipc_jemalloc"));
    assert_true(has_note(&r, "ns per lookup = batch time"));
    assert_true(has_note(&r, "step -: throughput"));
    assert_false(has_note(&r, "step latency"));
    assert_true(has_note(&r, "first_use: mooncake's first request to each buffer (shm_open + mmap + close)"));
}

/* Whether some note has `part` anywhere in it. */
static int note_says(const shmb_report_t *r, const char *part)
{
    for (size_t i = 0; i < NOTES_CAP && r->notes[i]; i++)
        if (strstr(r->notes[i], part))
            return 1;
    return 0;
}

/* Kernels are reference points, not bounds: flowipc_classic translates in
 * less than arithmetic does (one pool, no table), and the notes say why
 * instead of calling the kernels something no system beats. */
static void test_kernels_are_no_bounds(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_lookup_config_t lc = lookup_cfg();
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &lc), 6);
    assert_true(has_note(&r, "systems: mooncake, flowipc_classic, flowipc_jemalloc (what a request costs); "
                             "kernels: linear, lower_bound, tree, arithmetic (the minimal C operation of each way "
                             "to find one segment among several: reference points, not lower bounds; "));
    assert_true(note_says(&r, "flowipc_classic's one pool needs no table: base + offset, the base in a register, "
                              "so it can come in below arithmetic)"));
    assert_false(note_says(&r, "no implementation beats"));
    shmb_alloc_config_t ac = alloc_cfg();
    for (int offset = 0; offset < 2; offset++) {
        ac.run[SHMB_ALLOC_OFFSET] = offset;
        ac.threads = 2;
        r = shmb_test_fresh_report();
        assert_true(shmb_notes_alloc(&r, &store, &ac) > 0);
        assert_true(note_says(&r, "arena (kernel: an ideal lock-free pool in one process, a reference point, "
                                  "not a lower bound)"));
        assert_false(note_says(&r, "the lower bound"));
        assert_false(note_says(&r, "the bound"));
    }
}

static void test_lookup_modes(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    c.sequential = 1;
    c.segment_size_mb = 2;
    c.lookup_len_kb = 8;
    c.placement = SHMB_LOOKUP_PLACE_RANDOM;
    c.mode = SHMB_LOOKUP_MODE_LATENCY;
    c.system_rows = 1;
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 5);
    assert_string_equal(r.notes[0], "segments of 2 MB, requests of 8 KB, sequential pattern; every translation "
                                    "verified before timing");
    assert_true(has_note(&r, "placement: random (the peer registers its segments in an order unrelated"));
    assert_false(has_note(&r, "systems:"));
    assert_false(has_note(&r, "step -"));
    assert_true(has_note(&r, "step latency: the same requests as a dependent chain"));

    c = lookup_cfg();
    c.placement = SHMB_LOOKUP_PLACE_ASCENDING;
    c.mode = SHMB_LOOKUP_MODE_BOTH;
    c.peer_process = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 7);
    assert_string_equal(r.notes[1], "placement: ascending (the peer registers its segments in ascending address order)");
    assert_true(has_note(&r, "two processes (--peer_process)"));
    assert_true(has_note(&r, "step -"));
    assert_true(has_note(&r, "step latency"));
    assert_true(has_note(&r, "first_use: mooncake's first request to each buffer in the peer"));

    c = lookup_cfg();
    c.run_system[SHMB_SYSTEM_MOONCAKE] = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 6);
}

static void test_lookup_threads(void **state)
{
    (void)state;
    char cpus[256], want[1024];
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    c.threads = 3;
    c.cpu = 1;
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 6);
    expected_cpus(3, 1, cpus, sizeof(cpus));
    snprintf(want, sizeof(want),
             "threads: 3 at once, each its own request stream, sharing the path's metadata, pool and "
             "repository, %s; ns per lookup per thread = batch time / lookups in the batch (>= 4096), p50, "
             "p99, max over every thread's batches; ops_per_s = all threads' lookups / wall time; first_use: "
             "one thread", cpus);
    assert_string_equal(r.notes[3], want);
}

/* The most threads a binary allows: their CPU list fits in a fresh store. */
static void test_most_threads_fit(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_alloc_config_t a = alloc_cfg();
    a.threads = SHMB_ALLOC_MAX_THREADS;
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &a), 6);
    assert_non_null(strstr(r.notes[4], "threads: 256 at once per allocator and size, "));
    shmb_lookup_config_t l = lookup_cfg();
    l.threads = SHMB_LOOKUP_MAX_THREADS;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &l), 6);
    assert_non_null(strstr(r.notes[3], "threads: 256 at once, each its own request stream"));
}

/* Composed text that does not fit in what the store has left: refused,
 * nothing written; notes composed before stay valid. */
static void test_store_full(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    shmb_report_t first = shmb_test_fresh_report();
    assert_notes(&first, shmb_notes_lookup(&first, &store, &c), 6);
    char kept[256];
    snprintf(kept, sizeof(kept), "%s", first.notes[0]);
    const size_t used = store.used;
    assert_true(used > 0);
    store.used = SHMB_NOTES_TEXT_BYTES - 10;
    shmb_report_t r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_lookup(&r, &store, &c), -EOVERFLOW);
    for (size_t i = 0; i <= NOTES_CAP; i++)
        assert_ptr_equal(r.notes[i], shmb_test_sentinel);
    assert_int_equal(store.used, SHMB_NOTES_TEXT_BYTES - 10);
    store.used = used;
    shmb_transfer_config_t t = transfer_cfg();
    t.translate = 1;
    t.peer = &peer;
    assert_notes(&r, shmb_notes_transfer(&r, &store, &t), 6);
    assert_string_equal(first.notes[0], kept);
}

/* --allocator=ready: the pool row's note, the caller's limits in order, and
 * with a grow block the grow rows' note naming its size; a store with no
 * room left refuses them, the report and the store untouched. */
static void test_alloc_ready(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    const char *limits[] = {"limit one", "limit two"};
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc_ready(&r, &store, 0, limits, 2), 3);
    assert_true(has_note(&r, "ready: ns per pool from create to prefaulted;"));
    assert_string_equal(r.notes[1], "limit one");
    assert_string_equal(r.notes[2], "limit two");
    assert_int_equal(store.used, 0);
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc_ready(&r, &store, 64, NULL, 0), 2);
    assert_true(has_note(&r, "grow: ns to reach pool_mb of live bytes"));
    assert_non_null(strstr(r.notes[1], "flowipc_jemalloc blocks of 64 KB from the SHM-jemalloc model"));
    store.used = SHMB_NOTES_TEXT_BYTES - 10;
    r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_alloc_ready(&r, &store, 64, limits, 2), -EOVERFLOW);
    for (size_t i = 0; i <= NOTES_CAP; i++)
        assert_ptr_equal(r.notes[i], shmb_test_sentinel);
    assert_int_equal(store.used, SHMB_NOTES_TEXT_BYTES - 10);
}

/* --allocator=space: five notes, the churn's rounds and share from the
 * library's constants; the mooncake_upstream note, last, only when its rows
 * ran (alone or paired), naming the build's commit (empty here). */
static void test_alloc_space_and_upstream(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc_space(&r, &store), 5);
    char churn[128];
    snprintf(churn, sizeof(churn), "space: churn %d rounds, each frees %d%% of the live blocks",
             SHMB_ALLOC_SPACE_ROUNDS, SHMB_ALLOC_SPACE_FREE_PERCENT);
    assert_true(has_note(&r, churn));
    assert_true(has_note(&r, "space_alloc: ns of each allocation, timed alone"));
    shmb_alloc_config_t c = alloc_cfg();
    c.run[SHMB_ALLOC_OFFSET] = 1;
    r = shmb_test_fresh_report();
    const int plain = shmb_notes_alloc(&r, &store, &c);
    assert_false(has_note(&r, "mooncake_upstream:"));
    c.upstream = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), plain + 1);
    assert_string_equal(r.notes[plain], "mooncake_upstream: Mooncake's own OffsetAllocator (alloc_bare, free_bare; "
                                        "its other rows not covered), compiled from commit  (docs/upstream.md)");
    c.upstream = 0;
    c.systems[0] = SHMB_SYSTEM_MOONCAKE;
    c.systems[1] = SHMB_SYSTEM_MOONCAKE_UPSTREAM;
    c.nsystems = 2;
    r = shmb_test_fresh_report();
    const int paired = shmb_notes_alloc(&r, &store, &c);
    assert_true(paired > 0);
    assert_true(has_note(&r, "mooncake_upstream: Mooncake's own OffsetAllocator"));
    assert_true(strncmp(r.notes[paired - 1], "mooncake_upstream:", 18) == 0);
}

/* The hand-off's two notes come after the lookup's, worded for a peer or
 * not; a report with no room left refuses them, untouched. */
static void test_handoff(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_lookup_config_t l = lookup_cfg();
    shmb_handoff_bench_config_t h = handoff_cfg(0);
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &l), 6);
    const char *first = r.notes[0];
    assert_notes(&r, shmb_notes_handoff(&r, &store, &h), 8);
    assert_ptr_equal(r.notes[0], first);
    assert_true(has_note(&r, "handoff: Flow-IPC's object API, per object of 4 KB"));
    assert_non_null(strstr(r.notes[6], "no message crossing, timed in batches of 256"));
    assert_non_null(strstr(r.notes[6], "speedup = mooncake's relocate p50"));
    assert_true(has_note(&r, "pool_once: flowipc_jemalloc lending each pool"));

    h = handoff_cfg(1);
    l.peer_process = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &l), 6);
    assert_notes(&r, shmb_notes_handoff(&r, &store, &h), 8);
    assert_non_null(strstr(r.notes[6], "both messages crossing"));
    assert_non_null(strstr(r.notes[6], "no speedup"));

    r = shmb_test_fresh_report();
    for (size_t i = 0; i < NOTES_CAP - 1; i++)
        r.notes[i] = "a note";
    r.notes[NOTES_CAP - 1] = NULL;
    const size_t used = store.used;
    assert_int_equal(shmb_notes_handoff(&r, &store, &h), -EOVERFLOW);
    assert_null(r.notes[NOTES_CAP - 1]);
    assert_int_equal(store.used, used);
}

static void test_transfer_modes(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_transfer_config_t c = transfer_cfg();
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 3);
    assert_true(has_note(&r, "src, dst: SHM segments"));
    assert_true(has_note(&r, "GB_s = size / p50 time"));
    assert_true(has_note(&r, "speedup = "));

    c.run[SHMB_COPY_MEMCPY] = 0;
    c.run[SHMB_COPY_LOOP] = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 2);

    c = transfer_cfg();
    c.run[SHMB_COPY_NT] = 1;
    c.cold = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 5);
    assert_true(has_note(&r, "memcpy switches to non-temporal stores"));
    assert_true(has_note(&r, "cold: each transfer writes a fresh SHM segment"));

    c = transfer_cfg();
    c.translate = 1;
    c.num_segments = 7;
    c.peer = &peer;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 6);
    assert_true(has_note(&r, "flowipc_jemalloc: a borrower maps a lent pool read-only"));
    assert_string_equal(r.notes[3], "request_path: TENT's submit path for one descriptor (selection, look-ups, "
                                    "task objects, locks), the same code for every system, over the "
                                    "registrations each design makes (its findBuffer walks them): mooncake 7 "
                                    "buffers, flowipc_classic its one pool, flowipc_jemalloc the pools its arena "
                                    "makes for 7 blocks of dst's size; translate: the "
                                    "system's translation of dst alone (7 registered buffers or pools); request: "
                                    "the request path calling that translation and the copy, each once; note: "
                                    "each part's share of the request p50");
    assert_non_null(strstr(r.notes[4], "touched them, ran the request path, the translation and the request over "
                                       "its own mapping of dst, and timed its copies;"));
    assert_null(strstr(r.notes[4], "; cold:"));

    c = transfer_cfg();
    c.peer = &peer;
    c.cold = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 5);
    assert_non_null(strstr(r.notes[4], "touched them, and timed its copies;"));
    assert_non_null(strstr(r.notes[4], "of each size and method; cold: this process created each fresh segment"));
}

/* A paired run: its systems with the control, the baseline, the rounds,
 * the ratio rows, the verdicts and the credit, one line each, after the
 * sweep's (the request path's too); the replay's appended to its own. */
static void test_transfer_paired(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_transfer_config_t c = transfer_cfg();
    c.num_segments = 100;
    c.nsystems = 3;
    c.systems[0] = c.systems[2] = SHMB_SYSTEM_MOONCAKE;
    c.systems[1] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    shmb_report_t r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 4 + 8);
    assert_true(has_note(&r, "request_path: TENT's submit path"));
    assert_string_equal(r.notes[4], "paired run (--systems): mooncake, flowipc_jemalloc, mooncake_control measured "
                                    "in one run, round by round, each round every system once");
    assert_true(has_note(&r, "baseline: mooncake; control: mooncake_control, a second, independent set-up"));
    assert_true(has_note(&r, "order: each round runs every system once, in a row of a Williams square"));
    assert_true(has_note(&r, "rounds: per size and part, one batch of each system per round"));
    assert_non_null(strstr(r.notes[9], "until the systems together spent 3 x time_per_size_ms"));
    assert_true(has_note(&r, "rows /system:NAME: that system's samples"));
    assert_true(has_note(&r, "verdict: faster or slower"));
    assert_true(has_note(&r, "copy rows: the same code for every system, measured once"));
    c.zero_copy = 1;
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 4 + 8);
    assert_true(has_note(&r, "zero_copy: mooncake's whole request"));
    assert_false(has_note(&r, "flowipc_jemalloc: a borrower maps"));
    c.zero_copy = 0;

    r = shmb_test_fresh_report();
    r.notes[0] = "workload: synthetic";
    r.notes[1] = NULL;
    assert_notes(&r, shmb_notes_transfer_paired(&r, &store, c.systems, 3), 1 + 7);
    assert_string_equal(r.notes[0], "workload: synthetic");
    assert_true(has_note(&r, "rounds: the requests: every system replays each request in turn"));
    assert_true(has_note(&r, "rows /system:NAME: that system's samples, one per round"));
    assert_int_equal(shmb_notes_transfer_paired(&r, &store, c.systems, 1), -EINVAL);
}

/* A count below what a batch or a paired run needs: one note says what
 * was run instead (--num_iterations, --num_lookups, --num_transfers). */
static void test_counts(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_alloc_config_t a = alloc_cfg();
    for (int k = 1; k < SHMB_ALLOC_KINDS; k++)
        a.run[k] = 1;
    a.num_iterations = a.min_ops = 100;
    a.count_given = 1;
    shmb_report_t r = shmb_test_fresh_report();
    const int with = shmb_notes_alloc(&r, &store, &a);
    assert_true(has_note(&r, "count: 100 operations per pool step asked; a batch is the working set of 2048 "
                             "blocks (a shorter one lasts under 100x the timer overhead), so each step times 1 "
                             "batch of it: too few for percentiles"));
    a.min_ops = 4096; /* two whole rounds: no note */
    r = shmb_test_fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &a), with - 1);
    assert_false(has_note(&r, "count:"));

    shmb_alloc_config_t p = alloc_cfg();
    shmb_test_pair_with(&p.nsystems, p.systems, p.system_names, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    p.num_iterations = p.min_ops = 3;
    p.count_given = 1;
    uint64_t block, reg[SHMB_ALLOC_REGISTER_COUNTS];
    shmb_alloc_bench_paired_rounds(&p, &block, reg);
    assert_int_equal(block, 6); /* SHMB_PAIRED_MIN_ROUNDS, a whole block of 2 x 3 */
    assert_int_equal(reg[0], 12); /* SHMB_ALLOC_REGISTER_MIN_ROUNDS, in whole blocks */
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_alloc(&r, &store, &p) > 0);
    assert_true(has_note(&r, "count: 3 operations per pool step asked; a batch is the working set of 2048 blocks "
                             "(a shorter one lasts under 100x the timer overhead), so each step times one batch "
                             "per round; the count asks for 1 rounds of alloc, free, alloc_reuse: 6 at least, the "
                             "fewest with a 95% interval"));
    p.count_given = 0; /* the default's minimum */
    shmb_alloc_bench_paired_rounds(&p, &block, reg);
    assert_int_equal(block, 24);

    shmb_lookup_config_t l = lookup_cfg();
    l.run[0] = 1;
    l.num_lookups = 1000;
    l.count_given = 1;
    assert_int_equal(shmb_lookup_bench_batches(&l), 1);
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_lookup(&r, &store, &l) > 0);
    assert_true(has_note(&r, "count: num_lookups=1000: 1 batch of 4096 lookups per row (a shorter batch of the "
                             "fastest paths lasts under 100x the timer overhead), min_time_ms not applied: too "
                             "few for percentiles"));
    l.num_lookups = 100000;
    assert_int_equal(shmb_lookup_bench_batches(&l), 24);
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_lookup(&r, &store, &l) > 0);
    assert_true(has_note(&r, "count: num_lookups=100000: 24 batches of 4096 lookups per row (a shorter batch of "
                             "the fastest paths lasts under 100x the timer overhead), min_time_ms not applied"));
    l.count_given = 0;
    assert_int_equal(shmb_lookup_bench_batches(&l), 0);
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_lookup(&r, &store, &l) > 0);
    assert_false(has_note(&r, "count:"));

    shmb_transfer_config_t t = transfer_cfg();
    t.translate = 1;
    t.num_transfers = 100;
    t.count_given = 1;
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_transfer(&r, &store, &t) > 0);
    assert_true(has_note(&r, "count: num_transfers=100: request_path and translate time it in batches >= 100x"));
    t.translate = 0; /* copies alone run the count exactly: nothing to say */
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_transfer(&r, &store, &t) > 0);
    assert_false(has_note(&r, "count:"));
}

/* Every combination of the modes: at most what report->notes holds, then
 * its NULL. */
static void test_never_overflows(void **state)
{
    (void)state;
    for (unsigned m = 0; m < 64; m++) {
        shmb_notes_t store = {0};
        shmb_alloc_config_t a = alloc_cfg();
        a.peer = m & 1 ? &peer : NULL;
        a.system_rows = (m >> 1) & 1;
        a.measure_mmap_only = (m >> 2) & 1;
        a.cleanup = (m >> 3) & 1;
        a.touch = (m >> 4) & 1;
        a.threads = m & 32 ? 2 : 1;
        shmb_report_t r = shmb_test_fresh_report();
        int ret = shmb_notes_alloc(&r, &store, &a);
        assert_true(ret >= 1 && (size_t)ret <= NOTES_CAP && r.notes[ret] == NULL);

        shmb_lookup_config_t l = lookup_cfg();
        l.system_rows = m & 1;
        l.peer_process = (m >> 1) & 1;
        l.threads = (m >> 2) & 1 ? 2 : 1;
        l.mode = (shmb_lookup_mode_t)((m >> 3) % 3);
        l.run_system[SHMB_SYSTEM_MOONCAKE] = 1;
        r = shmb_test_fresh_report();
        ret = shmb_notes_lookup(&r, &store, &l);
        assert_true(ret >= 1 && (size_t)ret <= NOTES_CAP && r.notes[ret] == NULL);
        shmb_handoff_bench_config_t h = handoff_cfg(l.peer_process);
        ret = shmb_notes_handoff(&r, &store, &h);
        assert_true(ret >= 3 && (size_t)ret <= NOTES_CAP && r.notes[ret] == NULL);

        shmb_transfer_config_t t = transfer_cfg();
        t.run[SHMB_COPY_MEMCPY] = m & 1;
        t.run[SHMB_COPY_NT] = (m >> 1) & 1;
        t.cold = (m >> 2) & 1;
        t.translate = (m >> 3) & 1;
        t.peer = (m >> 4) & 1 ? &peer : NULL;
        r = shmb_test_fresh_report();
        ret = shmb_notes_transfer(&r, &store, &t);
        assert_true(ret >= 1 && (size_t)ret <= NOTES_CAP && r.notes[ret] == NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_default),    cmocka_unit_test(test_alloc_modes),
        cmocka_unit_test(test_alloc_threads),    cmocka_unit_test(test_alloc_peer_and_threads),
        cmocka_unit_test(test_alloc_tcache),     cmocka_unit_test(test_alloc_ready),
        cmocka_unit_test(test_alloc_space_and_upstream),
        cmocka_unit_test(test_lookup_default),   cmocka_unit_test(test_lookup_modes),
        cmocka_unit_test(test_kernels_are_no_bounds),
        cmocka_unit_test(test_lookup_threads),   cmocka_unit_test(test_most_threads_fit),
        cmocka_unit_test(test_store_full),       cmocka_unit_test(test_handoff),
        cmocka_unit_test(test_transfer_modes),   cmocka_unit_test(test_never_overflows),
        cmocka_unit_test(test_transfer_paired),  cmocka_unit_test(test_counts),
    };
    return shmb_test_run(tests, NULL, NULL);
}
