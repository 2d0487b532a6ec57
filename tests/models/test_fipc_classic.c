#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "helpers.h"

#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"

#include "models/fipc_internal.h"

static const char *prefix; /* "/shmb_test_bipc_<pid>_" (helpers.h) */

typedef struct block {
    unsigned char *p;
    size_t bytes;
} block_t;

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const block_t *)a)->p, y = (uintptr_t)((const block_t *)b)->p;
    return (x > y) - (x < y);
}

/* Every block inside the pool and no two overlapping, checked by sorting. */
static void check_blocks(const shmb_fipc_classic_t *pool, block_t *blocks, size_t n)
{
    unsigned char *base = shmb_fipc_classic_base(pool);
    size_t size = shmb_fipc_classic_size(pool);
    for (size_t i = 0; i < n; i++)
        if (blocks[i].p < base || blocks[i].bytes > size || (size_t)(blocks[i].p - base) > size - blocks[i].bytes)
            fail_msg("block %zu [%p, +%zu) outside the pool [%p, +%zu)", i, (void *)blocks[i].p,
                     blocks[i].bytes, (void *)base, size);
    qsort(blocks, n, sizeof(*blocks), by_address);
    for (size_t i = 1; i < n; i++)
        if (blocks[i - 1].p + blocks[i - 1].bytes > blocks[i].p)
            fail_msg("blocks [%p, +%zu) and [%p, +%zu) overlap", (void *)blocks[i - 1].p,
                     blocks[i - 1].bytes, (void *)blocks[i].p, blocks[i].bytes);
}

static void test_blocks_inside_and_disjoint(void **state)
{
    enum { N = 2000 };
    static block_t blocks[N];
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, 64u << 20, &pool), 0);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 3);
    for (size_t i = 0; i < N; i++) {
        /* mostly small, some up to 64 KiB, a few odd sizes */
        size_t bytes = shmb_rng_below(&rng, 4) ? 1 + shmb_rng_below(&rng, 512) : 1 + shmb_rng_below(&rng, 65536);
        void *p = NULL;
        assert_int_equal(shmb_fipc_classic_alloc(pool, bytes, &p), 0);
        blocks[i] = (block_t){p, bytes};
        memset(p, (int)(i & 0xff), bytes);
    }
    for (size_t i = 0; i < N; i++) /* nothing overwrote anything */
        for (size_t k = 0; k < blocks[i].bytes; k += 97)
            assert_int_equal(blocks[i].p[k], i & 0xff);
    check_blocks(pool, blocks, N);
    /* a handle (offset from the base) translates back to the block */
    unsigned char *base = shmb_fipc_classic_base(pool);
    size_t size = shmb_fipc_classic_size(pool);
    assert_int_equal(size, 64u << 20);
    for (size_t i = 0; i < N; i++)
        assert_ptr_equal(shmb_fipc_classic_to_address(base, size, (uint64_t)(blocks[i].p - base), blocks[i].bytes),
                         blocks[i].p);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(shmb_fipc_classic_free(pool, blocks[i].p), 0);
    /* all free again, and coalesced: half the pool fits in one block */
    void *big = NULL;
    assert_int_equal(shmb_fipc_classic_alloc(pool, 32u << 20, &big), 0);
    assert_int_equal(shmb_fipc_classic_free(pool, big), 0);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
}

/* Two threads allocating and freeing in one pool at once (its mutex):
 * every block inside, none overlapping, none overwritten by the other. */
enum { PER_THREAD = 3000 };

typedef struct classic_thread {
    shmb_fipc_classic_t *pool;
    pthread_barrier_t *start;
    block_t *blocks;
    unsigned char tag;
    int ret;
} classic_thread_t;

static void *classic_thread(void *arg)
{
    classic_thread_t *c = arg;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, c->tag);
    pthread_barrier_wait(c->start);
    int ret = 0;
    for (size_t round = 0; round < 2 && ret == 0; round++) {
        for (size_t i = 0; i < PER_THREAD && ret == 0; i++) {
            size_t bytes = 1 + shmb_rng_below(&rng, 2048);
            void *p = NULL;
            ret = shmb_fipc_classic_alloc(c->pool, bytes, &p);
            c->blocks[i] = (block_t){p, bytes};
            if (ret == 0)
                memset(p, c->tag, bytes);
        }
        for (size_t i = 0; i < PER_THREAD && ret == 0; i += 1 + round) /* round 0: all, 1: half */
            for (size_t k = 0; k < c->blocks[i].bytes && ret == 0; k += 61)
                ret = c->blocks[i].p[k] == c->tag ? 0 : -EIO;
        for (size_t i = 0; round == 0 && i < PER_THREAD && ret == 0; i++)
            ret = shmb_fipc_classic_free(c->pool, c->blocks[i].p);
    }
    c->ret = ret;
    return NULL;
}

static void test_two_threads(void **state)
{
    static block_t blocks[2 * PER_THREAD];
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, 64u << 20, &pool), 0);
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
    classic_thread_t c[2];
    pthread_t tid[2];
    for (int t = 0; t < 2; t++) {
        c[t] = (classic_thread_t){pool, &start, blocks + t * PER_THREAD, (unsigned char)(0xa0 + t), 0};
        assert_int_equal(pthread_create(&tid[t], NULL, classic_thread, &c[t]), 0);
    }
    for (int t = 0; t < 2; t++) {
        pthread_join(tid[t], NULL);
        assert_int_equal(c[t].ret, 0);
    }
    pthread_barrier_destroy(&start);
    check_blocks(pool, blocks, 2 * PER_THREAD);
    for (size_t i = 0; i < 2 * PER_THREAD; i++)
        assert_int_equal(shmb_fipc_classic_free(pool, blocks[i].p), 0);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
}

static void test_blocks_are_reused(void **state)
{
    enum { N = 256, ROUNDS = 300 };
    static block_t blocks[N];
    size_t sizes[N], working_set = 0;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 11);
    for (size_t i = 0; i < N; i++) {
        sizes[i] = 64 + shmb_rng_below(&rng, 8192);
        working_set += sizes[i];
    }
    /* a quarter more than the working set, plus the manager and block headers */
    size_t pool_bytes = working_set + working_set / 4 + 64 * N + 4096;
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, pool_bytes, &pool), 0);
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < N; i++) {
            void *p = NULL;
            int rc = shmb_fipc_classic_alloc(pool, sizes[i], &p);
            if (rc != 0)
                fail_msg("round %d block %zu (%zu bytes): %d", round, i, sizes[i], rc);
            blocks[i] = (block_t){p, sizes[i]};
        }
        if (round % 50 == 0)
            check_blocks(pool, blocks, N); /* sorts blocks: free order is then by address */
        /* free in a random order */
        for (size_t i = N - 1; i > 0; i--) {
            size_t j = (size_t)shmb_rng_below(&rng, i + 1);
            block_t t = blocks[i];
            blocks[i] = blocks[j];
            blocks[j] = t;
        }
        for (size_t i = 0; i < N; i++)
            assert_int_equal(shmb_fipc_classic_free(pool, blocks[i].p), 0);
    }
    /* free, then the same size again: the space comes back */
    void *a = NULL, *b = NULL;
    assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, &a), 0);
    assert_int_equal(shmb_fipc_classic_free(pool, a), 0);
    assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, &b), 0);
    assert_ptr_equal(a, b); /* best fit: the hole just freed */
    assert_int_equal(shmb_fipc_classic_free(pool, b), 0);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
}

static void test_full_pool(void **state)
{
    enum { MAX = 1024 };
    static void *blocks[MAX];
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, 1u << 20, &pool), 0);
    int n = 0, rc;
    void *sentinel = &n, *p = sentinel;
    while (n < MAX && (rc = shmb_fipc_classic_alloc(pool, 4096, &p)) == 0) {
        blocks[n++] = p;
        p = sentinel;
    }
    assert_int_equal(rc, -ENOMEM);
    assert_ptr_equal(p, sentinel); /* untouched on failure */
    assert_true(n > 200 && n < 256); /* 1 MiB holds fewer than 256 blocks of 4 KiB */
    assert_int_equal(shmb_fipc_classic_alloc(pool, 1u << 20, &p), -ENOMEM);
    assert_int_equal(shmb_fipc_classic_alloc(pool, SIZE_MAX, &p), -ENOMEM);
    assert_int_equal(shmb_fipc_classic_alloc(pool, SIZE_MAX / 2, &p), -ENOMEM);
    assert_ptr_equal(p, sentinel);
    /* one freed, one fits again */
    assert_int_equal(shmb_fipc_classic_free(pool, blocks[n / 2]), 0);
    assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, &p), 0);
    assert_ptr_equal(p, blocks[n / 2]);
    for (int i = 0; i < n; i++)
        assert_int_equal(shmb_fipc_classic_free(pool, blocks[i]), 0);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
}

static void test_invalid(void **state)
{
    size_t before = shmb_segment_registered();
    shmb_fipc_classic_t *sentinel = (shmb_fipc_classic_t *)&before, *pool = sentinel;
    assert_int_equal(shmb_fipc_classic_create(prefix, 64, &pool), -EINVAL); /* too small */
    assert_int_equal(shmb_fipc_classic_create("no_slash", 1u << 20, &pool), -EINVAL);
    assert_ptr_equal(pool, sentinel);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    assert_int_equal(shmb_segment_registered(), before);

    assert_int_equal(shmb_fipc_classic_create(prefix, 1u << 20, &pool), 0);
    void *p = sentinel;
    assert_int_equal(shmb_fipc_classic_alloc(pool, 0, &p), -EINVAL);
    assert_ptr_equal(p, sentinel);
    int on_stack;
    unsigned char *base = shmb_fipc_classic_base(pool);
    assert_int_equal(shmb_fipc_classic_free(pool, &on_stack), -EINVAL);
    assert_int_equal(shmb_fipc_classic_free(pool, NULL), -EINVAL);
    assert_int_equal(shmb_fipc_classic_free(pool, base + shmb_fipc_classic_size(pool)), -EINVAL);
    assert_int_equal(shmb_fipc_classic_free(pool, base - 1), -EINVAL);
    /* the pool still works */
    assert_int_equal(shmb_fipc_classic_alloc(pool, 100, &p), 0);
    assert_int_equal(shmb_fipc_classic_free(pool, p), 0);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_fipc_classic_destroy(NULL, 1), 0);
}

static void test_destroy_unlinks(void **state)
{
    size_t before = shmb_segment_registered();
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, 8u << 20, &pool), 0);
    char name[300];
    assert_int_equal(shmb_test_count_ours(name, sizeof(name)), 1);
    assert_int_equal(shmb_segment_registered(), before + 1);
    char path[320];
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 8u << 20);
    assert_true((size_t)st.st_blocks * 512 < (1u << 20)); /* sparse: only headers written */
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    assert_int_equal(shmb_segment_registered(), before);
}

/* A borrower maps the pool by name: the same bytes at base + handle, both ways; its size from fstat. */
static void test_borrower_attach(void **state)
{
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, 8u << 20, &pool), 0);
    char name[300];
    assert_int_equal(shmb_test_count_ours(name, sizeof(name)), 1);
    assert_string_equal(shmb_fipc_classic_name(pool), name);
    unsigned char *block;
    assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, (void **)&block), 0);
    memset(block, 0xa5, 4096);
    const uint64_t handle = (uint64_t)(block - (unsigned char *)shmb_fipc_classic_base(pool));
    void *base = NULL;
    size_t bytes = 0;
    assert_int_equal(shmb_fipc_classic_attach(name, &base, &bytes), 0);
    assert_true(base != shmb_fipc_classic_base(pool));
    assert_int_equal(bytes, 8u << 20);
    unsigned char *borrowed = shmb_fipc_classic_to_address(base, bytes, handle, 4096);
    assert_non_null(borrowed);
    for (int i = 0; i < 4096; i++)
        assert_int_equal(borrowed[i], 0xa5);
    borrowed[17] = 0x3c;
    assert_int_equal(block[17], 0x3c);
    assert_int_equal(shmb_fipc_classic_detach(base, bytes), 0);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);

    assert_int_equal(shmb_fipc_classic_attach(name, &base, &bytes), -ENOENT); /* unlinked */
    assert_string_equal(shmb_error_last()->call, "shm_open");
    assert_string_equal(shmb_error_last()->object, name);
    assert_int_equal(shmb_fipc_classic_attach(NULL, &base, &bytes), -EINVAL);
    assert_int_equal(shmb_fipc_classic_detach((void *)1, 4096), -EINVAL); /* not page-aligned */
    assert_string_equal(shmb_error_last()->call, "munmap");
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

static void test_destroy_keeps(void **state)
{
    size_t before = shmb_segment_registered();
    shmb_fipc_classic_t *pool = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, 1u << 20, &pool), 0);
    void *p = NULL;
    assert_int_equal(shmb_fipc_classic_alloc(pool, 64, &p), 0);
    memcpy(p, "kept", 5);
    size_t offset = (size_t)((unsigned char *)p - (unsigned char *)shmb_fipc_classic_base(pool));
    assert_int_equal(shmb_fipc_classic_destroy(pool, 0), 0);
    assert_int_equal(shmb_segment_registered(), before);
    char name[300];
    assert_int_equal(shmb_test_count_ours(name, sizeof(name)), 1);
    /* the data is still there for whoever opens the pool */
    int fd = shm_open(name, O_RDONLY, 0);
    assert_true(fd >= 0);
    char got[5];
    assert_int_equal(pread(fd, got, sizeof(got), (off_t)offset), (ssize_t)sizeof(got));
    close(fd);
    assert_string_equal(got, "kept");
    assert_int_equal(shm_unlink(name), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* The reference: [offset, offset + len) inside [0, pool_bytes), in 128-bit arithmetic so nothing wraps. */
static void *reference(unsigned char *base, size_t pool_bytes, uint64_t offset, uint64_t len)
{
    __extension__ typedef unsigned __int128 u128;
    if (len == 0 || (u128)offset + len > pool_bytes)
        return NULL;
    return base + offset;
}

static unsigned char local[0x10000];

static void test_to_address_edges(void **state)
{
    const size_t size = sizeof(local);
    /* blocks back to back in the pool, as the lookup bench lays them out */
    static const struct { uint64_t offset, len; } cases[] = {
        {0, 1},                    /* first byte */
        {0, sizeof(local)},        /* all of it */
        {sizeof(local) - 16, 16},  /* last valid start */
        {sizeof(local) - 15, 16},  /* straddles the end */
        {sizeof(local) - 1, 1},    /* last byte */
        {sizeof(local), 1},        /* one past the end */
        {0x4000 - 8, 16},          /* across two adjacent blocks: still inside the pool */
        {0, sizeof(local) + 1},    /* longer than the pool */
        {8, UINT64_MAX},           /* length that wraps */
        {8, 0 - (uint64_t)8},      /* offset + len wraps to exactly 0 */
        {UINT64_MAX, 1},           /* far after */
        {UINT64_MAX - 4, 8},       /* far after, wrapping */
        {100, 0},                  /* len = 0 */
    };
    shmb_lookup_request_t req[sizeof(cases) / sizeof(cases[0])];
    uint64_t want_sum = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        void *want = reference(local, size, cases[i].offset, cases[i].len);
        void *got = shmb_fipc_classic_to_address(local, size, cases[i].offset, cases[i].len);
        if (got != want)
            fail_msg("offset 0x%llx len %llu -> %p, reference %p", (unsigned long long)cases[i].offset,
                     (unsigned long long)cases[i].len, got, want);
        req[i] = (shmb_lookup_request_t){.pool_offset = cases[i].offset, .len = cases[i].len};
        want_sum += (uint64_t)(uintptr_t)want;
    }
    assert_ptr_equal(shmb_fipc_classic_to_address(local, size, 0x1234, 2), local + 0x1234);
    assert_null(shmb_fipc_classic_to_address(local, size, size, 1));
    assert_true(shmb_fipc_classic_translate_batch(local, size, req, sizeof(req) / sizeof(req[0])) == want_sum);
    assert_true(shmb_fipc_classic_translate_batch(local, size, req, 0) == 0);
}

static void test_translate_batch_against_reference(void **state)
{
    enum { N = 20000 };
    static shmb_lookup_request_t req[N];
    const size_t size = sizeof(local);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 77);
    uint64_t want = 0;
    int hits = 0;
    for (int i = 0; i < N; i++) {
        req[i].pool_offset = shmb_rng_below(&rng, size + 4096);
        req[i].len = shmb_rng_below(&rng, 8192);
        void *r = reference(local, size, req[i].pool_offset, req[i].len);
        assert_ptr_equal(shmb_fipc_classic_to_address(local, size, req[i].pool_offset, req[i].len), r);
        want += (uint64_t)(uintptr_t)r;
        hits += r != NULL;
    }
    assert_true(hits > N / 10 && hits < N);
    assert_true(shmb_fipc_classic_translate_batch(local, size, req, N) == want);
}

/* The latency chain sums the translations; translation 0 landing d bytes off makes request 1 land d off. */
static void test_translate_chain_is_dependent(void **state)
{
    const size_t size = sizeof(local);
    const shmb_lookup_request_t r[3] = {
        {.pool_offset = 100, .len = 8}, {.pool_offset = 0x4000, .len = 16}, {.pool_offset = 0x5000, .len = 1}};
    const uint64_t t[3] = {(uint64_t)(uintptr_t)(local + 100), (uint64_t)(uintptr_t)(local + 0x4000),
                           (uint64_t)(uintptr_t)(local + 0x5000)};
    uint64_t expected[3] = {t[0], t[1], t[2]};
    assert_true(shmb_fipc_classic_translate_chain(local, size, r, expected, 3) == t[0] + t[1] + t[2]);
    assert_true(shmb_fipc_classic_translate_chain(local, size, r, expected, 0) == 0);
    expected[0] = t[0] - 32; /* translation 0 lands 32 bytes past: so do the two after it */
    assert_true(shmb_fipc_classic_translate_chain(local, size, r, expected, 3) == t[0] + t[1] + 32 + t[2] + 32);
    expected[0] = t[0] - size; /* request 1 pushed past the pool: a miss counts 0 */
    assert_true(shmb_fipc_classic_translate_chain(local, size, r, expected, 2) == t[0]);
}

/* A full /dev/shm at create: the manager's pages reserved first, so -ENOSPC, no SIGBUS, nothing left. */
static int full_shm_run(void *arg)
{
    (void)arg;
    if (shmb_segment_install_signal_cleanup() != 0)
        return 10;
    int fd = open("/dev/shm/filler", O_CREAT | O_RDWR, 0600);
    for (off_t at = 0; fd >= 0 && posix_fallocate(fd, at, 4096) == 0;)
        at += 4096;
    shmb_fipc_classic_t *pool = NULL;
    int ret = shmb_fipc_classic_create(prefix, 4 << 20, &pool);
    if (ret != -ENOSPC || strcmp(shmb_error_last()->call, "posix_fallocate") != 0)
        return 11;
    return shmb_test_count_ours(NULL, 0) == 0 ? 0 : 12;
}

/* A throwing lock is -EIO to callers, a last release records it and frees nothing; mended, the block frees. */
static void test_boost_throw_is_errno(void **state)
{
    shmb_fipc_classic_t *pool;
    shmb_fipc_classic_arena_t *arena;
    shmb_fipc_classic_object_t obj = {0}, other = {0};
    void *p, *sentinel = &p, *q = sentinel;
    assert_int_equal(shmb_fipc_classic_create(prefix, (8u << 20), &pool), 0);
    assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, &p), 0);
    assert_int_equal(shmb_fipc_classic_arena_create(pool, &arena), 0);
    assert_int_equal(shmb_fipc_classic_construct(arena, 64, &obj), 0);

    assert_int_equal(shmb_fipc_classic_break_lock(pool), 0);
    assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, &q), -EIO);
    assert_ptr_equal(q, sentinel); /* untouched on failure */
    assert_int_equal(shmb_fipc_classic_free(pool, p), -EIO);
    assert_int_equal(shmb_fipc_classic_construct(arena, 64, &other), -EIO);
    assert_null(other.addr);
    shmb_error_clear();
    shmb_fipc_classic_release(&obj); /* the last owner: its deallocate throws */
    assert_null(obj.addr);
    assert_int_equal(shmb_fipc_classic_frees(arena), 0);
    assert_non_null(shmb_error_last()->call);
    assert_string_equal(shmb_error_last()->call, "deallocate");
    assert_int_equal(shmb_error_last()->err, EIO);
    assert_int_equal(shmb_fipc_classic_mend_lock(pool), 0);

    assert_int_equal(shmb_fipc_classic_free(pool, p), 0);
    assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, &q), 0);
    assert_int_equal(shmb_fipc_classic_free(pool, q), 0);
    assert_int_equal(shmb_fipc_classic_arena_destroy(arena), 0);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

static void test_full_shm(void **state)
{
    shmb_test_in_tmpfs(1024, full_shm_run, NULL, "a full /dev/shm at create");
}

int main(void)
{
    prefix = shmb_test_prefix_init("/shmb_test_bipc_");
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_to_address_edges),
        cmocka_unit_test(test_translate_batch_against_reference),
        cmocka_unit_test(test_translate_chain_is_dependent),
    };
    const struct CMUnitTest shm[] = {
        cmocka_unit_test(test_blocks_inside_and_disjoint),
        cmocka_unit_test(test_blocks_are_reused),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_full_pool),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_destroy_unlinks),
        cmocka_unit_test(test_destroy_keeps),
        cmocka_unit_test(test_borrower_attach),
        cmocka_unit_test(test_boost_throw_is_errno),
        cmocka_unit_test(test_full_shm),
    };
    int failed = shmb_test_group("pure", pure, NULL, NULL);
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "/dev/shm is not writable: skipping the pool tests\n");
        return failed ? 1 : 77;
    }
    failed += shmb_test_group("shm", shm, NULL, NULL);
    if (failed)
        shmb_test_remove_ours();
    return shmb_test_exit(failed);
}
