/* workload notes: the replay's header lines, worded as shm_transfer_bench
 * --workload prints them, over hand-made totals; and a full store. */

#include "helpers.h"

#include "shmbench/notes.h"
#include "shmbench/workload.h"

#define MAX_LINES 9 /* the most lines, and the NULL */

static const shmb_workload_model_t toy = {"toy", 2, 8, 128, 0, 2, "made up"};
static const shmb_workload_model_t mla = {"mla", 3, 0, 0, 576, 1, "made up"};

/* 3 requests, one cut; 192 descriptors of 32 and 128 KiB classes. */
static shmb_workload_totals_t totals(void)
{
    shmb_workload_totals_t t;
    memset(&t, 0, sizeof(t));
    t.requests = 3;
    t.clipped = 1;
    t.max_bytes = 3 << 20;
    t.descriptors_mean = 64.0;
    t.bytes_mean = 1572864.0;
    t.span_ms = 250;
    t.descriptors_min = 32;
    t.descriptors_max = 96;
    t.sizes[15] = 128;
    t.sizes[17] = 64;
    t.hash_ids = 40;
    t.hits = 10;
    t.wholly_hit = 1;
    return t;
}

static shmb_workload_config_t config(const shmb_workload_model_t *m, shmb_workload_layout_t layout)
{
    shmb_workload_config_t c;
    memset(&c, 0, sizeof(c));
    c.shape.model = m;
    c.shape.layout = layout;
    c.shape.block_tokens = layout == SHMB_WORKLOAD_LAYOUT_VLLM ? 16 : 512;
    c.shape.granularity = SHMB_WORKLOAD_LAYER;
    c.shape.max_request_bytes = 256ull << 20;
    c.shape.tp = 1;
    c.speed = 1.0;
    return c;
}

#define SYNTHETIC "workload: synthetic (seed 7): 3 requests, arrivals over 250 ms, "
#define CLOSED "replayed back to back (arrivals order them; nothing waits)"
#define TOY "model: toy (2 layers, 8 KV heads x 128, 2 B per element: 4096 B per token per layer; made up)"
#define CUT "1 of 3 requests cut to --max_request_mb=256"
#define TMPFS                                                                                                      \
    "backing: tmpfs (shm_open in /dev/shm, 4 KiB pages): src, dst reserved with posix_fallocate, touched before " \
    "timing"
#define ROWS "rows: ns per request (p50, p99, p999 over requests); request_path: TENT's submit path "
#define ROWS_REST                                                                                                  \
    ", no translation, no copy; translate: the system's translation of every descriptor; copy: every "           \
    "descriptor's copy; request: the request path calling both per descriptor; note: share of the request p50"
#define GBS                                                                                                        \
    "GB_s = bytes of all requests / their time; dst poisoned before copy and request and every descriptor's "     \
    "bytes verified after each, every translation checked (untimed)"
#define PER_REQUEST                                                                                                \
    "bytes mean 1.50 MiB, largest 3.00 MiB; descriptor sizes (all requests): mean 24576.0 B; <=32 KiB: 128 "       \
    "(66.7%) <=128 KiB: 64 (33.3%)"
#define SUBMITS                                                                                                    \
    "SGLang submits a request's descriptors in one batch_transfer_sync; submits: one per request (sglang): "      \
    "request_path and request give all of a request's descriptors to one submit (shmb_mooncake_engine_submit_n), " \
    "each translated and copied by the system, odd ones read from 64 B before their place so that TENT merges "   \
    "none; SHM-jemalloc's request: its write path, each descriptor an object handed over within the one submit"

/* The notes of c over totals(), exactly `want` (NULL-terminated). */
static void expect(const shmb_workload_config_t *c, const shmb_workload_totals_t *t, const char *trace,
                   const char *const *want)
{
    shmb_notes_t store = {0};
    shmb_report_t r = shmb_test_fresh_report();
    size_t n = 0;
    while (want[n])
        n++;
    assert_int_equal(shmb_notes_workload(&r, &store, c, t, trace, 7, "typed"), (int)n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(r.notes[i], want[i]);
    assert_null(r.notes[n]);
}

static void test_layer(void **state)
{
    shmb_workload_config_t c = config(&toy, SHMB_WORKLOAD_LAYOUT_LAYER);
    shmb_workload_totals_t t = totals();
    const char *const want[MAX_LINES] = {
        SYNTHETIC CLOSED, TOY,
        "fan-out: block_tokens=512 granularity=layer: every block of a request's input moves whole; " CUT,
        "per request: descriptors mean 64.0, bytes mean 1.50 MiB, largest 3.00 MiB", TMPFS,
        ROWS "per descriptor" ROWS_REST, GBS, NULL};
    expect(&c, &t, NULL, want);
}

/* vllm: one TP rank's heads, a batch per descriptor; a trace's path as given. */
static void test_vllm(void **state)
{
    shmb_workload_config_t c = config(&toy, SHMB_WORKLOAD_LAYOUT_VLLM);
    c.shape.tp = 4;
    shmb_workload_totals_t t = totals();
    const char *const want[MAX_LINES] = {
        "workload: trace traces/x.jsonl: 3 requests, arrivals over 250 ms, " CLOSED, TOY,
        "fan-out: layout=vllm block_tokens=16 tp=4: a descriptor per (layer, K|V, block), one TP rank's KV heads (2 "
        "of 8); as vLLM's NIXL connector registers and reads them; every block moves whole; " CUT "; submit: vLLM "
        "posts a request's descriptors as one NIXL transfer; this replay submits each descriptor as its own batch of "
        "one (the engine model takes one per call), so request_path pays a batch's fixed costs per descriptor: an "
        "upper bound",
        "per request: descriptors mean 64.0 (min 32, max 96), " PER_REQUEST, TMPFS, ROWS "per descriptor" ROWS_REST,
        GBS, NULL};
    expect(&c, &t, "traces/x.jsonl", want);
}

/* sglang: MLA's latent, descriptors in one submit (two past MAX_PER_SUBMIT), the reuse line after. */
static void test_sglang_and_reuse(void **state)
{
    shmb_workload_config_t c = config(&mla, SHMB_WORKLOAD_LAYOUT_SGLANG);
    c.shape.reuse = 1;
    shmb_workload_totals_t t = totals();
    t.descriptors_max = 70000;
    const char *const want[MAX_LINES] = {
        SYNTHETIC CLOSED,
        "model: mla (3 layers, MLA latent 576, 1 B per element: 576 B per token per layer; made up)",
        "fan-out: layout=sglang block_tokens=512 tp=1: a descriptor per (layer, run of block_tokens contiguous "
        "tokens), MLA: the whole latent, replicated on every TP rank; as SGLang's Mooncake sender merges contiguous "
        "pages; the last run only its tokens; " CUT "; submit: " SUBMITS "; at most 65536 descriptors per submit: a "
        "request of more takes as many submits as that needs (the largest: 2)",
        "per request: descriptors mean 64.0 (min 32, max 70000), " PER_REQUEST,
        "reuse: on: 10 of 40 blocks (hash ids) hit, seen on an earlier line (25.0%); a request moves only its missed "
        "blocks (input_length - hits x 512 tokens), the figures above are of those; 1 requests wholly hit move "
        "nothing and are not replayed",
        TMPFS, ROWS "(one submit of the request's descriptors)" ROWS_REST, GBS};
    expect(&c, &t, NULL, want);
    t.descriptors_max = 65536; /* one submit takes the largest: no split */
    shmb_notes_t store = {0};
    shmb_report_t r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_workload(&r, &store, &c, &t, NULL, 7, "typed"), 8);
    const char *tail = r.notes[2] + strlen(r.notes[2]) - strlen(SUBMITS);
    assert_string_equal(tail, SUBMITS);
}

/* Open loop: the speed in the workload line, a request's service and its latency in the rows. */
static void test_open_loop(void **state)
{
    shmb_workload_config_t c = config(&toy, SHMB_WORKLOAD_LAYOUT_LAYER);
    c.open_loop = 1;
    c.speed = 8;
    shmb_workload_totals_t t = totals();
    shmb_notes_t store = {0};
    shmb_report_t r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_workload(&r, &store, &c, &t, NULL, 7, "typed"), 7);
    assert_string_equal(r.notes[0], SYNTHETIC "arrivals=trace: issued open-loop at timestamp / 8 by an issuing "
                        "thread, served in order by one worker; latency from each request's intended start (no "
                        "coordinated omission); the worker poisons dst before a request and verifies it after "
                        "(untimed, but a request already due waits for them)");
    assert_string_equal(r.notes[5], "rows: ns per request (p50, p99, p999 over requests); request: its service, one "
                        "pass of the request path calling translation and copy per descriptor (SHM-jemalloc: its "
                        "write path, each descriptor handed over), start to done; latency: done - the request's "
                        "intended start");
    assert_string_equal(r.notes[6], "GB_s = bytes of all requests / their service time; dst poisoned before each "
                        "request and every descriptor's bytes verified after it, every translation checked (untimed)");
}

/* Another backing: its note with the replay's copies; a kind without a note: the value as typed. */
static void test_backing(void **state)
{
    shmb_workload_config_t c = config(&toy, SHMB_WORKLOAD_LAYOUT_SGLANG);
    c.backing.kind = SHMB_BACKING_MEMFD;
    shmb_workload_totals_t t = totals();
    shmb_notes_t store = {0};
    shmb_report_t r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_workload(&r, &store, &c, &t, NULL, 7, "typed"), 7);
    assert_string_equal(r.notes[4], "backing: memfd (memfd_create, 4 KiB shmem pages), 4 KiB pages, each buffer "
                        "rounded up to them; src, dst: prefaulted with one guarded write per page, touched before "
                        "timing; descriptor k copies src[k*d,(k+1)*d) to dst at the same offset (sglang's request: "
                        "odd k from 64 B before)");
    c.backing.kind = SHMB_BACKING_KINDS;
    r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_workload(&r, &store, &c, &t, NULL, 7, "typed"), 7);
    assert_string_equal(r.notes[4], "backing: typed");
}

/* A store without room: -EOVERFLOW, the report and the store as they were. */
static void test_store_full(void **state)
{
    shmb_workload_config_t c = config(&toy, SHMB_WORKLOAD_LAYOUT_VLLM);
    shmb_workload_totals_t t = totals();
    shmb_notes_t store = {0};
    store.used = SHMB_NOTES_TEXT_BYTES - 10;
    shmb_report_t r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_workload(&r, &store, &c, &t, NULL, 7, "typed"), -EOVERFLOW);
    shmb_test_assert_untouched(&r);
    assert_int_equal(store.used, SHMB_NOTES_TEXT_BYTES - 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer),     cmocka_unit_test(test_vllm),    cmocka_unit_test(test_sglang_and_reuse),
        cmocka_unit_test(test_open_loop), cmocka_unit_test(test_backing), cmocka_unit_test(test_store_full),
    };
    return shmb_test_run(tests, NULL, NULL);
}
