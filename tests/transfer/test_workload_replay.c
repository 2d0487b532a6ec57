/* The replay's trace-driven modes: prefix reuse on a hand-made trace of known hits, and the open-loop
 * scheduler on known intended starts, a late request counting its wait. */
#include <time.h>

#include "shmbench/clock.h"

#include "helpers.h"
#include "workload_fixture.h"

#include "shmbench/workload.h"
#include "transfer/workload_internal.h"

#define MIB (1ull << 20)

/* Five requests, ids one per 512-token block:
 *   1: 1024 tokens [1, 2]        no hit: moves 1024 tokens
 *   2: 1500 tokens [1, 2, 3]     1, 2 hit: moves 1500 - 1024 = 476
 *   3:  512 tokens [3]           wholly hit: moves nothing, not replayed
 *   4: 1024 tokens [5, 1]        1 hits (not a prefix; a whole block): moves 512
 *   5: 1024 tokens [7, 7]        7 repeated on its own line: no hit, moves 1024
 * 10 ids, 4 hits: 40.0%. */
static const char trace[] =
    "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 5, \"input_length\": 1500, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 9, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [3]}\n"
    "{\"timestamp\": 12, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [5, 1]}\n"
    "{\"timestamp\": 20, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [7, 7]}\n";

static void read_trace(shmb_workload_stream_t *s)
{
    FILE *f = fmemopen((void *)trace, strlen(trace), "r");
    assert_non_null(f);
    shmb_workload_error_t err;
    assert_int_equal(shmb_workload_read(f, 0, s, &err), 5);
    fclose(f);
}

/* deepseek_v3_fp8: 61 layers x 576 B = 35136 B per token; 16-token blocks. */
static shmb_workload_shape_t reuse_shape(int reuse)
{
    shmb_workload_shape_t sh = {shmb_workload_model_find("deepseek_v3_fp8"), 16, SHMB_WORKLOAD_LAYER, 64 * MIB,
                                SHMB_WORKLOAD_LAYOUT_LAYER, 1, reuse};
    return sh;
}

#define TOKEN 35136ull

static void test_reuse_hits_and_tokens(void **state)
{
    shmb_workload_stream_t s = {0};
    read_trace(&s);
    const uint64_t hits[] = {0, 2, 1, 1, 0}, moved[] = {1024, 476, 0, 512, 1024};
    const shmb_workload_shape_t on = reuse_shape(1), off = reuse_shape(0);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(s.v[i].hits, hits[i]);
        assert_int_equal(shmb_workload_tokens(&on, &s.v[i]), moved[i]);
        assert_int_equal(shmb_workload_tokens(&off, &s.v[i]), s.v[i].input_length);
    }
    shmb_workload_request_t r; /* one line alone has no earlier line */
    char what[160];
    assert_int_equal(shmb_workload_parse_line(trace, strchr(trace, '\n') - trace, &r, what, sizeof(what)), 0);
    assert_int_equal(r.hits, 0);

    /* totals: 1024, 476 (30 blocks of 16: 480 tokens), 512 and 1024 tokens move */
    shmb_workload_totals_t t;
    assert_int_equal(shmb_workload_totals(&on, &s, &t), 0);
    assert_int_equal(t.hash_ids, 10);
    assert_int_equal(t.hits, 4);
    assert_int_equal(t.wholly_hit, 1);
    assert_int_equal(t.max_bytes, 1024 * TOKEN);
    assert_true(t.bytes_mean == (double)((1024 + 480 + 512 + 1024) * TOKEN) / 4.0);
    assert_int_equal(shmb_workload_totals(&off, &s, &t), 0);
    assert_int_equal(t.wholly_hit, 0);
    assert_true(t.bytes_mean == (double)((1024 + 1504 + 512 + 1024 + 1024) * TOKEN) / 5.0);

    shmb_workload_stream_t all_hit = {0}; /* lines 2 and 3 of a stream whose first line is hit-only */
    read_trace(&all_hit);
    all_hit.n = 3;
    all_hit.v[0].hits = 2;
    all_hit.v[1].hits = 3;
    all_hit.v[2].hits = 1;
    assert_int_equal(shmb_workload_totals(&on, &all_hit, &t), -ENODATA);
    shmb_workload_stream_free(&all_hit);
    shmb_workload_stream_free(&s);
}

/* Under reuse: the wholly hit request not replayed, only missed blocks copied, the share in the note. */
static void test_reuse_replay(void **state)
{
    shmb_workload_stream_t s = {0};
    read_trace(&s);
    shmb_workload_config_t c = shmb_test_workload_config(reuse_shape(1), SHMB_SYSTEM_MOONCAKE);
    shmb_rows_t rows = shmb_test_workload_rows(&c, &s);
    assert_int_equal(rows.n, SHMB_WORKLOAD_PARTS);
    for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++)
        assert_int_equal(rows.v[p].iterations, 4);
    const shmb_row_t *copy = &rows.v[SHMB_WORKLOAD_COPY];
    const double moved = copy->bytes_per_second * copy->ns.mean * 4 / 1e9;
    assert_true(moved > 0.999999 * (1024 + 480 + 512 + 1024) * TOKEN);
    assert_true(moved < 1.000001 * (1024 + 480 + 512 + 1024) * TOKEN);
    assert_non_null(strstr(rows.v[SHMB_WORKLOAD_REQUEST].note, "; hits 40.0% of blocks"));
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_workload_stream_free(&s);
}

/* Request 0 takes 30 ms: request 1, due 5 ms after it, waits about 25 ms, and its latency says so. */
static int no_prepare(void *ctx, size_t i)
{
    (void)ctx;
    (void)i;
    return 0;
}

static int slow_first(void *ctx, size_t i, uint64_t *start, uint64_t *done)
{
    (void)ctx;
    *start = shmb_clock_now_ns();
    if (i == 0) {
        const struct timespec ts = {0, 30000000};
        nanosleep(&ts, NULL);
    }
    *done = shmb_clock_now_ns();
    return 0;
}

static int fail_second(void *ctx, size_t i, uint64_t *start, uint64_t *done)
{
    (void)ctx;
    *start = *done = shmb_clock_now_ns();
    return i == 1 ? -EPROTO : 0;
}

static void test_open_loop_schedule(void **state)
{
    /* timestamps 100, 110, 120, 140, 200 ms at speed 2: due 0, 5, 10, 20, 50 ms after the first */
    shmb_workload_request_t v[5] = {{100, 512, 1, 1, 0}, {110, 512, 1, 1, 0}, {120, 512, 1, 1, 0},
                                    {140, 512, 1, 1, 0}, {200, 512, 1, 1, 0}};
    const shmb_workload_stream_t s = {v, 5, 5};
    const uint64_t due_ms[] = {0, 5, 10, 20, 50};
    uint64_t a[20];
    shmb_workload_open_t o = {0, a, a + 5, a + 10, a + 15};
    const shmb_workload_server_t server = {no_prepare, slow_first, NULL};
    assert_int_equal(shmb_workload_open_run(&o, &s, 2.0, &server), 0);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(o.intended_ns[i], due_ms[i] * 1000000);
        assert_int_equal(shmb_workload_intended_ns(&s, (size_t)i, 2.0), due_ms[i] * 1000000);
        /* issued no earlier than due, and not later than a loaded machine's wake-up (50 ms) */
        assert_true(o.issued_ns[i] >= o.intended_ns[i]);
        assert_true(o.issued_ns[i] < o.intended_ns[i] + 50000000);
        assert_true(o.start_ns[i] >= o.issued_ns[i]);
        assert_true(o.done_ns[i] >= o.start_ns[i]);
    }
    /* request 0 took 30 ms: the latency of 1 and 2 (due at 5 and 10 ms) holds their wait for it */
    assert_true(o.done_ns[0] >= 30000000);
    assert_true(o.start_ns[1] >= o.done_ns[0] && o.start_ns[2] >= o.done_ns[1]);
    assert_true(o.done_ns[1] - o.intended_ns[1] >= 25000000);
    assert_true(o.done_ns[2] - o.intended_ns[2] >= 20000000);
    assert_true(o.done_ns[1] - o.start_ns[1] < 5000000);
    /* request 4, due at 50 ms, waits for its time: it starts no earlier */
    assert_true(o.start_ns[4] >= 50000000);

    const shmb_workload_server_t failing = {no_prepare, fail_second, NULL};
    const uint64_t t = shmb_clock_now_ns(); /* a failed request stops the run, the issuer too, at once */
    assert_int_equal(shmb_workload_open_run(&o, &s, 0.1, &failing), -EPROTO);
    assert_true(shmb_clock_now_ns() - t < 500000000); /* not the 1 s until request 4 at speed 0.1 */
    assert_int_equal(shmb_workload_open_run(&o, &s, 0.0, &server), -EINVAL);
}

/* Open loop through each system: request and latency rows, latency at least the service, verified. */
static void test_open_loop_replay(void **state)
{
    shmb_workload_stream_t s = {0};
    read_trace(&s);
    for (int sys = 0; sys < SHMB_SYSTEMS; sys++) {
        shmb_workload_config_t c = shmb_test_workload_config(reuse_shape(1), (shmb_system_t)sys);
        c.open_loop = 1;
        c.speed = 4.0;
        shmb_rows_t rows = shmb_test_workload_rows(&c, &s);
        assert_int_equal(rows.n, 2);
        assert_string_equal(rows.v[0].variant, "request");
        assert_string_equal(rows.v[1].variant, "latency");
        assert_int_equal(rows.v[0].iterations, 4);
        assert_int_equal(rows.v[1].iterations, 4);
        assert_true(rows.v[1].ns.max >= rows.v[0].ns.min);
        assert_non_null(strstr(rows.v[1].note, "from intended start, speed 4"));
        shmb_rows_free(&rows);
        assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
        c.nsystems = 2; /* paired open-loop: refused */
        shmb_test_workload_refused(&c, &s, -EINVAL);
    }
    shmb_workload_stream_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_hits_and_tokens),
        cmocka_unit_test(test_reuse_replay),
        cmocka_unit_test(test_open_loop_schedule),
        cmocka_unit_test(test_open_loop_replay),
    };
    return shmb_test_run_shm("/shmb_test_wlreplay_", tests, NULL, shmb_test_remove_leftovers);
}
