/* alloc_pool: the contract of every entry of the pool table
 * (src/alloc_internal.h), checked entry by entry, so that a new allocator
 * is tested by being in the table. The rows built on it are test_alloc_bench's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

#include "alloc_internal.h"
#include "shmbench/alloc_peer.h"
#include "shmbench/segment.h"

#define PREFIX "/shmb_test_pool_"
#define BLOCKS 64
#define BYTES 4096

static void test_table(void **state)
{
    (void)state;
    assert_null(shmb_alloc_pool_ops(SHMB_ALLOC_POSIX));
    assert_null(shmb_alloc_pool_ops(SHMB_ALLOC_KINDS));
    for (int k = SHMB_ALLOC_ARENA; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        assert_non_null(ops);
        assert_int_equal(ops->kind, k);
        assert_true(ops->shm_bytes && ops->create && ops->destroy && ops->alloc && ops->free && ops->empty &&
                    ops->holds);
        assert_true((ops->lend == NULL) == (ops->handle == NULL)); /* lends with handles, or not at all */
        assert_true(ops->shm_bytes(BYTES, BLOCKS) >= (uint64_t)BYTES * BLOCKS);
        assert_true(ops->shm_bytes(BYTES, 2 * BLOCKS) > ops->shm_bytes(BYTES, BLOCKS));
    }
    /* the arena is the bound of a pool that shares nothing: one per thread, one process */
    const shmb_alloc_pool_ops_t *arena = shmb_alloc_pool_ops(SHMB_ALLOC_ARENA);
    assert_true(arena->per_thread && !arena->lend);
    assert_true(shmb_alloc_pool_ops(SHMB_ALLOC_BIPC)->peer_kind == SHMB_ALLOC_PEER_CLASSIC);
    assert_true(shmb_alloc_pool_ops(SHMB_ALLOC_JEMALLOC)->peer_kind == SHMB_ALLOC_PEER_JEMALLOC);
}

/* Alloc, free in an order, alloc again into the holes, empty, alloc again:
 * every block inside the pool, none overlapping; destroyed, nothing stays. */
static void test_each_pool(void **state)
{
    (void)state;
    static unsigned char not_shm[BYTES * 2];
    for (int k = SHMB_ALLOC_ARENA; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        const char *name = shmb_alloc_kind_name((shmb_alloc_kind_t)k);
        shmb_alloc_pool_t pool = {.ops = ops};
        shmb_alloc_pool_t *pools[] = {&pool};
        assert_int_equal(ops->create(&pool, PREFIX, (size_t)ops->shm_bytes(BYTES, BLOCKS)), 0);
        if (ops->thread_start)
            assert_int_equal(ops->thread_start(&pool, BYTES), 0);
        void *blocks[BLOCKS];
        uint64_t order[BLOCKS];
        for (uint64_t i = 0; i < BLOCKS; i++)
            order[i] = (i * 37) % BLOCKS; /* a permutation: 37 is prime to 64 */
        char why[256] = "";
        for (int pass = 0; pass < 3; pass++) {
            assert_int_equal(ops->alloc(&pool, BYTES, blocks, BLOCKS), 0);
            for (int i = 0; i < BLOCKS; i++)
                assert_true(ops->holds(&pool, blocks[i], BYTES));
            assert_int_equal(shmb_alloc_pool_verify(pools, BLOCKS, blocks, BLOCKS, BYTES, "alloc", why, sizeof(why)),
                             0);
            if (pass == 0)
                assert_int_equal(ops->free(&pool, blocks, order, BLOCKS), 0);
            else
                assert_int_equal(ops->empty(&pool, blocks, order, BLOCKS), 0);
        }
        /* the check names the allocator and the pass of a wrong block */
        assert_false(ops->holds(&pool, not_shm, BYTES));
        assert_int_equal(ops->alloc(&pool, BYTES, blocks, BLOCKS), 0);
        void *kept = blocks[7];
        blocks[7] = not_shm;
        assert_int_equal(shmb_alloc_pool_verify(pools, BLOCKS, blocks, BLOCKS, BYTES, "alloc", why, sizeof(why)),
                         -EPROTO);
        assert_non_null(strstr(why, "outside its SHM"));
        assert_non_null(strstr(why, name));
        blocks[7] = blocks[9];
        assert_int_equal(
            shmb_alloc_pool_verify(pools, BLOCKS, blocks, BLOCKS, BYTES, "alloc_reuse", why, sizeof(why)), -EPROTO);
        assert_non_null(strstr(why, "overlap"));
        assert_non_null(strstr(why, "alloc_reuse"));
        blocks[7] = kept;
        if (ops->lend) {
            shmb_fipc_pool_t *list = NULL;
            size_t n = 0;
            assert_int_equal(ops->lend(&pool, &list, &n), 0);
            assert_true(n >= 1 && list[0].name[0] == '/' && list[0].bytes > 0);
            free(list);
            shmb_lookup_request_t h;
            assert_int_equal(ops->handle(&pool, blocks[3], BYTES, &h), 0);
            assert_true(h.len == BYTES);
        }
        assert_int_equal(ops->empty(&pool, blocks, order, BLOCKS), 0);
        uint64_t left = 0;
        assert_int_equal(ops->destroy(&pool, 1, &left), 0);
        assert_true(left == 0);
        assert_int_equal(shmb_segment_registered(), 0);
    }
}

/* A pool that cannot be created (a prefix without its slash) leaves nothing. */
static void test_create_fails_cleanly(void **state)
{
    (void)state;
    for (int k = SHMB_ALLOC_ARENA; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        shmb_alloc_pool_t pool = {.ops = ops};
        void *block;
        int ret = ops->create(&pool, "no_slash", (size_t)ops->shm_bytes(BYTES, BLOCKS));
        if (ret == 0) { /* jemalloc makes its pools on the first allocation */
            ret = ops->alloc(&pool, BYTES, &block, 1);
            uint64_t left = 0;
            ops->destroy(&pool, 1, &left);
        }
        assert_true(ret < 0);
        assert_int_equal(shmb_segment_registered(), 0);
    }
}

/* A failed assertion jumps over the destroy: its pool is unlinked here. */
static int unlink_left(void **state)
{
    (void)state;
    shmb_segment_unlink_all();
    return 0;
}

int main(void)
{
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "skip: /dev/shm is not writable\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test_teardown(test_each_pool, unlink_left),
        cmocka_unit_test_teardown(test_create_fails_cleanly, unlink_left),
    };
    return shmb_test_run(tests, NULL, NULL);
}
