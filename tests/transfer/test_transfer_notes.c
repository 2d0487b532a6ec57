/* transfer notes: each mode's notes, worded as the tables print them. */

#include "helpers.h"

#include "shmbench/notes.h"
#include "shmbench/transfer_bench.h"
#include "copier_fixture.h"

static shmb_peer_t peer; /* only its address is used: "a peer runs" */

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

static void test_transfer_modes(void **state)
{
    shmb_notes_t store = {0};
    shmb_transfer_config_t c = transfer_cfg();
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 3);
    assert_true(shmb_test_has_note(&r, "src, dst: SHM segments"));
    assert_true(shmb_test_has_note(&r, "GB_s = size / p50 time"));
    assert_true(shmb_test_has_note(&r, "speedup = "));

    c.run[SHMB_COPY_MEMCPY] = 0;
    c.run[SHMB_COPY_LOOP] = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 2);

    c = transfer_cfg();
    c.run[SHMB_COPY_NT] = 1;
    c.cold = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 5);
    assert_true(shmb_test_has_note(&r, "memcpy switches to non-temporal stores"));
    assert_true(shmb_test_has_note(&r, "cold: each transfer writes a fresh SHM segment"));

    c = transfer_cfg();
    c.translate = 1;
    c.num_segments = 7;
    c.peer = &peer;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 6);
    assert_true(shmb_test_has_note(&r, "flowipc_jemalloc: a borrower maps a lent pool read-only"));
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
    shmb_test_assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 5);
    assert_non_null(strstr(r.notes[4], "touched them, and timed its copies;"));
    assert_non_null(strstr(r.notes[4], "of each size and method; cold: this process created each fresh segment"));
}

/* A paired run: systems, baseline, rounds, ratio rows, verdicts and credit, a line each after the sweep's. */
static void test_transfer_paired(void **state)
{
    shmb_notes_t store = {0};
    shmb_transfer_config_t c = transfer_cfg();
    c.num_segments = 100;
    shmb_test_transfer_pair(&c, SHMB_SYSTEM_FLOWIPC_JEMALLOC);
    shmb_report_t r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 4 + 8);
    assert_true(shmb_test_has_note(&r, "request_path: TENT's submit path"));
    assert_string_equal(r.notes[4], "paired run (--systems): mooncake, flowipc_jemalloc, mooncake_control measured "
                                    "in one run, round by round, each round every system once");
    assert_true(shmb_test_has_note(&r, "baseline: mooncake; control: mooncake_control, a second, independent set-up"));
    assert_true(shmb_test_has_note(&r, "order: each round runs every system once, in a row of a Williams square"));
    assert_true(shmb_test_has_note(&r, "rounds: per size and part, one batch of each system per round"));
    assert_non_null(strstr(r.notes[9], "until the systems together spent 3 x time_per_size_ms"));
    assert_true(shmb_test_has_note(&r, "rows /system:NAME: that system's samples"));
    assert_true(shmb_test_has_note(&r, "verdict: faster or slower"));
    assert_true(shmb_test_has_note(&r, "copy rows: the same code for every system, measured once"));
    c.zero_copy = 1;
    r = shmb_test_fresh_report();
    shmb_test_assert_notes(&r, shmb_notes_transfer(&r, &store, &c), 4 + 8);
    assert_true(shmb_test_has_note(&r, "zero_copy: mooncake's whole request"));
    assert_false(shmb_test_has_note(&r, "flowipc_jemalloc: a borrower maps"));
    c.zero_copy = 0;

    r = shmb_test_fresh_report();
    r.notes[0] = "workload: synthetic";
    r.notes[1] = NULL;
    shmb_test_assert_notes(&r, shmb_notes_transfer_paired(&r, &store, c.systems, 3), 1 + 7);
    assert_string_equal(r.notes[0], "workload: synthetic");
    assert_true(shmb_test_has_note(&r, "rounds: the requests: every system replays each request in turn"));
    assert_true(shmb_test_has_note(&r, "rows /system:NAME: that system's samples, one per round"));
    assert_int_equal(shmb_notes_transfer_paired(&r, &store, c.systems, 1), -EINVAL);
}

static int compose(shmb_report_t *r, shmb_notes_t *store, const void *cfg)
{
    return shmb_notes_transfer(r, store, cfg);
}

/* A store too full for the notes refuses them, untouched (helpers.h). */
static void test_transfer_store_full(void **state)
{
    shmb_transfer_config_t c = transfer_cfg();
    c.translate = 1;
    c.peer = &peer;
    shmb_test_notes_store_full(compose, &c, 6);
}

/* A count below what a batch or a paired run needs: one note says what was run instead (--num_transfers). */
static void test_transfer_counts(void **state)
{
    shmb_notes_t store = {0};
    shmb_report_t r;
    shmb_transfer_config_t t = transfer_cfg();
    t.translate = 1;
    t.num_transfers = 100;
    t.count_given = 1;
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_transfer(&r, &store, &t) > 0);
    assert_true(
        shmb_test_has_note(&r, "count: num_transfers=100: request_path and translate time it in batches >= 100x"));
    t.translate = 0; /* copies alone run the count exactly: nothing to say */
    r = shmb_test_fresh_report();
    assert_true(shmb_notes_transfer(&r, &store, &t) > 0);
    assert_false(shmb_test_has_note(&r, "count:"));
}

/* Every combination of the modes: at most what report->notes holds, then its NULL. */
static void test_transfer_never_overflows(void **state)
{
    for (unsigned m = 0; m < 64; m++) {
        shmb_notes_t store = {0};
        shmb_report_t r;
        int ret;
        shmb_transfer_config_t t = transfer_cfg();
        t.run[SHMB_COPY_MEMCPY] = m & 1;
        t.run[SHMB_COPY_NT] = (m >> 1) & 1;
        t.cold = (m >> 2) & 1;
        t.translate = (m >> 3) & 1;
        t.peer = (m >> 4) & 1 ? &peer : NULL;
        r = shmb_test_fresh_report();
        ret = shmb_notes_transfer(&r, &store, &t);
        assert_true(ret >= 1 && (size_t)ret <= SHMB_TEST_NOTES_CAP && r.notes[ret] == NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfer_modes),           cmocka_unit_test(test_transfer_paired),
        cmocka_unit_test(test_transfer_store_full),      cmocka_unit_test(test_transfer_counts),
        cmocka_unit_test(test_transfer_never_overflows),
    };
    return shmb_test_run(tests, NULL, NULL);
}
