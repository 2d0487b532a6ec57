/* The transfer tests' copier over real segments (transfer_internal.h), every step asserted; after helpers.h. */
#ifndef SHMB_TEST_COPIER_FIXTURE_H
#define SHMB_TEST_COPIER_FIXTURE_H

#include "transfer/transfer_internal.h"

/* A run of 20 memcpy transfers of 4 KB on one thread, 20 ms per size, named from the test's prefix. */
static inline shmb_transfer_config_t shmb_test_transfer_config(void)
{
    shmb_transfer_config_t c;
    memset(&c, 0, sizeof(c));
    c.transfer_size_kb = c.max_transfer_size_kb = 4;
    c.num_transfers = 20;
    c.run[SHMB_COPY_MEMCPY] = 1;
    c.threads = 1;
    c.cpu = -1;
    c.time_per_size_ms = 20;
    c.timer_overhead_ns = 20;
    c.shm_prefix = shmb_test_prefix();
    return c;
}

/* A paired run of mooncake, `other` and mooncake's control (--systems=mooncake,OTHER). */
static inline void shmb_test_transfer_pair(shmb_transfer_config_t *c, shmb_system_t other)
{
    c->nsystems = 3;
    c->systems[0] = c->systems[2] = SHMB_SYSTEM_MOONCAKE;
    c->systems[1] = other;
}

/* A copier over fresh src and dst of these sizes (mapped, not filled), named from the test's prefix. */
static inline void shmb_test_copier_up(shmb_transfer_run_t *r, const shmb_transfer_config_t *c, size_t src_bytes,
                                       size_t dst_bytes, char *why, size_t cap)
{
    shmb_transfer_bench_run_init(r, c, why, cap);
    assert_int_equal(shmb_segment_create(&r->src, shmb_test_prefix(), src_bytes, NULL, NULL), 0);
    assert_int_equal(shmb_segment_create(&r->dst, shmb_test_prefix(), dst_bytes, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(&r->src, NULL), 0);
    assert_int_equal(shmb_segment_map(&r->dst, NULL), 0);
    assert_int_equal(shmb_transfer_bench_copier_start(r), 0);
}

/* The copier stopped, its segments destroyed: nothing of the test's left. */
static inline void shmb_test_copier_down(shmb_transfer_run_t *r)
{
    shmb_transfer_bench_copier_stop(r);
    assert_int_equal(shmb_segment_destroy(&r->dst, NULL), 0);
    assert_int_equal(shmb_segment_destroy(&r->src, NULL), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* The rows of a run of c that must succeed (else the case fails naming why). */
static inline shmb_rows_t shmb_test_transfer_rows(const shmb_transfer_config_t *c)
{
    shmb_rows_t rows = {0};
    char why[256] = "";
    const int ret = shmb_transfer_bench_run(c, &rows, why, sizeof(why));
    if (ret != 0)
        fail_msg("run: %d: %s", ret, why);
    return rows;
}

/* A run of c that must fail with want, no row made. */
static inline void shmb_test_transfer_refused(const shmb_transfer_config_t *c, int want)
{
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_transfer_bench_run(c, &rows, why, sizeof(why)), want);
    assert_int_equal(rows.n, 0);
}

#endif
