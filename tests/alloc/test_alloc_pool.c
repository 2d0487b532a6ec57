/* alloc_pool: the contract of every entry of the pool table
 * (src/alloc/alloc_internal.h), checked entry by entry, so that a new allocator
 * is tested by being in the table. The rows built on it are test_alloc_bench's. */

#include "helpers.h"

#include "alloc/alloc_internal.h"
#include "models/fipc_internal.h"
#include "shmbench/alloc_peer.h"
#include "shmbench/segment.h"

#define PREFIX "/shmb_test_pool_"
#define BLOCKS 64
#define BYTES 4096
#define HANDLE_MAX 64 /* bytes of a block's handle, at most */

static void test_table(void **state)
{
    assert_null(shmb_alloc_pool_ops(SHMB_ALLOC_POSIX));
    assert_null(shmb_alloc_pool_ops(SHMB_ALLOC_KINDS));
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        assert_non_null(ops);
        assert_int_equal(ops->kind, k);
        assert_true(ops->shm_bytes && ops->create && ops->destroy && ops->alloc && ops->free && ops->empty &&
                    ops->holds);
        assert_true((ops->lend == NULL) == (ops->handle == NULL)); /* lends with handles, or not at all */
        assert_true(ops->shm_bytes(BYTES, BLOCKS) >= (uint64_t)BYTES * BLOCKS);
        assert_true(ops->shm_bytes(BYTES, 2 * BLOCKS) > ops->shm_bytes(BYTES, BLOCKS));
        assert_true(ops->handle_bytes <= HANDLE_MAX);
    }
    /* the arena is the bound of a pool that shares nothing: one per thread, one process */
    const shmb_alloc_pool_ops_t *arena = shmb_alloc_pool_ops(SHMB_ALLOC_ARENA);
    assert_true(arena->per_thread && !arena->lend);
    /* offset: Mooncake's allocator, one shared by every thread; its receiver opens the buffer (posix) */
    const shmb_alloc_pool_ops_t *offset = shmb_alloc_pool_ops(SHMB_ALLOC_OFFSET);
    assert_true(!offset->per_thread && !offset->lend && offset->verify);
    assert_true(offset->shm_bytes(BYTES, BLOCKS) == (uint64_t)BYTES * BLOCKS); /* 4 KB is its own bin */
    assert_true(shmb_alloc_pool_ops(SHMB_ALLOC_BIPC)->peer_kind == SHMB_ALLOC_PEER_CLASSIC);
    assert_true(shmb_alloc_pool_ops(SHMB_ALLOC_JEMALLOC)->peer_kind == SHMB_ALLOC_PEER_JEMALLOC);
}

/* Alloc, free in an order, alloc again into the holes, empty, alloc again:
 * every block inside the pool, none overlapping; destroyed, nothing stays. */
static void test_each_pool(void **state)
{
    static unsigned char not_shm[BYTES * 2];
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        const char *name = shmb_alloc_kind_name((shmb_alloc_kind_t)k);
        shmb_alloc_pool_t pool = {.ops = ops};
        shmb_alloc_pool_t *pools[] = {&pool};
        assert_int_equal(ops->create(&pool, PREFIX, (size_t)ops->shm_bytes(BYTES, BLOCKS)), 0);
        if (ops->thread_start)
            assert_int_equal(ops->thread_start(&pool, BYTES), 0);
        void *blocks[BLOCKS];
        static unsigned char handles[BLOCKS * HANDLE_MAX];
        memset(handles, 0, sizeof(handles));
        uint64_t order[BLOCKS];
        for (uint64_t i = 0; i < BLOCKS; i++)
            order[i] = (i * 37) % BLOCKS; /* a permutation: 37 is prime to 64 */
        char why[256] = "";
        for (int pass = 0; pass < 3; pass++) {
            assert_int_equal(ops->alloc(&pool, BYTES, blocks, handles, BLOCKS), 0);
            for (int i = 0; i < BLOCKS; i++)
                assert_true(ops->holds(&pool, blocks[i], BYTES));
            assert_int_equal(
                shmb_alloc_pool_verify(pools, BLOCKS, blocks, handles, BLOCKS, BYTES, "alloc", why, sizeof(why)), 0);
            if (pass == 0)
                assert_int_equal(ops->free(&pool, blocks, handles, order, BLOCKS), 0);
            else
                assert_int_equal(ops->empty(&pool, blocks, handles, order, BLOCKS), 0);
            if (ops->freed) /* each block freed once, none live */
                assert_int_equal(ops->freed(&pool, BLOCKS, why, sizeof(why)), 0);
        }
        /* the check names the allocator and the pass of a wrong block */
        assert_false(ops->holds(&pool, not_shm, BYTES));
        assert_int_equal(ops->alloc(&pool, BYTES, blocks, handles, BLOCKS), 0);
        void *kept = blocks[7];
        blocks[7] = not_shm;
        assert_int_equal(
            shmb_alloc_pool_verify(pools, BLOCKS, blocks, handles, BLOCKS, BYTES, "alloc", why, sizeof(why)), -EPROTO);
        assert_non_null(strstr(why, "outside its SHM"));
        assert_non_null(strstr(why, name));
        blocks[7] = blocks[9]; /* an allocator that hands out an overlapping block */
        assert_int_equal(
            shmb_alloc_pool_verify(pools, BLOCKS, blocks, handles, BLOCKS, BYTES, "alloc_reuse", why, sizeof(why)),
            -EPROTO);
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
        assert_int_equal(ops->empty(&pool, blocks, handles, order, BLOCKS), 0);
        uint64_t left = 0;
        assert_int_equal(ops->destroy(&pool, 1, &left), 0);
        assert_true(left == 0);
        assert_int_equal(shmb_segment_registered(), 0);
    }
}

/* The layers with a handle per block: a block that is not its handle's object, a handle construct did
 * not make, a drop whose deleter never runs or whose free counts twice each fail their check. */
static void test_handles_and_frees(void **state)
{
    int objects = 0;
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        if (!ops->handle_bytes)
            continue;
        const int object = k != SHMB_ALLOC_OFFSET_BARE;
        objects += object;
        shmb_alloc_pool_t pool = {.ops = ops};
        shmb_alloc_pool_t *pools[] = {&pool};
        assert_int_equal(ops->create(&pool, PREFIX, (size_t)ops->shm_bytes(BYTES, BLOCKS)), 0);
        void *blocks[BLOCKS];
        static unsigned char handles[BLOCKS * HANDLE_MAX];
        memset(handles, 0, sizeof(handles));
        uint64_t order[BLOCKS];
        for (uint64_t i = 0; i < BLOCKS; i++)
            order[i] = i;
        char why[256] = "";
        assert_int_equal(ops->alloc(&pool, BYTES, blocks, handles, BLOCKS), 0);
        void *kept = blocks[3];
        blocks[3] = blocks[4]; /* swapped: each inside, none overlapping, but not its handle's */
        blocks[4] = kept;
        assert_int_equal(
            shmb_alloc_pool_verify(pools, BLOCKS, blocks, handles, BLOCKS, BYTES, "alloc", why, sizeof(why)), -EPROTO);
        assert_non_null(strstr(why, "handle"));
        blocks[4] = blocks[3];
        blocks[3] = kept;
        assert_int_equal(ops->empty(&pool, blocks, handles, order, BLOCKS), 0);
        if (object) {
            assert_int_equal(ops->freed(&pool, BLOCKS, why, sizeof(why)), 0);
            /* a deleter that never runs: every drop keeps a copy of its handle */
            shmb_fipc_object_fault = SHMB_FIPC_OBJECT_FAULT_KEEP;
            assert_int_equal(ops->alloc(&pool, BYTES, blocks, handles, BLOCKS), 0);
            assert_int_equal(ops->free(&pool, blocks, handles, order, BLOCKS), 0);
            shmb_fipc_object_fault = SHMB_FIPC_OBJECT_FAULT_NONE;
            assert_int_equal(ops->freed(&pool, BLOCKS, why, sizeof(why)), -EPROTO);
            assert_non_null(strstr(why, "0 freed"));
            /* a free counted twice (as a second free would be) */
            uint64_t left = 0;
            assert_int_equal(ops->destroy(&pool, 1, &left), 0); /* the kept copies' deleters run */
            assert_int_equal(ops->create(&pool, PREFIX, (size_t)ops->shm_bytes(BYTES, BLOCKS)), 0);
            assert_int_equal(ops->alloc(&pool, BYTES, blocks, handles, BLOCKS), 0);
            shmb_fipc_object_fault = SHMB_FIPC_OBJECT_FAULT_TWICE;
            assert_int_equal(ops->free(&pool, blocks, handles, order, BLOCKS), 0);
            shmb_fipc_object_fault = SHMB_FIPC_OBJECT_FAULT_NONE;
            assert_int_equal(ops->freed(&pool, BLOCKS, why, sizeof(why)), -EPROTO);
            assert_non_null(strstr(why, "128 freed"));
        } else {
            assert_int_equal(ops->freed(&pool, BLOCKS, why, sizeof(why)), 0);
            assert_int_equal(ops->alloc(&pool, BYTES, blocks, handles, 1), 0); /* one left live */
            assert_int_equal(ops->freed(&pool, 0, why, sizeof(why)), -EPROTO);
            assert_int_equal(ops->empty(&pool, blocks, handles, order, 1), 0);
        }
        uint64_t left = 0;
        assert_int_equal(ops->destroy(&pool, 1, &left), 0);
        assert_int_equal(shmb_segment_registered(), 0);
    }
    assert_int_equal(objects, 2);
}

/* A pool with a check of its own (offset: shmb_offset_verify) catches what
 * the driver's cannot: a freed block still listed (inside the SHM, not
 * overlapping), and a live block left out of the list. */
static void test_own_verify(void **state)
{
    int checked = 0;
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        if (!ops->verify || ops->handle_bytes) /* those: test_handles_and_frees */
            continue;
        checked++;
        shmb_alloc_pool_t pool = {.ops = ops};
        shmb_alloc_pool_t *pools[] = {&pool};
        assert_int_equal(ops->create(&pool, PREFIX, (size_t)ops->shm_bytes(BYTES, BLOCKS)), 0);
        void *blocks[BLOCKS];
        uint64_t order[BLOCKS], seventh = 7;
        for (uint64_t i = 0; i < BLOCKS; i++)
            order[i] = i;
        char why[256] = "";
        assert_int_equal(ops->alloc(&pool, BYTES, blocks, NULL, BLOCKS), 0);
        assert_int_equal(ops->verify(&pool, blocks, NULL, BLOCKS, BYTES, why, sizeof(why)), 0);
        assert_int_equal(ops->free(&pool, blocks, NULL, &seventh, 1), 0); /* blocks[7] freed, still listed */
        assert_int_equal(ops->freed(&pool, 1, why, sizeof(why)), -EPROTO); /* 63 still live */
        assert_int_equal(
            shmb_alloc_pool_verify(pools, BLOCKS, blocks, NULL, BLOCKS, BYTES, "alloc", why, sizeof(why)), -EPROTO);
        assert_non_null(strstr(why, "not a live block"));
        assert_int_equal(ops->free(&pool, blocks, NULL, &seventh, 1), -EINVAL); /* nor can it be freed twice */
        assert_int_equal(ops->alloc(&pool, BYTES, &blocks[7], NULL, 1), 0);
        why[0] = '\0';
        assert_int_equal(
            shmb_alloc_pool_verify(pools, BLOCKS, blocks, NULL, BLOCKS - 1, BYTES, "alloc", why, sizeof(why)),
            -EPROTO); /* the last block live but left out: the allocator counts one more */
        assert_non_null(strstr(why, "the allocator counts"));
        assert_int_equal(ops->empty(&pool, blocks, NULL, order, BLOCKS), 0);
        assert_int_equal(ops->freed(&pool, BLOCKS, why, sizeof(why)), 0);
        uint64_t left = 0;
        assert_int_equal(ops->destroy(&pool, 1, &left), 0);
        assert_int_equal(shmb_segment_registered(), 0);
    }
    assert_true(checked >= 1); /* offset has one */
    assert_non_null(shmb_alloc_pool_ops(SHMB_ALLOC_OFFSET)->verify);
}

/* A failed run leaves blocks live: destroy gives them back and unlinks. */
static void test_destroy_with_live_blocks(void **state)
{
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        shmb_alloc_pool_t pool = {.ops = ops};
        void *blocks[BLOCKS];
        static unsigned char handles[BLOCKS * HANDLE_MAX];
        memset(handles, 0, sizeof(handles));
        assert_int_equal(ops->create(&pool, PREFIX, (size_t)ops->shm_bytes(BYTES, BLOCKS)), 0);
        assert_int_equal(ops->alloc(&pool, BYTES, blocks, handles, BLOCKS / 2), 0);
        uint64_t left = 0;
        assert_int_equal(ops->destroy(&pool, 1, &left), 0);
        assert_true(left == 0);
        assert_int_equal(shmb_segment_registered(), 0);
    }
}

/* A pool that cannot be created (a prefix without its slash) leaves nothing. */
static void test_create_fails_cleanly(void **state)
{
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops((shmb_alloc_kind_t)k);
        shmb_alloc_pool_t pool = {.ops = ops};
        void *block;
        unsigned char handle[HANDLE_MAX] = {0};
        int ret = ops->create(&pool, "no_slash", (size_t)ops->shm_bytes(BYTES, BLOCKS));
        if (ret == 0) { /* jemalloc makes its pools on the first allocation */
            ret = ops->alloc(&pool, BYTES, &block, handle, 1);
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
    shmb_segment_unlink_all();
    return 0;
}

int main(void)
{
    if (!shmb_test_shm_writable())
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test_teardown(test_each_pool, unlink_left),
        cmocka_unit_test_teardown(test_create_fails_cleanly, unlink_left),
        cmocka_unit_test_teardown(test_own_verify, unlink_left),
        cmocka_unit_test_teardown(test_handles_and_frees, unlink_left),
        cmocka_unit_test_teardown(test_destroy_with_live_blocks, unlink_left),
    };
    return shmb_test_run(tests, NULL, NULL);
}
