/* The allocation benchmark's small run for the tests beside upstream code:
 * 4 and 8 KB blocks, 64 iterations of 256 operations at least, a working
 * set of 64, seed 1, one thread, the count given, names under prefix. */
#ifndef SHMB_TEST_ALLOC_FIXTURE_H
#define SHMB_TEST_ALLOC_FIXTURE_H

#include <string.h>

#include "alloc/alloc_internal.h"

static inline shmb_alloc_config_t shmb_test_alloc_small(const char *prefix)
{
    shmb_alloc_config_t c;
    memset(&c, 0, sizeof(c));
    c.num_iterations = 64;
    c.min_size_kb = 4;
    c.max_size_kb = 8;
    c.min_ops = 256;
    c.working_set = 64;
    c.count_given = 1;
    c.cleanup = 1;
    c.seed = 1;
    c.threads = 1;
    c.shm_prefix = prefix;
    return c;
}

/* A pool of `kind` (named `name`), one SHM segment by `ours` (the test's
 * count of its names), with 16 blocks of 4 KB, each inside it and
 * verified; the frees' check fails naming `left_live` while block 0 stays,
 * passes once it is freed; with `twice`, freeing it again is -ENOENT. The
 * pool is destroyed. Needs cmocka.h. */
static inline void shmb_test_pool_frees_checked(const shmb_alloc_config_t *c, shmb_alloc_kind_t kind, const char *name,
                                                int (*ours)(void), const char *left_live, int twice)
{
    const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kind);
    assert_non_null(ops);
    assert_string_equal(shmb_alloc_kind_name(kind), name);
    shmb_alloc_pool_t p = {0};
    double ns;
    enum { N = 16 };
    void *blocks[N];
    uint64_t order[N];
    char why[256] = "";
    for (uint64_t i = 0; i < N; i++)
        order[i] = N - 1 - i;
    assert_int_equal(shmb_alloc_pool_create(c, &p, ops, 4096, N, &ns), 0);
    assert_int_equal(ours(), 1);
    assert_int_equal(ops->alloc(&p, 4096, blocks, NULL, N), 0);
    for (int i = 0; i < N; i++)
        assert_true(ops->holds(&p, blocks[i], 4096));
    assert_int_equal(ops->verify(&p, blocks, NULL, N, 4096, why, sizeof(why)), 0);
    assert_int_equal(ops->free(&p, blocks, NULL, order, N - 1), 0); /* block 0 stays */
    assert_int_equal(ops->freed(&p, N, why, sizeof(why)), -EPROTO);
    assert_non_null(strstr(why, left_live));
    assert_int_equal(ops->free(&p, blocks, NULL, order + N - 1, 1), 0);
    assert_int_equal(ops->freed(&p, N, why, sizeof(why)), 0);
    if (twice)
        assert_int_equal(ops->free(&p, blocks, NULL, order, 1), -ENOENT); /* a second free */
    uint64_t none = 0;
    assert_int_equal(ops->destroy(&p, 1, &none), 0);
}

#endif
