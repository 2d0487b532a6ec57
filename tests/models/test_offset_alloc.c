/* The OffsetBufferAllocator model over PROT_NONE ranges and a real SHM
 * segment, from placement and merging to planted faults and two threads. */
#include <pthread.h>

#include "helpers.h"

#include "models/offset_alloc_internal.h"
#include "shmbench/offset_alloc.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"

static const char *prefix; /* "/shmb_test_offset_<pid>_" (helpers.h) */

/* A PROT_NONE range: the MMU checks the allocator's promise to keep its metadata out of the segment. */
static void *untouchable(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(p != MAP_FAILED);
    return p;
}

static shmb_offset_t *make(void *base, size_t bytes, uint32_t max_nodes)
{
    shmb_offset_t *a = NULL;
    assert_int_equal(shmb_offset_create(base, bytes, max_nodes, &a), 0);
    assert_non_null(a);
    return a;
}

/* An allocator over a fresh untouchable range of `bytes`, its base in *base. */
static shmb_offset_t *open_range(size_t bytes, uint32_t max_nodes, unsigned char **base)
{
    *base = untouchable(bytes);
    return make(*base, bytes, max_nodes);
}

static void release_range(shmb_offset_t *a, unsigned char *base, size_t bytes)
{
    shmb_offset_destroy(a);
    munmap(base, bytes);
}

/* n blocks of `len` bytes each, every allocation asserted. */
static void alloc_each(shmb_offset_t *a, size_t len, shmb_offset_block_t **blocks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(shmb_offset_alloc(a, len, &blocks[i]), 0);
}

static void expect_verified(const shmb_offset_t *a, shmb_offset_block_t *const *blocks, size_t n)
{
    char why[256] = "";
    int rc = shmb_offset_verify(a, blocks, n, why, sizeof(why));
    if (rc != 0)
        fail_msg("verify: %d %s", rc, why);
}

static void free_all(shmb_offset_block_t **blocks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(shmb_offset_free(blocks[i]), 0);
}

/* Page-multiple requests get page-aligned blocks inside the range, each at base + its offset. */
static void test_in_range_and_aligned(void **state)
{
    enum { N = 200 };
    const size_t bytes = 64u << 20;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    shmb_offset_block_t *blocks[N];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 7);
    uint64_t sum = 0;
    for (size_t i = 0; i < N; i++) {
        const size_t len = 4096 * (1 + shmb_rng_below(&rng, 40));
        assert_int_equal(shmb_offset_alloc(a, len, &blocks[i]), 0);
        unsigned char *p = shmb_offset_address(blocks[i]);
        assert_true(p >= base && p + len <= base + bytes);
        assert_int_equal((uintptr_t)p % 4096, 0);
        assert_true(shmb_offset_offset(a, blocks[i]) == (uint64_t)(p - base));
        assert_int_equal(shmb_offset_block_bytes(blocks[i]), len);
        sum += len;
    }
    assert_true(shmb_offset_in_use(a) == sum);
    assert_true(shmb_offset_live(a) == N);
    expect_verified(a, blocks, N);
    free_all(blocks, N);
    assert_true(shmb_offset_in_use(a) == 0 && shmb_offset_live(a) == 0);
    release_range(a, base, bytes);
}

/* Random sizes, frees in random order, allocations again: no two live blocks ever overlap, and the counters follow. */
static void test_random_no_overlap(void **state)
{
    enum { N = 3000 };
    const size_t bytes = 256u << 20;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    static shmb_offset_block_t *blocks[N];
    static uint64_t order[N];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 11);
    for (size_t i = 0; i < N; i++) {
        const size_t len = shmb_rng_below(&rng, 4) ? 1 + shmb_rng_below(&rng, 600) : 1 + shmb_rng_below(&rng, 1 << 17);
        assert_int_equal(shmb_offset_alloc(a, len, &blocks[i]), 0);
        order[i] = i;
    }
    expect_verified(a, blocks, N);
    for (int round = 0; round < 3; round++) {
        shmb_rng_shuffle(&rng, order, N);
        for (size_t i = 0; i < N / 2; i++) /* half of them go, in random order */
            assert_int_equal(shmb_offset_free(blocks[order[i]]), 0);
        for (size_t i = 0; i < N / 2; i++) /* and come back with new sizes */
            assert_int_equal(shmb_offset_alloc(a, 1 + shmb_rng_below(&rng, 1 << 16), &blocks[order[i]]), 0);
        expect_verified(a, blocks, N);
    }
    free_all(blocks, N);
    assert_true(shmb_offset_in_use(a) == 0 && shmb_offset_live(a) == 0);
    assert_true(shmb_offset_largest_free(a) == bytes); /* everything merged back */
    release_range(a, base, bytes);
}

/* A range holding exactly 16 blocks: the 17th is refused until one goes, then it takes the freed place. */
static void test_full_then_free(void **state)
{
    enum { N = 16 };
    const size_t bytes = N * 4096;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    shmb_offset_block_t *blocks[N], *extra = NULL;
    alloc_each(a, 4096, blocks, N);
    expect_verified(a, blocks, N);
    assert_int_equal(shmb_offset_alloc(a, 4096, &extra), -ENOMEM);
    assert_int_equal(shmb_offset_alloc(a, 1, &extra), -ENOMEM);
    assert_null(extra); /* untouched on failure */
    assert_true(shmb_offset_largest_free(a) == 0);
    void *hole = shmb_offset_address(blocks[5]);
    assert_int_equal(shmb_offset_free(blocks[5]), 0);
    assert_int_equal(shmb_offset_alloc(a, 4096, &blocks[5]), 0);
    assert_ptr_equal(shmb_offset_address(blocks[5]), hole);
    expect_verified(a, blocks, N);
    free_all(blocks, N);
    release_range(a, base, bytes);
}

/* Freed neighbours merge: after every block goes, in random order, the whole range is one block again. */
static void test_merging(void **state)
{
    enum { N = 256 };
    const size_t bytes = 1u << 20;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    shmb_offset_block_t *blocks[N], *whole = NULL;
    uint64_t order[N];
    alloc_each(a, 4096, blocks, N);
    for (size_t i = 0; i < N; i++)
        order[i] = i;
    assert_int_equal(shmb_offset_alloc(a, 4096, &whole), -ENOMEM);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 5);
    shmb_rng_shuffle(&rng, order, N);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(shmb_offset_free(blocks[order[i]]), 0);
        if (i + 1 < N) /* not one region yet: the whole range is refused */
            assert_true(shmb_offset_largest_free(a) < bytes);
    }
    assert_true(shmb_offset_largest_free(a) == bytes);
    assert_int_equal(shmb_offset_alloc(a, bytes, &whole), 0);
    assert_ptr_equal(shmb_offset_address(whole), base);
    expect_verified(a, &whole, 1);
    assert_int_equal(shmb_offset_free(whole), 0);
    release_range(a, base, bytes);
}

/* Sizes below 8 are their own bins: 1-byte blocks sit one byte apart. */
static void test_one_byte(void **state)
{
    const size_t bytes = 4096;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    shmb_offset_block_t *b[3];
    alloc_each(a, 1, b, 3);
    assert_ptr_equal(shmb_offset_address(b[0]), base);
    assert_ptr_equal(shmb_offset_address(b[1]), base + 1);
    assert_ptr_equal(shmb_offset_address(b[2]), base + 2);
    assert_true(shmb_offset_in_use(a) == 3);
    expect_verified(a, b, 3);
    free_all(b, 3);
    release_range(a, base, bytes);
}

/* Bin rounding: exact below 8 and on bin sizes, else up to the next of 8 steps per power of two (<= 12.5%). */
static void test_footprint(void **state)
{
    static const struct { uint64_t bytes, footprint; } cases[] = {
        {0, 0}, {1, 1}, {7, 7}, {8, 8}, {9, 9}, {15, 15}, {16, 16}, {17, 18}, {4096, 4096},
        {4097, 4608}, {4608, 4608}, {5000, 5120}, {65536, 65536}, {65537, 73728}, {1u << 20, 1u << 20},
        {3u << 30, 3u << 30}, {4026531840ull, 4026531840ull}, {4026531841ull, 0}, {UINT64_MAX, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (shmb_offset_footprint(cases[i].bytes) != cases[i].footprint)
            fail_msg("footprint(%llu) = %llu, want %llu", (unsigned long long)cases[i].bytes,
                     (unsigned long long)shmb_offset_footprint(cases[i].bytes),
                     (unsigned long long)cases[i].footprint);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 9);
    for (int i = 0; i < 100000; i++) {
        const uint64_t n = 1 + shmb_rng_below(&rng, 4026531840ull);
        const uint64_t f = shmb_offset_footprint(n);
        assert_true(f >= n && f - n <= n / 8);
    }
}

static void test_bad_arguments(void **state)
{
    const size_t bytes = 1u << 20;
    unsigned char *base = untouchable(bytes);
    shmb_offset_t *a = NULL;
    assert_int_equal(shmb_offset_create(NULL, bytes, 0, &a), -EINVAL);
    assert_int_equal(shmb_offset_create(base, 0, 0, &a), -EINVAL);
    assert_int_equal(shmb_offset_create(base, bytes, 0, NULL), -EINVAL);
    assert_int_equal(shmb_offset_create((void *)(UINTPTR_MAX - 4095), 8192, 0, &a), -EINVAL); /* wraps */
    assert_null(a);
    a = make(base, bytes, 0);
    shmb_offset_block_t *b = NULL;
    assert_int_equal(shmb_offset_alloc(a, 0, &b), -EINVAL);
    assert_int_equal(shmb_offset_alloc(NULL, 1, &b), -EINVAL);
    assert_int_equal(shmb_offset_alloc(a, 1, NULL), -EINVAL);
    assert_int_equal(shmb_offset_alloc(a, SIZE_MAX, &b), -ENOMEM);
    assert_null(b);
    assert_int_equal(shmb_offset_free(NULL), -EINVAL);
    assert_int_equal(shmb_offset_verify(NULL, NULL, 0, NULL, 0), -EINVAL);
    assert_int_equal(shmb_offset_verify(a, NULL, 1, NULL, 0), -EINVAL);
    assert_int_equal(shmb_offset_verify(a, NULL, 0, NULL, 0), 0); /* nothing live */
    assert_null(shmb_offset_address(NULL));
    assert_true(shmb_offset_in_use(NULL) == 0 && shmb_offset_live(NULL) == 0);
    shmb_offset_destroy(a);
    shmb_offset_destroy(NULL);
    munmap(base, bytes);
}

/* The largest request is the range rounded down to a bin: 1 MiB + 4 KiB serves 1 MiB, nothing larger. */
static void test_largest_size(void **state)
{
    const size_t bytes = (1u << 20) + 4096;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    shmb_offset_block_t *b = NULL;
    assert_true(shmb_offset_largest_free(a) == 1u << 20);
    assert_int_equal(shmb_offset_alloc(a, (1u << 20) + 1, &b), -ENOMEM);
    assert_int_equal(shmb_offset_alloc(a, bytes, &b), -ENOMEM);
    assert_int_equal(shmb_offset_alloc(a, 1u << 20, &b), 0);
    assert_ptr_equal(shmb_offset_address(b), base);
    assert_true(shmb_offset_largest_free(a) == 4096); /* the rest */
    expect_verified(a, &b, 1);
    assert_int_equal(shmb_offset_free(b), 0);
    release_range(a, base, bytes);
}

/* Above 3.75 GiB the allocator counts in 2^k-byte units (8 GiB: 4 bytes); the range is still one block. */
static void test_beyond_32_bits(void **state)
{
    const size_t bytes = (size_t)8 << 30;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 1024, &base);
    shmb_offset_block_t *b[2];
    assert_int_equal(shmb_offset_alloc(a, 3, &b[0]), 0);
    assert_int_equal(shmb_offset_alloc(a, 5, &b[1]), 0);
    assert_ptr_equal(shmb_offset_address(b[0]), base);
    assert_ptr_equal(shmb_offset_address(b[1]), base + 4); /* 3 bytes took one 4-byte unit */
    assert_true(shmb_offset_offset(a, b[1]) == 4);
    expect_verified(a, b, 2);
    free_all(b, 2);
    assert_int_equal(shmb_offset_alloc(a, bytes, &b[0]), 0);
    assert_ptr_equal(shmb_offset_address(b[0]), base);
    assert_int_equal(shmb_offset_free(b[0]), 0);
    release_range(a, base, bytes);
}

/* 8 nodes: the 8th block refused with space left, also after a non-merging free, not after a merging one. */
static void test_node_pool_exhausted(void **state)
{
    const size_t bytes = 1u << 20;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 8, &base);
    shmb_offset_block_t *b[8], *extra = NULL;
    alloc_each(a, 4096, b, 7);
    assert_int_equal(shmb_offset_alloc(a, 4096, &extra), -ENOMEM);
    assert_true(shmb_offset_largest_free(a) == 0); /* a full pool reports nothing free */
    assert_int_equal(shmb_offset_free(b[2]), 0);    /* both neighbours live: no merge */
    assert_int_equal(shmb_offset_alloc(a, 4096, &extra), -ENOMEM);
    assert_int_equal(shmb_offset_free(b[6]), 0); /* merges with the rest */
    assert_int_equal(shmb_offset_alloc(a, 4096, &b[6]), 0);
    assert_int_equal(shmb_offset_alloc(a, 4096, &b[2]), 0);
    shmb_offset_block_t *live[7] = {b[0], b[1], b[2], b[3], b[4], b[5], b[6]};
    expect_verified(a, live, 7);
    free_all(live, 7);
    release_range(a, base, bytes);
}

/* The check catches an overlap, a block below the range, one of another range, one missing from the list. */
static void test_verify_catches_faults(void **state)
{
    const size_t bytes = 1u << 20;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    shmb_offset_t *other = make(base + bytes / 2, bytes / 2, 0);
    shmb_offset_block_t *b[3];
    char why[256];
    assert_int_equal(shmb_offset_alloc(a, 4096, &b[0]), 0);
    shmb_offset_plant_overlap(a);
    assert_int_equal(shmb_offset_alloc(a, 4096, &b[1]), 0);
    assert_ptr_equal(shmb_offset_address(b[1]), base + 4095);
    assert_int_equal(shmb_offset_verify(a, b, 2, why, sizeof(why)), -EPROTO);
    assert_non_null(strstr(why, "overlap"));
    assert_int_equal(shmb_offset_alloc(a, 4096, &b[2]), 0); /* one fault only */
    assert_ptr_equal(shmb_offset_address(b[2]), base + 8192);
    assert_int_equal(shmb_offset_verify(a, b, 2, NULL, 0), -EPROTO); /* and no why wanted */
    assert_int_equal(shmb_offset_verify(a, b, 1, why, sizeof(why)), -EPROTO); /* b[1], b[2] missing */
    assert_non_null(strstr(why, "counts"));
    free_all(b, 3);

    shmb_offset_plant_overlap(a); /* the first block: below the range */
    assert_int_equal(shmb_offset_alloc(a, 4096, &b[0]), 0);
    assert_int_equal(shmb_offset_verify(a, b, 1, why, sizeof(why)), -EPROTO);
    assert_non_null(strstr(why, "outside"));
    assert_int_equal(shmb_offset_free(b[0]), 0);

    assert_int_equal(shmb_offset_alloc(other, 4096, &b[0]), 0); /* inside a's range, not a's block */
    assert_int_equal(shmb_offset_verify(a, b, 1, why, sizeof(why)), -EPROTO);
    assert_int_equal(shmb_offset_free(b[0]), 0);
    assert_int_equal(shmb_offset_verify(a, b, 0, why, sizeof(why)), 0);
    shmb_offset_destroy(other);
    release_range(a, base, bytes);
}

/* Blocks outliving their allocator are inert, and still freed. */
static void test_destroy_with_live_blocks(void **state)
{
    const size_t bytes = 1u << 20;
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    shmb_offset_block_t *b[3];
    alloc_each(a, 1000, b, 3);
    shmb_offset_destroy(a);
    assert_ptr_equal(shmb_offset_address(b[1]), base + 1024); /* 1000 bytes take a 1024-byte bin */
    free_all(b, 3);
    munmap(base, bytes);
}

/* Two threads allocating and freeing at once under the allocator's mutex. */
enum { PER_THREAD = 2000 };

typedef struct worker {
    shmb_offset_t *a;
    shmb_offset_block_t *blocks[PER_THREAD];
    uint64_t seed;
    int rc;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, w->seed);
    for (size_t i = 0; i < PER_THREAD && w->rc == 0; i++)
        w->rc = shmb_offset_alloc(w->a, 1 + shmb_rng_below(&rng, 8192), &w->blocks[i]);
    for (size_t i = 0; i < PER_THREAD && w->rc == 0; i += 2) /* every other one goes and comes back */
        if ((w->rc = shmb_offset_free(w->blocks[i])) == 0)
            w->rc = shmb_offset_alloc(w->a, 1 + shmb_rng_below(&rng, 8192), &w->blocks[i]);
    return NULL;
}

static void test_two_threads(void **state)
{
    const size_t bytes = 64u << 20;
    static worker_t w[2];
    static shmb_offset_block_t *all[2 * PER_THREAD];
    unsigned char *base;
    shmb_offset_t *a = open_range(bytes, 0, &base);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i].a = a;
        w[i].seed = 100 + (uint64_t)i;
        w[i].rc = 0;
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].rc, 0);
        memcpy(all + i * PER_THREAD, w[i].blocks, sizeof(w[i].blocks));
    }
    expect_verified(a, all, 2 * PER_THREAD);
    free_all(all, 2 * PER_THREAD);
    assert_true(shmb_offset_live(a) == 0);
    release_range(a, base, bytes);
}

/* Over a real SHM segment: every block holds what was written to it. */
static void test_in_shm_segment(void **state)
{
    enum { N = 500 };
    shmb_segment_t seg;
    assert_int_equal(shmb_segment_create(&seg, prefix, 16u << 20, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(&seg, NULL), 0);
    shmb_offset_t *a = make(seg.addr, seg.size, 0);
    static shmb_offset_block_t *b[N];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 13);
    for (size_t i = 0; i < N; i++) {
        const size_t len = 1 + shmb_rng_below(&rng, 20000);
        assert_int_equal(shmb_offset_alloc(a, len, &b[i]), 0);
        memset(shmb_offset_address(b[i]), (int)(i & 0xff), len);
    }
    for (size_t i = 0; i < N; i++) { /* nothing overwrote anything */
        const unsigned char *p = shmb_offset_address(b[i]);
        for (size_t k = 0; k < shmb_offset_block_bytes(b[i]); k += 61)
            assert_int_equal(p[k], i & 0xff);
    }
    expect_verified(a, b, N);
    free_all(b, N);
    shmb_offset_destroy(a);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

int main(void)
{
    prefix = shmb_test_prefix_init("/shmb_test_offset_");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_range_and_aligned),
        cmocka_unit_test(test_random_no_overlap),
        cmocka_unit_test(test_full_then_free),
        cmocka_unit_test(test_merging),
        cmocka_unit_test(test_one_byte),
        cmocka_unit_test(test_footprint),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_largest_size),
        cmocka_unit_test(test_beyond_32_bits),
        cmocka_unit_test(test_node_pool_exhausted),
        cmocka_unit_test(test_verify_catches_faults),
        cmocka_unit_test(test_destroy_with_live_blocks),
        cmocka_unit_test(test_two_threads),
    };
    const struct CMUnitTest shm[] = {
        cmocka_unit_test(test_in_shm_segment),
    };
    int failed = shmb_test_group("tests", tests, NULL, NULL);
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "/dev/shm is not writable: skipping the segment test\n");
        return failed ? 1 : 77;
    }
    failed += shmb_test_group("shm", shm, NULL, NULL);
    if (failed)
        shmb_test_remove_ours();
    return shmb_test_exit(failed);
}
