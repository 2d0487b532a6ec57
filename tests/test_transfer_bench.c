#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shmbench/segment.h"
#include "shmbench/transfer_bench.h"

#define PREFIX "/shmb_test_transfer_"

static int count_ours(void)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, &PREFIX[1], strlen(PREFIX) - 1) == 0;
    if (d)
        closedir(d);
    return n;
}

static shmb_transfer_config_t small(void)
{
    shmb_transfer_config_t c;
    memset(&c, 0, sizeof(c));
    c.transfer_size_kb = 4;
    c.max_transfer_size_mb = 1;
    c.num_transfers = 20;
    c.run[SHMB_COPY_MEMCPY] = 1;
    c.threads = 1;
    c.cpu = -1;
    c.time_per_size_ms = 50;
    c.timer_overhead_ns = 20;
    c.shm_prefix = PREFIX;
    return c;
}

static void test_sizes(void **state)
{
    (void)state;
    uint64_t s[SHMB_TRANSFER_MAX_SIZES];
    shmb_transfer_config_t c = small();
    assert_int_equal(shmb_transfer_bench_sizes(&c, s, SHMB_TRANSFER_MAX_SIZES), 9);
    assert_true(s[0] == 4096 && s[8] == 1048576);
    c.transfer_size_kb = 1024;
    assert_int_equal(shmb_transfer_bench_sizes(&c, s, SHMB_TRANSFER_MAX_SIZES), 1);
    c.transfer_size_kb = 3;
    assert_int_equal(shmb_transfer_bench_sizes(&c, s, SHMB_TRANSFER_MAX_SIZES), 10);
    assert_true(s[8] == 768 * 1024 && s[9] == 1048576); /* the maximum is added */
    c.transfer_size_kb = 1025;
    assert_int_equal(shmb_transfer_bench_sizes(&c, s, SHMB_TRANSFER_MAX_SIZES), -EINVAL);
    c.transfer_size_kb = 0;
    assert_int_equal(shmb_transfer_bench_sizes(&c, s, SHMB_TRANSFER_MAX_SIZES), -EINVAL);
    uint64_t bytes;
    c = small();
    assert_int_equal(shmb_transfer_bench_shm_bytes(&c, &bytes), 0);
    assert_true(bytes == 2u << 20);
    c.cold = 1;
    assert_int_equal(shmb_transfer_bench_shm_bytes(&c, &bytes), 0);
    assert_true(bytes == 3u << 20);
}

static void test_rows_and_cleanup(void **state)
{
    (void)state;
    shmb_transfer_config_t c = small();
    c.run[SHMB_COPY_LOOP] = 1;
    c.cold = 1;
    c.verify = 1;
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 9 * 4); /* 9 sizes x 2 methods x hot, cold */
    const shmb_row_t *r = shmb_rows_find(&rows, "memcpy", "", 1024, 0);
    assert_non_null(r);
    assert_true(r->iterations >= 20);
    assert_float_equal(r->bytes_per_second, 1048576.0 * 1e9 / r->ns.mean, 1e-3);
    assert_float_equal(r->speedup, 1.0, 1e-12);
    const shmb_row_t *loop = shmb_rows_find(&rows, "loop", "", 4, 0);
    const shmb_row_t *memcpy_row = shmb_rows_find(&rows, "memcpy", "", 4, 0);
    assert_float_equal(loop->speedup, loop->bytes_per_second / memcpy_row->bytes_per_second, 1e-9);
    const shmb_row_t *cold = shmb_rows_find(&rows, "memcpy", "cold", 4, 0);
    assert_non_null(cold);
    assert_true(cold->iterations >= 1 && cold->iterations <= 20);
    assert_int_equal(count_ours(), 0);
    assert_int_equal(shmb_segment_registered(), 0);
    shmb_rows_free(&rows);
}

static void test_threads(void **state)
{
    (void)state;
    shmb_transfer_config_t c = small();
    c.threads = 2;
    c.max_transfer_size_mb = 2;
    c.transfer_size_kb = 2048;
    c.verify = 1;
    shmb_rows_t rows = {0};
    char why[256];
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.v[0].threads, 2);
    shmb_rows_free(&rows);
}

/* Each transfer through a system's translation: same rows, a verified copy,
 * the translation's cost and share in the note. */
static void test_translated(void **state)
{
    (void)state;
    for (int s = 0; s < SHMB_LOOKUP_SYSTEMS; s++) {
        shmb_transfer_config_t c = small();
        c.translate = 1;
        c.system = (shmb_lookup_system_t)s;
        c.num_segments = 100;
        c.verify = 1;
        shmb_rows_t rows = {0};
        char why[256] = "";
        assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), 0);
        assert_int_equal(rows.n, 9); /* 4 KB .. 1 MB */
        for (size_t i = 0; i < rows.n; i++) {
            double ns = 0, share = 0;
            assert_int_equal(sscanf(rows.v[i].note, "translate %lf ns = %lf%%", &ns, &share), 2);
            assert_true(ns > 0 && share > 0);
            /* both printed to 3 significant digits */
            assert_float_equal(share, 100 * ns / rows.v[i].ns.p50, share * 0.01);
        }
        /* the share of the translation falls as the copy grows (1 MB copies 256x more than 4 KB) */
        double first = 0, last = 0, ns = 0;
        sscanf(rows.v[0].note, "translate %lf ns = %lf%%", &ns, &first);
        sscanf(rows.v[rows.n - 1].note, "translate %lf ns = %lf%%", &ns, &last);
        assert_true(last < first);
        shmb_rows_free(&rows);
        assert_int_equal(count_ours(), 0);
    }
    shmb_transfer_config_t c = small();
    c.translate = 1;
    c.num_segments = 10;
    c.cold = 1; /* a fresh segment is no registered buffer */
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    c.cold = 0;
    c.num_segments = 0;
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    assert_int_equal(rows.n, 0);
}

static void test_bad_config(void **state)
{
    (void)state;
    shmb_rows_t rows = {0};
    char why[256];
    shmb_transfer_config_t c = small();
    c.num_transfers = 0;
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    c = small();
    c.threads = 0;
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    c = small();
    c.transfer_size_kb = 2048;
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), -EINVAL);
    assert_int_equal(rows.n, 0);
    assert_int_equal(count_ours(), 0);
}

int main(void)
{
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "skip: /dev/shm is not writable\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_rows_and_cleanup),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_translated),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
