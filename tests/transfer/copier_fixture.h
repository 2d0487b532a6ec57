/* The transfer tests' copier over real segments: what the side that copies
 * holds (transfer_internal.h), set up and taken down with every step
 * asserted. Include after helpers.h. */
#ifndef SHMB_TEST_COPIER_FIXTURE_H
#define SHMB_TEST_COPIER_FIXTURE_H

#include "transfer/transfer_internal.h"

/* A copier over fresh src and dst of these sizes (mapped, not filled),
 * named from the test's prefix. */
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

#endif
