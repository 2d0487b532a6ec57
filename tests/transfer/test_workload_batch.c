/* sglang's request in one submit (workload_batch.c), counted by --wrap wrappers (tests/CMakeLists.txt):
 * K descriptors per submit, more than MAX_PER_SUBMIT in two; a wrong destination fails the replay. */

#include "helpers.h"
#include "copier_fixture.h"
#include "workload_fixture.h"

#include "shmbench/workload.h"
#include "transfer/workload_internal.h"

#define PREFIX shmb_test_prefix()
#define MIB (1ull << 20)

int __real_shmb_mooncake_engine_submit(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *req,
                                       const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out);
int __real_shmb_mooncake_engine_submit_n(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *reqs, size_t n,
                                         const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out);
int __wrap_shmb_mooncake_engine_submit(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *req,
                                       const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out);
int __wrap_shmb_mooncake_engine_submit_n(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *reqs, size_t n,
                                         const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out);

enum { PLANT_NONE, PLANT_WRONG_TARGET, PLANT_SIDE_BY_SIDE };

static struct {
    uint64_t singles, batches, in_batches, max_n; /* submits of one, of n (their descriptors, the largest n) */
    uint64_t plant; /* a PLANT_ value */
    shmb_mooncake_request_t *last; /* the last batch as submitted */
    size_t last_n;
} seen;

int __wrap_shmb_mooncake_engine_submit(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *req,
                                       const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out)
{
    seen.singles++;
    return __real_shmb_mooncake_engine_submit(e, req, hooks, out);
}

/* Counts the batch, keeps it, and plants seen.plant: descriptor 5's target 64 on, or side-by-side sources. */
int __wrap_shmb_mooncake_engine_submit_n(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *reqs, size_t n,
                                         const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out)
{
    seen.batches++;
    seen.in_batches += n;
    seen.max_n = n > seen.max_n ? n : seen.max_n;
    shmb_mooncake_request_t *copy = realloc(seen.last, n * sizeof(*copy));
    assert_non_null(copy);
    memcpy(copy, reqs, n * sizeof(*copy));
    seen.last = copy;
    seen.last_n = n;
    if (seen.plant == PLANT_WRONG_TARGET && n > 5)
        copy[5].target_offset += 64;
    for (size_t i = 1; seen.plant == PLANT_SIDE_BY_SIDE && i < n; i++)
        copy[i].source = (char *)copy[0].source + (copy[i].target_offset - copy[0].target_offset);
    return __real_shmb_mooncake_engine_submit_n(e, copy, n, hooks, out);
}

static void count_afresh(void)
{
    seen.singles = seen.batches = seen.in_batches = seen.max_n = 0;
}

/* llama3_8b, one TP rank's heads of tp: 16-token blocks of 128 x 2 x (8 / tp) heads bytes per (layer, K|V). */
static shmb_workload_config_t config(shmb_system_t system, shmb_workload_layout_t layout, uint64_t block_tokens,
                                     uint32_t tp)
{
    return shmb_test_workload_config((shmb_workload_shape_t){shmb_workload_model_find("llama3_8b"), block_tokens,
                                                             SHMB_WORKLOAD_LAYER, 32 * MIB, layout, tp, 0},
                                     system);
}

/* One pass of the request (the open-loop's prepare and once), counted. */
static int request_once(shmb_workload_replay_t *w, shmb_workload_config_t *c, uint64_t tokens,
                        shmb_workload_fanout_t *f, char *why, size_t cap)
{
    assert_int_equal(shmb_workload_fanout(&c->shape, tokens, f), 0);
    if (shmb_workload_replay_start(w, c, f->bytes, why, cap) != 0)
        fail_msg("%s", why);
    int ret = shmb_workload_replay_prepare(w, f);
    count_afresh();
    uint64_t start, done;
    return ret == 0 ? shmb_workload_replay_once(w, f, &start, &done) : ret;
}

/* 100 tokens at TP 2: 7 blocks (the last 4 KiB, else 16 KiB) in each of 64 streams: K = 448 descriptors. */
static void test_one_submit_per_request(void **state)
{
    enum { K = 448 };
    for (int sys = 0; sys < SHMB_SYSTEMS; sys++) {
        for (int l = SHMB_WORKLOAD_LAYOUT_VLLM; l <= SHMB_WORKLOAD_LAYOUT_SGLANG; l++) {
            shmb_workload_config_t c = config((shmb_system_t)sys, (shmb_workload_layout_t)l, 16, 2);
            shmb_workload_replay_t w;
            shmb_workload_fanout_t f;
            char why[256] = "";
            if (request_once(&w, &c, 100, &f, why, sizeof(why)) != 0)
                fail_msg("%s, %s: %s", shmb_system_name(c.system), shmb_workload_layout_name(c.shape.layout), why);
            assert_int_equal(f.descriptors, K);
            /* sglang: one submit of the K, SHM-jemalloc's write paths too (its objects, not dst, hold the bytes) */
            const int batched = l == SHMB_WORKLOAD_LAYOUT_SGLANG, in_dst = sys != SHMB_SYSTEM_FLOWIPC_JEMALLOC;
            assert_int_equal(seen.batches, batched ? 1 : 0);
            assert_int_equal(seen.in_batches, batched ? K : 0);
            assert_int_equal(seen.singles, batched ? 0 : K);
            for (size_t i = 0; batched && i < seen.last_n; i++) { /* each destination holds its bytes */
                const shmb_mooncake_request_t *q = &seen.last[i];
                const uint64_t at = q->target_offset - w.r.translation.remote_addr;
                assert_int_equal(q->length, (i + 1) % 7 ? 16384 : 4096);
                if (in_dst)
                    assert_memory_equal((char *)w.r.dst.addr + at, q->source, q->length);
                if (i + 1 < seen.last_n) /* no two side by side on both sides: TENT folds none */
                    assert_true((char *)q->source + q->length != (char *)seen.last[i + 1].source);
            }
            /* all four parts: with sglang every system's request path and request submit the K at once
             * (SHM-jemalloc's request: K write paths in the one submit), with vllm each of the K alone */
            count_afresh();
            if (shmb_workload_replay_request(&w, &f) != 0)
                fail_msg("%s: %s", shmb_system_name(c.system), why);
            /* (SHM-jemalloc's checked hand-off before its request: the request's pass, as timed) */
            if (l == SHMB_WORKLOAD_LAYOUT_SGLANG)
                assert_true(seen.batches >= 1 && seen.max_n == K && seen.in_batches == K * seen.batches &&
                            seen.singles == 0);
            else
                assert_int_equal(seen.batches, 0);
            assert_int_equal(seen.singles % K, 0);
            shmb_workload_replay_stop(&w);
            assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
        }
    }
}

/* TP 8, 1-token runs, 1025 tokens: 64 x 1025 = 65600 descriptors, in two submits of 65536 and 64. */
static void test_more_than_a_submit(void **state)
{
    shmb_workload_config_t c = config(SHMB_SYSTEM_MOONCAKE, SHMB_WORKLOAD_LAYOUT_SGLANG, 1, 8);
    shmb_workload_replay_t w;
    shmb_workload_fanout_t f;
    char why[256] = "";
    if (request_once(&w, &c, 1025, &f, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_int_equal(f.descriptors, 65600);
    assert_int_equal(seen.batches, 2);
    assert_int_equal(seen.max_n, SHMB_TRANSFER_MAX_PER_SUBMIT);
    assert_int_equal(seen.in_batches, 65600);
    assert_int_equal(seen.last_n, 64);
    shmb_workload_replay_stop(&w);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* One sglang request of 100 tokens at TP 2 through sys with a fault planted: fails, why holding want. */
static void fails_once(shmb_system_t sys, uint64_t *hook, uint64_t value, const char *want, const char *also)
{
    shmb_workload_config_t c = config(sys, SHMB_WORKLOAD_LAYOUT_SGLANG, 16, 2);
    shmb_workload_replay_t w;
    shmb_workload_fanout_t f;
    char why[256] = "";
    *hook = value;
    const int ret = request_once(&w, &c, 100, &f, why, sizeof(why));
    *hook = 0;
    assert_int_equal(ret, -EPROTO);
    if (!strstr(why, want) || (also && !strstr(why, also)))
        fail_msg("%s, fault %llu: %s", shmb_system_name(sys), (unsigned long long)value, why);
    shmb_workload_replay_stop(&w);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* A wrong destination in the batch, and side-by-side sources TENT folds: each fails, naming the request. */
static void test_planted_in_the_batch(void **state)
{
    for (int sys = SHMB_SYSTEM_MOONCAKE; sys <= SHMB_SYSTEM_FLOWIPC_CLASSIC; sys++)
        for (uint64_t plant = PLANT_WRONG_TARGET; plant <= PLANT_SIDE_BY_SIDE; plant++)
            fails_once((shmb_system_t)sys, &seen.plant, plant, "request: ", "did not reach their place in dst");
}

/* SHM-jemalloc's sglang submit: a byte flipped in the third hand-off fails before timing, naming it. */
static void test_handoff_batch_checked(void **state)
{
    fails_once(SHMB_SYSTEM_FLOWIPC_JEMALLOC, &shmb_handoff_bench_wrong_byte, 3,
               "hand-off 2: the borrowed object's payload", NULL);
}

/* SHM-jemalloc at 4 descriptors per submit: 3 requests, one submit each, every hand-off verified. */
static void test_sweep_handoff_per_submit(void **state)
{
    shmb_transfer_config_t c = shmb_test_transfer_config();
    c.translate = 1;
    c.system = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    c.num_segments = 10;
    c.descriptors_per_submit = 4;
    shmb_transfer_run_t r;
    char why[256] = "";
    shmb_test_copier_up(&r, &c, 4 * 4096, 4 * 4096, why, sizeof(why));
    shmb_copy_fill_pattern(r.src.addr, 4 * 4096);
    if (shmb_transfer_handoff_writer(&r, 4096) != 0)
        fail_msg("hand-off link: %s", why);
    count_afresh();
    r.translation.check_payload = 1; /* the borrower reads every byte it got */
    shmb_transfer_bench_part(&r, SHMB_TRANSFER_REQUEST, shmb_copy_kernel(SHMB_COPY_MEMCPY), 4096, 3);
    r.translation.check_payload = 0;
    assert_int_equal(seen.batches, 3);
    assert_int_equal(seen.in_batches, 12);
    assert_int_equal(seen.max_n, 4);
    assert_int_equal(seen.singles, 0);
    assert_int_equal(r.translation.missed, 0);
    assert_int_equal(shmb_transfer_handoff_verify(&r), 0);
    assert_int_equal(shmb_transfer_handoff_close(r.translation.handoff, 0), 0);
    r.translation.handoff = NULL;
    shmb_test_copier_down(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_submit_per_request),
        cmocka_unit_test(test_more_than_a_submit),
        cmocka_unit_test(test_planted_in_the_batch),
        cmocka_unit_test(test_handoff_batch_checked),
        cmocka_unit_test(test_sweep_handoff_per_submit),
    };
    const int ret = shmb_test_run_shm("/shmb_test_wlbatch_", tests, NULL, shmb_test_remove_leftovers);
    free(seen.last);
    return ret;
}
