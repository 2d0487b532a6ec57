/* Descriptors per submit: request and request_path submit N descriptors in one batch, each into its
 * own place in dst, rows per descriptor named per_submit; refused where it does not apply. */

#include "helpers.h"
#include "copier_fixture.h"

#include "shmbench/copy.h"
#include "shmbench/segment.h"
#include "transfer/transfer_internal.h"

#define PREFIX shmb_test_prefix()
#define N 8

static shmb_transfer_config_t small(shmb_system_t system, uint64_t per)
{
    shmb_transfer_config_t c = shmb_test_transfer_config();
    c.translate = 1;
    c.system = system;
    c.num_segments = 10;
    c.descriptors_per_submit = per;
    return c;
}

/* A request of N descriptors fills exactly N places, every system; request_path copies nothing. */
static void test_request_fills_n(void **state)
{
    char why[256] = "";
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        shmb_transfer_config_t c = small((shmb_system_t)s, N);
        shmb_transfer_run_t r;
        shmb_test_copier_up(&r, &c, 65536, 65536, why, sizeof(why));
        shmb_copy_fill_pattern(r.src.addr, 65536);
        assert_int_equal(shmb_transfer_descriptors(&c, SHMB_TRANSFER_REQUEST), N);
        assert_int_equal(shmb_transfer_descriptors(&c, SHMB_TRANSFER_REQUEST_PATH), N);
        assert_int_equal(shmb_transfer_descriptors(&c, SHMB_TRANSFER_TRANSLATE), 1);
        assert_int_equal(shmb_transfer_descriptors(&c, SHMB_TRANSFER_COPY), 1);
        uint64_t done = 0;
        unsigned char *dst = r.dst.addr;
        memset(dst, SHMB_TRANSFER_POISON, 65536);
        assert_int_equal(shmb_transfer_bench_copy(&r, SHMB_TRANSFER_REQUEST_PATH, SHMB_COPY_MEMCPY, 4096, 0, &done), 0);
        assert_int_equal(dst[0], SHMB_TRANSFER_POISON);
        assert_int_equal(shmb_transfer_bench_copy(&r, SHMB_TRANSFER_REQUEST, SHMB_COPY_MEMCPY, 4096, 0, &done), 0);
        assert_int_equal(r.translation.missed, 0);
        assert_int_equal(shmb_transfer_verify_descriptors(&r, SHMB_TRANSFER_REQUEST, SHMB_COPY_MEMCPY, 4096, "t"), 0);
        assert_int_equal(dst[N * 4096], SHMB_TRANSFER_POISON);
        assert_int_equal(dst[N * 4096 + 4095], SHMB_TRANSFER_POISON);
        dst[3 * 4096 + 7] ^= 1; /* a descriptor's destination wrong: seen */
        assert_int_equal(shmb_transfer_verify_descriptors(&r, SHMB_TRANSFER_REQUEST, SHMB_COPY_MEMCPY, 4096, "t"),
                         -EPROTO);
        /* dst's registration said to start a page further: every submit counts one miss */
        r.translation.buffer_addr += 4096;
        assert_int_equal(shmb_transfer_bench_copy(&r, SHMB_TRANSFER_REQUEST, SHMB_COPY_MEMCPY, 4096, 0, &done), 0);
        assert_int_equal(r.translation.missed, 1);
        shmb_test_copier_down(&r);
    }
}

/* --system and paired runs: request rows named per_submit:N, operations a multiple of N; all verified. */
static void test_rows_per_descriptor(void **state)
{
    char why[256] = "";
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        shmb_transfer_config_t c = small((shmb_system_t)s, N);
        c.verify = 1;
        shmb_rows_t rows = {0};
        if (shmb_transfer_bench_run(&c, &rows, why, sizeof(why)) != 0)
            fail_msg("%s: %s", shmb_system_name(c.system), why);
        static const char *const want[] = {"shm_transfer/request_path/size_kb:4/per_submit:8",
                                           "shm_transfer/translate/size_kb:4", "shm_transfer/memcpy/size_kb:4",
                                           "shm_transfer/request/size_kb:4/per_submit:8"};
        for (size_t i = 0; i < 4; i++) {
            shmb_test_assert_row_name("shm_transfer", &rows.v[i], want[i]);
            assert_true(rows.v[i].iterations > 0 && rows.v[i].ns.p50 > 0);
            if (i == 0 || i == 3)
                assert_int_equal(rows.v[i].iterations % N, 0);
        }
        shmb_rows_free(&rows);
    }
    shmb_transfer_config_t c = small(SHMB_SYSTEM_MOONCAKE, N);
    c.translate = 0;
    c.verify = 1;
    shmb_test_transfer_pair(&c, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 5 + 5 + 1 + 5);
    shmb_test_assert_row_name("shm_transfer", &rows.v[0],
                              "shm_transfer/request_path/size_kb:4/per_submit:8/system:mooncake");
    shmb_test_assert_row_name("shm_transfer", &rows.v[14],
                              "shm_transfer/request/size_kb:4/per_submit:8/system:flowipc_classic/vs:mooncake");
    shmb_test_assert_row_name("shm_transfer", &rows.v[5], "shm_transfer/translate/size_kb:4/system:mooncake");
    for (size_t i = 11; i < 14; i++)
        assert_int_equal(rows.v[i].iterations % N, 0);
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* Refused: no system, a peer, zero_copy, above the cap, size x N above MAX_KB; 1 and 0 are one descriptor. */
static void test_refused(void **state)
{
    shmb_peer_t never_started;
    memset(&never_started, 0, sizeof(never_started));
    shmb_transfer_config_t bad[5];
    for (int k = 0; k < 5; k++)
        bad[k] = small(SHMB_SYSTEM_MOONCAKE, N);
    bad[0].translate = 0;
    bad[1].peer = &never_started;
    bad[2].translate = 0;
    bad[2].nsystems = 2;
    bad[2].zero_copy = 1;
    bad[3].descriptors_per_submit = SHMB_TRANSFER_MAX_PER_SUBMIT + 1;
    bad[4].max_transfer_size_kb = SHMB_TRANSFER_MAX_KB / 4;
    for (int k = 0; k < 5; k++)
        assert_int_equal(shmb_transfer_bench_config_check(&bad[k]), -EINVAL);
    shmb_transfer_config_t one = small(SHMB_SYSTEM_MOONCAKE, 1);
    assert_int_equal(shmb_transfer_bench_config_check(&one), 0);
    assert_int_equal(shmb_transfer_descriptors(&one, SHMB_TRANSFER_REQUEST), 1);
    one.translate = 0;
    one.descriptors_per_submit = 0;
    assert_int_equal(shmb_transfer_bench_config_check(&one), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_fills_n),
        cmocka_unit_test(test_rows_per_descriptor),
        cmocka_unit_test(test_refused),
    };
    return shmb_test_run_shm("/shmb_test_submit_", tests, NULL, NULL);
}
