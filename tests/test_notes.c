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

#include "shmbench/notes.h"
#include "shmbench/sysinfo.h"

#define NOTES_CAP (sizeof(((shmb_report_t *)0)->notes) / sizeof(const char *) - 1)

static shmb_peer_t peer; /* only its address is used: "a peer runs" */
static const char sentinel[] = "untouched";

static shmb_report_t fresh_report(void)
{
    shmb_report_t r;
    memset(&r, 0, sizeof(r));
    for (size_t i = 0; i <= NOTES_CAP; i++)
        r.notes[i] = sentinel;
    return r;
}

static shmb_alloc_config_t alloc_cfg(void)
{
    shmb_alloc_config_t c;
    memset(&c, 0, sizeof(c));
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

/* n notes set, each non-empty, then NULL. */
static void assert_notes(const shmb_report_t *r, int ret, int n)
{
    assert_int_equal(ret, n);
    for (int i = 0; i < n; i++) {
        assert_non_null(r->notes[i]);
        assert_true(r->notes[i] != sentinel && r->notes[i][0] != '\0');
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
    shmb_report_t r = fresh_report();
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
    assert_true(has_note(&r, "posix (system: mooncake's createSharedMemory): total = "));
    assert_string_equal(r.notes[1], "speedup = posix total p50 / the pool row's p50 (free: posix cleanup p50)");
    assert_true(has_note(&r, "bipc (system: flowipc_classic)"));
    assert_true(has_note(&r, "pools: alloc, free"));
    assert_int_equal(store.used, 0); /* nothing composed */
    c.touch = 1;                     /* first-touch rows need no note of their own */
    shmb_report_t t = fresh_report();
    assert_notes(&t, shmb_notes_alloc(&t, &store, &c), 4);
    for (int i = 0; i < 4; i++)
        assert_string_equal(t.notes[i], r.notes[i]);
}

static void test_alloc_modes(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.cleanup = 0;
    shmb_report_t r = fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
    assert_non_null(strstr(r.notes[1], "(free: none, --cleanup=false times no cleanup)"));

    c = alloc_cfg();
    c.measure_mmap_only = 1;
    r = fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 4);
    assert_true(has_note(&r, "posix (--measure_mmap_only): one segment per size"));
    assert_true(has_note(&r, "speedup = posix mmap p50"));

    c = alloc_cfg();
    c.system_rows = 1;
    c.measure_mmap_only = 1; /* --system wins: the main refuses the pair */
    r = fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 2);
    assert_true(has_note(&r, "rows of the system's allocator"));
    assert_false(has_note(&r, "bipc (system"));

    c = alloc_cfg();
    c.peer = &peer;
    r = fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 6);
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
    shmb_report_t r = fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &c), 6);
    expected_cpus(2, -1, cpus, sizeof(cpus));
    snprintf(want, sizeof(want), "threads: 2 at once per allocator and size, %s; a barrier starts every timed phase", cpus);
    assert_string_equal(r.notes[4], want);
    assert_true(has_note(&r, "threads: ns = per thread per op"));
    assert_int_equal(store.used, strlen(want) + 1);
}

/* A peer and threads (refused by the run) would need 8 notes: refused too,
 * the report and the store as they were. */
static void test_alloc_too_many_notes(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_alloc_config_t c = alloc_cfg();
    c.peer = &peer;
    c.threads = 2;
    shmb_report_t r = fresh_report();
    assert_int_equal(shmb_notes_alloc(&r, &store, &c), -EOVERFLOW);
    for (size_t i = 0; i <= NOTES_CAP; i++)
        assert_ptr_equal(r.notes[i], sentinel);
    assert_int_equal(store.used, 0);
}

static void test_lookup_default(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    shmb_report_t r = fresh_report();
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
    shmb_report_t r = fresh_report();
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
    r = fresh_report();
    assert_notes(&r, shmb_notes_lookup(&r, &store, &c), 7);
    assert_string_equal(r.notes[1], "placement: ascending (the peer registers its segments in ascending address order)");
    assert_true(has_note(&r, "two processes (--peer_process)"));
    assert_true(has_note(&r, "step -"));
    assert_true(has_note(&r, "step latency"));
    assert_true(has_note(&r, "first_use: mooncake's first request to each buffer in the peer"));
}

static void test_lookup_threads(void **state)
{
    (void)state;
    char cpus[256], want[1024];
    shmb_notes_t store = {0};
    shmb_lookup_config_t c = lookup_cfg();
    c.threads = 3;
    c.cpu = 1;
    shmb_report_t r = fresh_report();
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
    shmb_report_t r = fresh_report();
    assert_notes(&r, shmb_notes_alloc(&r, &store, &a), 6);
    assert_non_null(strstr(r.notes[4], "threads: 256 at once per allocator and size, "));
    shmb_lookup_config_t l = lookup_cfg();
    l.threads = SHMB_LOOKUP_MAX_THREADS;
    r = fresh_report();
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
    shmb_report_t first = fresh_report();
    assert_notes(&first, shmb_notes_lookup(&first, &store, &c), 6);
    char kept[256];
    snprintf(kept, sizeof(kept), "%s", first.notes[0]);
    const size_t used = store.used;
    assert_true(used > 0);
    store.used = SHMB_NOTES_TEXT_BYTES - 10;
    shmb_report_t r = fresh_report();
    assert_int_equal(shmb_notes_lookup(&r, &store, &c), -EOVERFLOW);
    for (size_t i = 0; i <= NOTES_CAP; i++)
        assert_ptr_equal(r.notes[i], sentinel);
    assert_int_equal(store.used, SHMB_NOTES_TEXT_BYTES - 10);
    store.used = used;
    shmb_transfer_config_t t = transfer_cfg();
    t.translate = 1;
    t.peer = &peer;
    assert_notes(&r, shmb_notes_transfer(&r, &store, &t), 5);
    assert_string_equal(first.notes[0], kept);
}

static void test_transfer_modes(void **state)
{
    (void)state;
    shmb_notes_t store = {0};
    shmb_transfer_config_t c = transfer_cfg();
    shmb_report_t r = fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 3);
    assert_true(has_note(&r, "src, dst: SHM segments"));
    assert_true(has_note(&r, "GB_s = size / p50 time"));
    assert_true(has_note(&r, "speedup_vs_memcpy = "));

    c.run[SHMB_COPY_MEMCPY] = 0;
    c.run[SHMB_COPY_LOOP] = 1;
    r = fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 2);

    c = transfer_cfg();
    c.run[SHMB_COPY_NT] = 1;
    c.cold = 1;
    r = fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 5);
    assert_true(has_note(&r, "memcpy switches to non-temporal stores"));
    assert_true(has_note(&r, "cold: each transfer writes a fresh SHM segment"));

    c = transfer_cfg();
    c.translate = 1;
    c.num_segments = 7;
    c.peer = &peer;
    r = fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 5);
    assert_string_equal(r.notes[3], "each transfer first translates dst through the system's per-request path "
                                    "(7 registered buffers or pools), then copies; the note gives one "
                                    "translation alone and its share of the transfer");
    assert_non_null(strstr(r.notes[4], "touched them, translated dst through the system's path before each "
                                       "copy and timed its copies;"));
    assert_null(strstr(r.notes[4], "; cold:"));

    c = transfer_cfg();
    c.peer = &peer;
    c.cold = 1;
    r = fresh_report();
    assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 5);
    assert_non_null(strstr(r.notes[4], "touched them, and timed its copies;"));
    assert_non_null(strstr(r.notes[4], "of each size and method; cold: this process created each fresh segment"));
}

/* Every combination of the modes: at most what report->notes holds, then
 * its NULL; the one the run refuses (a peer with threads) refused here. */
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
        shmb_report_t r = fresh_report();
        int ret = shmb_notes_alloc(&r, &store, &a);
        if (a.peer && a.threads > 1 && !a.system_rows)
            assert_int_equal(ret, -EOVERFLOW);
        else
            assert_true(ret >= 1 && (size_t)ret <= NOTES_CAP && r.notes[ret] == NULL);

        shmb_lookup_config_t l = lookup_cfg();
        l.system_rows = m & 1;
        l.peer_process = (m >> 1) & 1;
        l.threads = (m >> 2) & 1 ? 2 : 1;
        l.mode = (shmb_lookup_mode_t)((m >> 3) % 3);
        r = fresh_report();
        ret = shmb_notes_lookup(&r, &store, &l);
        assert_true(ret >= 1 && (size_t)ret <= NOTES_CAP && r.notes[ret] == NULL);

        shmb_transfer_config_t t = transfer_cfg();
        t.run[SHMB_COPY_MEMCPY] = m & 1;
        t.run[SHMB_COPY_NT] = (m >> 1) & 1;
        t.cold = (m >> 2) & 1;
        t.translate = (m >> 3) & 1;
        t.peer = (m >> 4) & 1 ? &peer : NULL;
        r = fresh_report();
        ret = shmb_notes_transfer(&r, &store, &t);
        assert_true(ret >= 1 && (size_t)ret <= NOTES_CAP && r.notes[ret] == NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_default),    cmocka_unit_test(test_alloc_modes),
        cmocka_unit_test(test_alloc_threads),    cmocka_unit_test(test_alloc_too_many_notes),
        cmocka_unit_test(test_lookup_default),   cmocka_unit_test(test_lookup_modes),
        cmocka_unit_test(test_lookup_threads),   cmocka_unit_test(test_most_threads_fit),
        cmocka_unit_test(test_store_full),
        cmocka_unit_test(test_transfer_modes),   cmocka_unit_test(test_never_overflows),
    };
    return shmb_test_run(tests, NULL, NULL);
}
