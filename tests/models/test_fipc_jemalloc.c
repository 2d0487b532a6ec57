#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#include "shmbench/channel.h"
#include "shmbench/error.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"

#include "models/fipc_internal.h"

/* ---- the process's malloc ---- */

static const char *object_of(const char *symbol)
{
    Dl_info info;
    void *addr = dlsym(RTLD_DEFAULT, symbol);
    if (!addr || !dladdr(addr, &info) || !info.dli_fname)
        return NULL;
    return info.dli_fname;
}

/* glibc's, or the Address- or ThreadSanitizer's that wraps it (libasan or
 * libtsan with gcc, linked into this program with clang). */
static int glibc_or_sanitizer(const char *object)
{
    Dl_info self;
    if (!dladdr((void *)(uintptr_t)glibc_or_sanitizer, &self) || !self.dli_fname)
        return 0;
    return strstr(object, "libc.so") != NULL || strstr(object, "libasan") != NULL ||
           strstr(object, "libtsan") != NULL || strcmp(object, self.dli_fname) == 0;
}

static void test_malloc_stays_glibcs(void **state)
{
    (void)state;
    const char *malloc_from = object_of("malloc");
    const char *free_from = object_of("free");
    const char *mallocx_from = object_of("mallocx");
    assert_non_null(malloc_from);
    assert_non_null(free_from);
    assert_non_null(mallocx_from);
    assert_true(glibc_or_sanitizer(malloc_from));
    assert_true(glibc_or_sanitizer(free_from));
    assert_string_not_equal(malloc_from, mallocx_from);
    assert_non_null(strstr(mallocx_from, "libshmb_jemalloc.so"));
}

/* ---- repository, against plain arithmetic ---- */

#define NPOOLS 3
static unsigned char space[1 << 20];
static const struct {
    uint32_t id;
    size_t at; /* offset of the base in space */
    size_t size;
} pools[NPOOLS] = {{7, 4096, 4096}, {3, 65536, 100}, {42, 65636, 1000}}; /* last two adjacent */

static void *ref_to_address(uint32_t id, uint64_t offset, uint64_t len)
{
    for (int i = 0; i < NPOOLS; i++) {
        if (pools[i].id != id)
            continue;
        if (len == 0 || offset >= pools[i].size || offset + len > pools[i].size ||
            offset + len < offset)
            return NULL;
        return space + pools[i].at + offset;
    }
    return NULL;
}

static int ref_from_address(const void *ptr, uint32_t *id, uint64_t *offset)
{
    for (int i = 0; i < NPOOLS; i++) {
        const unsigned char *base = space + pools[i].at;
        if ((const unsigned char *)ptr >= base && (const unsigned char *)ptr < base + pools[i].size) {
            *id = pools[i].id;
            *offset = (uint64_t)((const unsigned char *)ptr - base);
            return 0;
        }
    }
    return -ENOENT;
}

static int repo_setup(void **state)
{
    shmb_fipc_repo_t *repo;
    if (shmb_fipc_repo_create(&repo) != 0)
        return -1;
    for (int i = 0; i < NPOOLS; i++)
        if (shmb_fipc_repo_insert(repo, pools[i].id, space + pools[i].at, pools[i].size) != 0)
            return -1;
    *state = repo;
    return 0;
}

static int repo_teardown(void **state)
{
    shmb_fipc_repo_destroy(*state);
    return 0;
}

static void test_repo_insert_erase(void **state)
{
    shmb_fipc_repo_t *repo = *state;
    assert_int_equal(shmb_fipc_repo_insert(repo, 7, space + 200000, 10), -EEXIST);
    assert_int_equal(shmb_fipc_repo_insert(repo, 8, space + 200000, 0), -EINVAL);
    assert_int_equal(shmb_fipc_repo_insert(repo, 8, space + 4096, 1), -EINVAL);        /* same base */
    assert_int_equal(shmb_fipc_repo_insert(repo, 8, space + 8191, 1), -EINVAL);        /* last byte */
    assert_int_equal(shmb_fipc_repo_insert(repo, 8, space + 4000, 97), -EINVAL);       /* covers the first */
    assert_int_equal(shmb_fipc_repo_insert(repo, 8, space + 4000, 8192), -EINVAL);     /* covers it all */
    assert_int_equal(shmb_fipc_repo_insert(repo, 8, space + 65600, 10), -EINVAL);      /* inside id 3 */
    assert_int_equal(shmb_fipc_repo_insert(repo, 8, space + 4000, 96), 0);             /* adjacent below */
    assert_int_equal(shmb_fipc_repo_insert(repo, 9, space + 8192, 4096), 0);           /* adjacent above */
    assert_int_equal(shmb_fipc_repo_erase(repo, 8), 0);
    assert_int_equal(shmb_fipc_repo_erase(repo, 8), -ENOENT);
    assert_int_equal(shmb_fipc_repo_erase(repo, 9), 0);
    assert_null(shmb_fipc_repo_to_address(repo, 9, 0, 1));
    uint32_t id = 1;
    uint64_t off = 1;
    assert_int_equal(shmb_fipc_repo_from_address(repo, space + 8192, &id, &off), -ENOENT);
    assert_int_equal(shmb_fipc_repo_insert(repo, 9, space + 8192, 10), 0); /* id free again */
    assert_int_equal(shmb_fipc_repo_erase(repo, 9), 0);
    assert_true(id == 1 && off == 1); /* untouched on error */
}

static void test_repo_to_address_edges(void **state)
{
    shmb_fipc_repo_t *repo = *state;
    for (int i = 0; i < NPOOLS; i++) {
        uint64_t size = pools[i].size;
        const uint64_t cases[][2] = {
            {0, 1}, {0, size}, {size - 1, 1}, {size, 1}, {size, 0}, {0, 0}, {1, size},
            {size - 1, 2}, {size / 2, size}, {size + 4096, 1}, {UINT64_MAX, 2}, {1, UINT64_MAX},
        };
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
            assert_ptr_equal(shmb_fipc_repo_to_address(repo, pools[i].id, cases[c][0], cases[c][1]),
                             ref_to_address(pools[i].id, cases[c][0], cases[c][1]));
        assert_ptr_equal(shmb_fipc_repo_to_address(repo, pools[i].id, 0, 1), space + pools[i].at);
        assert_ptr_equal(shmb_fipc_repo_to_address(repo, pools[i].id, size - 1, 1),
                         space + pools[i].at + size - 1);
        assert_null(shmb_fipc_repo_to_address(repo, pools[i].id, size, 1));
    }
    assert_null(shmb_fipc_repo_to_address(repo, 0, 0, 1));
    assert_null(shmb_fipc_repo_to_address(repo, 5, 0, 1));
}

static void test_repo_from_address_edges(void **state)
{
    shmb_fipc_repo_t *repo = *state;
    const size_t probes[] = {0, 4095, 4096, 4097, 8191, 8192, 65535, 65536, 65635, 65636, 66635,
                             66636, sizeof(space) - 1};
    for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
        uint32_t id = 0, ref_id = 0;
        uint64_t off = 0, ref_off = 0;
        int ret = shmb_fipc_repo_from_address(repo, space + probes[k], &id, &off);
        assert_int_equal(ret, ref_from_address(space + probes[k], &ref_id, &ref_off));
        assert_int_equal(id, ref_id);
        assert_true(off == ref_off);
    }
    uint32_t id;
    uint64_t off;
    assert_int_equal(shmb_fipc_repo_from_address(repo, space + 4096 + 4095, &id, &off), 0);
    assert_true(id == 7 && off == 4095);
    assert_int_equal(shmb_fipc_repo_from_address(repo, space + 65636, &id, &off), 0);
    assert_true(id == 42 && off == 0); /* first byte of the adjacent pool, not the last of id 3 */
    assert_int_equal(shmb_fipc_repo_from_address(repo, space + 100, &id, &off), -ENOENT);   /* before */
    assert_int_equal(shmb_fipc_repo_from_address(repo, space + 9000, &id, &off), -ENOENT);  /* between */
    assert_int_equal(shmb_fipc_repo_from_address(repo, space + 70000, &id, &off), -ENOENT); /* after */
}

static void test_repo_batch_matches_reference(void **state)
{
    shmb_fipc_repo_t *repo = *state;
    enum { N = 4096 };
    static shmb_lookup_request_t req[N];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 11);
    uint64_t expect = 0, hits = 0;
    for (size_t i = 0; i < N; i++) {
        size_t p = (size_t)shmb_rng_below(&rng, NPOOLS);
        memset(&req[i], 0, sizeof(req[i]));
        req[i].id = shmb_rng_below(&rng, 8) == 0 ? 1000 : pools[p].id; /* some unknown ids */
        req[i].offset = shmb_rng_below(&rng, pools[p].size + 16);
        req[i].len = shmb_rng_below(&rng, 64);
        void *ref = ref_to_address(req[i].id, req[i].offset, req[i].len);
        expect += (uint64_t)(uintptr_t)ref;
        hits += ref != NULL;
    }
    assert_true(hits > N / 2 && hits < N); /* both outcomes occur */
    assert_true(shmb_fipc_repo_translate_batch(repo, req, N) == expect);
}

/* ---- allocator over SHM pools ---- */

static const char *prefix; /* "/shmb_test_jem_<pid>_" (helpers.h) */

/* Files in /dev/shm under this test's prefix. unlink_them removes them. */
static size_t our_files(int unlink_them)
{
    return (size_t)(unlink_them ? shmb_test_remove_ours() : shmb_test_count_ours(NULL, 0));
}

static int remove_leftovers(void **state)
{
    (void)state;
    our_files(1);
    return 0;
}

typedef struct block {
    unsigned char *p;
    size_t size;
} block_t;

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const block_t *)a)->p, y = (uintptr_t)((const block_t *)b)->p;
    return (x > y) - (x < y);
}

/* Log-uniform sizes in [1 B, 1 MiB]. */
static size_t random_size(shmb_rng_t *rng)
{
    unsigned shift = (unsigned)shmb_rng_below(rng, 21);
    return (size_t)1 + (size_t)shmb_rng_below(rng, (uint64_t)1 << shift);
}

static void check_inside_a_pool(shmb_fipc_jemalloc_t *j, const block_t *b)
{
    shmb_fipc_repo_t *repo = shmb_fipc_jemalloc_repo(j);
    uint32_t id, last_id;
    uint64_t off, last_off;
    assert_int_equal(shmb_fipc_repo_from_address(repo, b->p, &id, &off), 0);
    assert_ptr_equal(shmb_fipc_repo_to_address(repo, id, off, b->size), b->p); /* off + size <= pool */
    assert_int_equal(shmb_fipc_repo_from_address(repo, b->p + b->size - 1, &last_id, &last_off), 0);
    assert_int_equal(last_id, id);
    assert_true(last_off == off + b->size - 1);
}

static void blocks_are_disjoint_pooled_and_writable(int tcache)
{
    enum { N = 2000 };
    size_t before = shmb_segment_registered();
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, tcache, &j), 0);
    block_t *b = calloc(N, sizeof(*b));
    assert_non_null(b);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 5 + (uint64_t)tcache);
    for (size_t i = 0; i < N; i++) {
        b[i].size = random_size(&rng);
        void *p;
        assert_int_equal(shmb_fipc_jemalloc_alloc(j, b[i].size, &p), 0);
        b[i].p = p;
        check_inside_a_pool(j, &b[i]);
        memset(b[i].p, (int)(i & 0xff), b[i].size);
    }
    for (size_t i = 0; i < N; i++) /* no later block overwrote an earlier one */
        assert_true(b[i].p[0] == (i & 0xff) && b[i].p[b[i].size - 1] == (i & 0xff));
    qsort(b, N, sizeof(*b), by_address);
    for (size_t i = 0; i + 1 < N; i++)
        assert_true(b[i].p + b[i].size <= b[i + 1].p);

    uint64_t bytes = 0;
    size_t npools = shmb_fipc_jemalloc_pools(j, &bytes);
    assert_true(npools >= 1 && npools == our_files(0) && npools == shmb_segment_registered() - before);
    assert_true(bytes >= 2000 * 1024ull && bytes <= 2 * SHMB_FIPC_JEMALLOC_MAX_POOL);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(shmb_fipc_jemalloc_free(j, b[i].p), 0);
    free(b);
    uint64_t kept = 0;
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, &kept), 0);
    assert_true(kept == 0);
    assert_int_equal(our_files(0), 0);
    assert_int_equal(shmb_segment_registered(), before);
}

/* The latency chain: with the right expected addresses it sums the
 * translations; when translation 0 lands d off what was expected, request
 * 1's id and offset are both shifted by d: the chain is dependent. */
static void test_repo_chain_is_dependent(void **state)
{
    shmb_fipc_repo_t *repo = *state;
    /* pool 3 holds 100 bytes, pool 7 4096: id 3 + 4 = 7 */
    const shmb_lookup_request_t r[2] = {{.id = 7, .offset = 10, .len = 1}, {.id = 3, .offset = 20, .len = 8}};
    const uint64_t t0 = (uint64_t)(uintptr_t)(space + 4096 + 10), t1 = (uint64_t)(uintptr_t)(space + 65536 + 20);
    uint64_t expected[2] = {t0, t1};
    assert_true(shmb_fipc_repo_translate_chain(repo, r, expected, 2) == t0 + t1);
    assert_true(shmb_fipc_repo_translate_chain(repo, r, expected, 0) == 0);
    expected[0] = t0 - 4; /* translation 0 lands 4 past: request 1 becomes pool 7, offset 24 */
    assert_true(shmb_fipc_repo_translate_chain(repo, r, expected, 2) ==
                t0 + (uint64_t)(uintptr_t)(space + 4096 + 24));
    expected[0] = t0 - 1; /* pool 4 does not exist: a miss counts 0 */
    assert_true(shmb_fipc_repo_translate_chain(repo, r, expected, 2) == t0);
}

static void test_blocks_no_tcache(void **state)
{
    (void)state;
    blocks_are_disjoint_pooled_and_writable(0);
}

static void test_blocks_tcache(void **state)
{
    (void)state;
    blocks_are_disjoint_pooled_and_writable(1);
}

static void blocks_are_reused(int tcache)
{
    enum { N = 64, ROUNDS = 50 };
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, tcache, &j), 0);

    void *p, *q;
    assert_int_equal(shmb_fipc_jemalloc_alloc(j, 4096, &p), 0);
    assert_int_equal(shmb_fipc_jemalloc_free(j, p), 0);
    assert_int_equal(shmb_fipc_jemalloc_alloc(j, 4096, &q), 0);
    assert_ptr_equal(q, p);
    assert_int_equal(shmb_fipc_jemalloc_free(j, q), 0);

    void *blocks[N];
    size_t sizes[N];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 9);
    for (size_t i = 0; i < N; i++)
        sizes[i] = random_size(&rng);
    uint64_t first_bytes = 0, bytes = 0;
    size_t first_pools = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (size_t i = 0; i < N; i++)
            assert_int_equal(shmb_fipc_jemalloc_alloc(j, sizes[i], &blocks[i]), 0);
        for (size_t i = 0; i < N; i++)
            assert_int_equal(shmb_fipc_jemalloc_free(j, blocks[i]), 0);
        size_t n = shmb_fipc_jemalloc_pools(j, &bytes);
        if (r == 0) {
            first_pools = n;
            first_bytes = bytes;
        }
        assert_int_equal(n, first_pools);
        assert_true(bytes == first_bytes);
    }
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
}

static void test_reuse_no_tcache(void **state)
{
    (void)state;
    blocks_are_reused(0);
}

static void test_reuse_tcache(void **state)
{
    (void)state;
    blocks_are_reused(1);
}

/* ---- several threads ---- */

enum { PER_THREAD = 1000 };

typedef struct thread_case {
    shmb_fipc_jemalloc_t *j;
    pthread_barrier_t *both;
    int keeper;          /* 1: allocates and frees one block before the other allocates */
    void *mine;          /* keeper: the block it freed (into its cache, with tcache) */
    void *got;           /* the other: the block it got meanwhile */
    block_t *blocks;     /* PER_THREAD blocks allocated at once with the other thread */
    shmb_rng_t rng;
    int ret;
} thread_case_t;

static void *run_thread(void *arg)
{
    thread_case_t *c = arg;
    int ret = 0;
    if (c->keeper && (ret = shmb_fipc_jemalloc_alloc(c->j, 4096, &c->mine)) == 0)
        ret = shmb_fipc_jemalloc_free(c->j, c->mine);
    pthread_barrier_wait(c->both);
    if (!c->keeper && ret == 0 && (ret = shmb_fipc_jemalloc_alloc(c->j, 4096, &c->got)) == 0)
        ret = shmb_fipc_jemalloc_free(c->j, c->got);
    pthread_barrier_wait(c->both); /* now both allocate at once */
    for (size_t i = 0; i < PER_THREAD && ret == 0; i++) {
        void *p;
        c->blocks[i].size = random_size(&c->rng);
        ret = shmb_fipc_jemalloc_alloc(c->j, c->blocks[i].size, &p);
        c->blocks[i].p = p;
    }
    pthread_barrier_wait(c->both); /* the main thread checks them */
    pthread_barrier_wait(c->both);
    for (size_t i = 0; i < PER_THREAD && ret == 0; i++)
        ret = shmb_fipc_jemalloc_free(c->j, c->blocks[i].p);
    c->ret = ret;
    return NULL;
}

/* Two threads on one allocator: with tcache, each has its own cache (the
 * block one freed stays in its cache, the other does not get it; one shared
 * cache would hand it over, LIFO), without, a freed block goes back to the
 * arena for anyone; blocks allocated at once by both are disjoint and in
 * the pools. */
static void two_threads(int tcache)
{
    size_t before = shmb_segment_registered();
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, tcache, &j), 0);
    pthread_barrier_t both;
    assert_int_equal(pthread_barrier_init(&both, NULL, 3), 0);
    block_t *blocks = calloc(2 * PER_THREAD, sizeof(*blocks));
    assert_non_null(blocks);
    thread_case_t c[2];
    pthread_t tid[2];
    for (int t = 0; t < 2; t++) {
        c[t] = (thread_case_t){.j = j, .both = &both, .keeper = t == 0, .blocks = blocks + t * PER_THREAD};
        shmb_rng_seed(&c[t].rng, 11 + (uint64_t)t);
        assert_int_equal(pthread_create(&tid[t], NULL, run_thread, &c[t]), 0);
    }
    pthread_barrier_wait(&both);
    pthread_barrier_wait(&both);
    pthread_barrier_wait(&both);
    for (size_t i = 0; i < 2 * PER_THREAD; i++)
        check_inside_a_pool(j, &blocks[i]);
    block_t *sorted = malloc(2 * PER_THREAD * sizeof(*sorted));
    assert_non_null(sorted);
    memcpy(sorted, blocks, 2 * PER_THREAD * sizeof(*sorted));
    qsort(sorted, 2 * PER_THREAD, sizeof(*sorted), by_address);
    for (size_t i = 0; i + 1 < 2 * PER_THREAD; i++)
        assert_true(sorted[i].p + sorted[i].size <= sorted[i + 1].p);
    free(sorted);
    pthread_barrier_wait(&both);
    for (int t = 0; t < 2; t++) {
        pthread_join(tid[t], NULL);
        assert_int_equal(c[t].ret, 0);
    }
    if (tcache)
        assert_ptr_not_equal(c[1].got, c[0].mine);
    else
        assert_ptr_equal(c[1].got, c[0].mine); /* the bin's first free region */
    pthread_barrier_destroy(&both);
    free(blocks);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(our_files(0), 0);
    assert_int_equal(shmb_segment_registered(), before);
}

static void test_two_threads_no_tcache(void **state)
{
    (void)state;
    two_threads(0);
}

static void test_two_threads_tcache(void **state)
{
    (void)state;
    two_threads(1);
}

static void test_destroy_keeps_pools(void **state)
{
    (void)state;
    size_t before = shmb_segment_registered();
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    void *p;
    assert_int_equal(shmb_fipc_jemalloc_alloc(j, 3 << 20, &p), 0);
    memset(p, 0x5a, 3 << 20);
    size_t npools = shmb_fipc_jemalloc_pools(j, NULL);
    assert_true(npools >= 1);
    uint64_t kept = 5;
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 0, &kept), 0);
    assert_true(kept == 5 + npools); /* added to */
    assert_int_equal(our_files(0), npools);
    assert_int_equal(shmb_segment_registered(), before);
    assert_int_equal(our_files(1), npools);
    assert_int_equal(our_files(0), 0);
}

/* The protection of the mapping holding addr, from /proc/self/maps
 * ("r--s"), into perms[5]. */
static void perms_of(const void *addr, char *perms)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512];
    perms[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char p[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && (uintptr_t)addr >= lo && (uintptr_t)addr < hi)
            memcpy(perms, p, 5);
    }
    fclose(f);
}

/* The lender lists its pools (ascending ids, all of them, their bytes as
 * counted); a borrower opens each by name read-only in a mapping of its
 * own and finds the lender's bytes at (pool id, offset). */
static void test_pool_list_and_borrower_attach(void **state)
{
    (void)state;
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    static const size_t sizes[] = {1 << 20, 3 << 20, 64 << 10};
    unsigned char *blocks[3];
    for (int b = 0; b < 3; b++) {
        assert_int_equal(shmb_fipc_jemalloc_alloc(j, sizes[b], (void **)&blocks[b]), 0);
        memset(blocks[b], 0x40 + b, sizes[b]);
    }
    uint64_t bytes = 0;
    const size_t npools = shmb_fipc_jemalloc_pools(j, &bytes);
    assert_int_equal(shmb_fipc_jemalloc_pool_list(j, NULL, 0), npools);
    shmb_fipc_pool_t *pools = calloc(npools + 1, sizeof(*pools));
    assert_non_null(pools);
    pools[npools].id = 777;
    assert_int_equal(shmb_fipc_jemalloc_pool_list(j, pools, npools), npools);
    assert_int_equal(pools[npools].id, 777); /* nothing past cap */
    uint64_t sum = 0;
    for (size_t i = 0; i < npools; i++) {
        sum += pools[i].bytes;
        assert_true(i == 0 || pools[i].id > pools[i - 1].id);
        char path[300];
        snprintf(path, sizeof(path), "/dev/shm%s", pools[i].name);
        assert_int_equal(access(path, F_OK), 0);
    }
    assert_true(sum == bytes);
    if (npools > 1) { /* a short list: the first pools only, the count of all */
        shmb_fipc_pool_t one[2];
        one[1].id = 555;
        assert_int_equal(shmb_fipc_jemalloc_pool_list(j, one, 1), npools);
        assert_int_equal(one[0].id, pools[0].id);
        assert_int_equal(one[1].id, 555);
    }
    for (int b = 0; b < 3; b++) {
        uint32_t id;
        uint64_t offset;
        assert_int_equal(shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(j), blocks[b], &id, &offset), 0);
        size_t i = 0;
        while (i < npools && pools[i].id != id)
            i++;
        assert_true(i < npools);
        void *base;
        int fd = -1;
        assert_int_equal(shmb_fipc_pool_attach(pools[i].name, pools[i].bytes, &base, &fd), 0);
        assert_true(fd >= 0);
        const unsigned char *lent = (const unsigned char *)base + offset;
        assert_true(lent != blocks[b]);
        for (size_t k = 0; k < sizes[b]; k += 4093)
            assert_int_equal(lent[k], 0x40 + b);
        char perms[5];
        perms_of(lent, perms);
        assert_string_equal(perms, "r--s"); /* a borrower only reads */
        assert_int_equal(shmb_fipc_pool_detach(base, pools[i].bytes, fd), 0);
        assert_int_equal(fcntl(fd, F_GETFD), -1); /* the descriptor went with it */
    }
    void *base;
    int fd;
    assert_int_equal(shmb_fipc_pool_attach(pools[0].name, 0, &base, &fd), -EINVAL);
    assert_int_equal(shmb_fipc_pool_attach("/shmb_test_no_such_pool", 4096, &base, &fd), -ENOENT);
    assert_string_equal(shmb_error_last()->call, "shm_open");
    free(pools);
    for (int b = 0; b < 3; b++)
        shmb_fipc_jemalloc_free(j, blocks[b]);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    shmb_fipc_jemalloc_t *j = (shmb_fipc_jemalloc_t *)&j;
    assert_int_equal(shmb_fipc_jemalloc_create("no_slash", 0, &j), -EINVAL);
    assert_ptr_equal(j, (shmb_fipc_jemalloc_t *)&j);
    assert_int_equal(shmb_fipc_jemalloc_destroy(NULL, 1, NULL), 0);
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    void *p = &p;
    assert_int_equal(shmb_fipc_jemalloc_alloc(j, 0, &p), -EINVAL);
    size_t npools = shmb_fipc_jemalloc_pools(j, NULL);
    assert_int_equal(shmb_fipc_jemalloc_alloc(j, (size_t)3 << 30, &p), -ENOMEM); /* above a pool */
    assert_ptr_equal(p, &p);
    assert_int_equal(shmb_fipc_jemalloc_pools(j, NULL), npools);
    assert_int_equal(shmb_fipc_jemalloc_free(j, NULL), 0);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(our_files(0), 0);
}

/* ---- object hand-off ---- */

static void test_handoff_verify(void **state)
{
    (void)state;
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 4096), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 1), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 1 << 20), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 0), -EINVAL);
    assert_int_equal(shmb_fipc_handoff_verify(NULL, 64), -EINVAL);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(our_files(0), 0);
}

/* Each planted fault fails the verification with its own error, and the
 * next clean run passes again. */
static void test_handoff_faults(void **state)
{
    (void)state;
    static const struct {
        int fault, err;
    } cases[] = {
        {SHMB_FIPC_FAULT_BORROW_ADDR, -EFAULT}, {SHMB_FIPC_FAULT_BLOB, -EBADMSG},
        {SHMB_FIPC_FAULT_RETURN, -EBADMSG},     {SHMB_FIPC_FAULT_EARLY_FREE, -ESTALE},
        {SHMB_FIPC_FAULT_DOUBLE_FREE, -ESTALE},
    };
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_fipc_fault = cases[i].fault;
        int rc = shmb_fipc_handoff_verify(j, 256);
        shmb_fipc_fault = SHMB_FIPC_FAULT_NONE;
        assert_int_equal(rc, cases[i].err);
        assert_int_equal(shmb_fipc_handoff_verify(j, 256), 0);
    }
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(our_files(0), 0);
}

/* Carries every request of the lender to the borrower and the reply back. */
static void lend_pools_in_process(shmb_fipc_jemalloc_t *j, shmb_fipc_lender_t *l, shmb_fipc_borrower_t *b)
{
    unsigned char msg[SHMB_FIPC_MSG_MAX], reply[SHMB_FIPC_MSG_MAX];
    size_t len, reply_len;
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), -EEXIST);
    assert_int_equal(shmb_fipc_borrower_receive(b, msg, len, reply, sizeof(reply), &reply_len), 0);
    assert_int_equal(shmb_fipc_lender_on_response(l, reply, reply_len), 0);
    shmb_fipc_pool_t pools[8];
    size_t n = shmb_fipc_jemalloc_pool_list(j, pools, 8);
    assert_true(n >= 1 && n <= 8);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(shmb_fipc_lender_lend_pool(l, pools[i].id, msg, sizeof(msg), &len), 0);
        assert_int_equal(shmb_fipc_borrower_receive(b, msg, len, reply, sizeof(reply), &reply_len), 0);
        assert_int_equal(shmb_fipc_lender_on_response(l, reply, reply_len), 0);
    }
    assert_int_equal(shmb_fipc_lender_lend_pool(l, pools[0].id, msg, sizeof(msg), &len), -EEXIST);
    assert_int_equal(shmb_fipc_lender_lend_pool(l, 999999, msg, sizeof(msg), &len), -ENOENT);
}

/* One object lent twice and borrowed twice: the lender keeps it until
 * both returns, and frees it once. Then a disconnected session. */
static void test_handoff_lent_twice(void **state)
{
    (void)state;
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *l;
    shmb_fipc_borrower_t *b;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_lender_create(j, &l), 0);
    assert_int_equal(shmb_fipc_borrower_create(&b), 0);
    shmb_fipc_object_t obj = {0}, got[2] = {{0}, {0}};
    assert_int_equal(shmb_fipc_lender_construct(l, 100, &obj), 0);
    unsigned char blob[2][SHMB_FIPC_HANDLE_BYTES], msg[SHMB_FIPC_MSG_MAX], ret[2][SHMB_FIPC_MSG_MAX];
    size_t len, ret_len[2];
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[0], sizeof(blob[0]), &len), -EINVAL); /* no arena lent */
    lend_pools_in_process(j, l, b);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[i], sizeof(blob[i]), &len), 0);
        assert_int_equal(len, SHMB_FIPC_HANDLE_BYTES);
    }
    assert_memory_equal(blob[0], blob[1], SHMB_FIPC_HANDLE_BYTES);
    assert_int_equal(shmb_fipc_lender_lent(l), 1);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(len, 0);
    assert_null(obj.addr);
    for (int i = 0; i < 2; i++)
        assert_int_equal(shmb_fipc_borrower_borrow(b, blob[i], SHMB_FIPC_HANDLE_BYTES, &got[i]), 0);
    assert_ptr_equal(got[0].addr, got[1].addr);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(shmb_fipc_object_release(&got[i], ret[i], sizeof(ret[i]), &ret_len[i]), 0);
        shmb_fipc_handle_t h, want;
        assert_int_equal(shmb_fipc_handle_decode(blob[i], SHMB_FIPC_HANDLE_BYTES, &want), 0);
        assert_int_equal(shmb_fipc_return_decode(ret[i], ret_len[i], &h), 0);
        assert_memory_equal(&h, &want, sizeof(h));
    }
    assert_int_equal(shmb_fipc_lender_on_return(l, ret[0], ret_len[0]), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 0);
    assert_int_equal(shmb_fipc_lender_lent(l), 1);
    assert_int_equal(shmb_fipc_lender_on_return(l, ret[1], ret_len[1]), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 1);
    assert_int_equal(shmb_fipc_lender_lent(l), 0);
    assert_int_equal(shmb_fipc_lender_on_return(l, ret[1], ret_len[1]), -ENOENT); /* returned already */

    /* an object still borrowed when the caller lets the borrower go (its
     * deleter keeps the session); then both sides disconnected: the lender
     * lends no more, the release returns nothing, the object stays lent */
    assert_int_equal(shmb_fipc_lender_construct(l, 100, &obj), 0);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[0], sizeof(blob[0]), &len), 0);
    assert_int_equal(shmb_fipc_borrower_borrow(b, blob[0], SHMB_FIPC_HANDLE_BYTES, &got[0]), 0);
    shmb_fipc_lender_disconnect(l);
    shmb_fipc_borrower_disconnect(b);
    shmb_fipc_borrower_destroy(b);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[1], sizeof(blob[1]), &len), -EPIPE);
    assert_int_equal(*(volatile unsigned char *)got[0].addr, *(volatile unsigned char *)obj.addr);
    assert_int_equal(shmb_fipc_object_release(&got[0], ret[0], sizeof(ret[0]), &ret_len[0]), 0);
    assert_int_equal(ret_len[0], 0);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 1);
    assert_int_equal(shmb_fipc_lender_lent(l), 1);
    shmb_fipc_lender_destroy(l); /* the session's reference goes: freed */
    assert_int_equal(shmb_fipc_lender_frees(NULL), 0);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(our_files(0), 0);
}

static void test_handoff_bad_messages(void **state)
{
    (void)state;
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *l;
    shmb_fipc_borrower_t *b;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_lender_create(j, &l), 0);
    assert_int_equal(shmb_fipc_borrower_create(&b), 0);
    unsigned char msg[SHMB_FIPC_MSG_MAX] = {0}, reply[SHMB_FIPC_MSG_MAX];
    size_t len = 99;
    shmb_fipc_object_t obj = {0}, got = {0};
    assert_int_equal(shmb_fipc_lender_construct(l, 0, &obj), -EINVAL);
    assert_int_equal(shmb_fipc_lender_construct(l, 64, &obj), 0);
    /* pool not lent yet: the arena is, the object's pool is not */
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, msg, sizeof(msg), &len), -ENOENT);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, msg, SHMB_FIPC_HANDLE_BYTES - 1, &len), -EINVAL);
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, SHMB_FIPC_MSG_MAX - 1, &len), -EINVAL);
    /* messages of the wrong kind or size */
    memset(msg, 0, sizeof(msg));
    assert_int_equal(shmb_fipc_borrower_receive(b, msg, 8, reply, sizeof(reply), &len), -EBADMSG);
    assert_int_equal(shmb_fipc_borrower_receive(b, msg, 0, reply, sizeof(reply), &len), -EBADMSG);
    assert_int_equal(shmb_fipc_lender_on_response(l, msg, 8), -EBADMSG);
    assert_int_equal(shmb_fipc_lender_on_return(l, msg, 16), -EBADMSG);
    assert_int_equal(shmb_fipc_borrower_borrow(b, msg, SHMB_FIPC_HANDLE_BYTES + 1, &got), -EBADMSG);
    assert_int_equal(shmb_fipc_borrower_borrow(b, msg, SHMB_FIPC_HANDLE_BYTES, &got), -ENOENT);
    assert_null(got.addr);
    shmb_fipc_handle_t h;
    assert_int_equal(shmb_fipc_handle_decode(msg, 3, &h), -EBADMSG);
    assert_int_equal(shmb_fipc_return_decode(msg, 16, &h), -EBADMSG);
    /* a pool the borrower cannot open: its Response says so */
    unsigned char lend_pool[64] = {0};
    uint32_t head[2] = {2, 1};
    memcpy(lend_pool, head, sizeof(head));
    uint64_t size = 4096;
    memcpy(lend_pool + 16, &size, sizeof(size));
    memcpy(lend_pool + 24, "/shmb_test_jem_none", 19);
    assert_int_equal(shmb_fipc_borrower_receive(b, lend_pool, 43, reply, sizeof(reply), &len), 0);
    assert_int_equal(shmb_fipc_lender_on_response(l, reply, len), -EREMOTEIO);
    /* releases: an empty object, a buffer too small */
    assert_int_equal(shmb_fipc_object_release(&got, msg, sizeof(msg), &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, SHMB_FIPC_MSG_MAX - 1, &len), -EINVAL);
    assert_non_null(obj.addr);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 1); /* never lent: freed at its last release */
    shmb_fipc_borrower_destroy(b);
    shmb_fipc_lender_destroy(l);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(our_files(0), 0);
}

/* The borrower in a forked child: it answers the lender's requests and, for
 * a blob, borrows (checking the pattern), then releases and sends the
 * return back, unless die_midway: then it exits holding the object. */
static int borrower_child(shmb_channel_t *ch, int die_midway)
{
    shmb_fipc_borrower_t *b;
    if (shmb_fipc_borrower_create(&b) != 0)
        return 1;
    unsigned char msg[SHMB_FIPC_MSG_MAX], reply[SHMB_FIPC_MSG_MAX];
    size_t len, reply_len;
    for (;;) {
        if (shmb_channel_recv(ch, msg, sizeof(msg), &len) != 0)
            return 2;
        if (len != SHMB_FIPC_HANDLE_BYTES) {
            if (shmb_fipc_borrower_receive(b, msg, len, reply, sizeof(reply), &reply_len) != 0 ||
                shmb_channel_send(ch, reply, reply_len) != 0)
                return 3;
            continue;
        }
        shmb_fipc_object_t obj = {0};
        if (shmb_fipc_borrower_borrow(b, msg, len, &obj) != 0)
            return 4;
        const unsigned char *p = obj.addr;
        for (size_t i = 0; i < 4096; i++)
            if (p[i] != 0x5a)
                return 5;
        if (die_midway)
            _exit(0);
        if (shmb_fipc_object_release(&obj, reply, sizeof(reply), &reply_len) != 0 ||
            shmb_channel_send(ch, reply, reply_len) != 0)
            return 6;
        shmb_fipc_borrower_destroy(b);
        return 0;
    }
}

/* The lender's side of one hand-off to a forked borrower: pools lent by
 * round trips, the object lent and dropped here; then the return, or
 * -EPIPE when the child died. */
static void handoff_across_fork(int die_midway)
{
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *l;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_lender_create(j, &l), 0);
    shmb_fipc_object_t obj = {0};
    assert_int_equal(shmb_fipc_lender_construct(l, 4096, &obj), 0);
    memset(obj.addr, 0x5a, 4096);
    shmb_channel_t here, there;
    pid_t pid = shmb_test_fork_pair(&there, &here);
    if (pid == 0)
        _exit(borrower_child(&there, die_midway));
    unsigned char msg[SHMB_FIPC_MSG_MAX];
    size_t len;
    shmb_fipc_pool_t pools[8];
    size_t n = shmb_fipc_jemalloc_pool_list(j, pools, 8);
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), 0);
    for (size_t i = 0; i <= n; i++) {
        if (i > 0)
            assert_int_equal(shmb_fipc_lender_lend_pool(l, pools[i - 1].id, msg, sizeof(msg), &len), 0);
        assert_int_equal(shmb_channel_send(&here, msg, len), 0);
        assert_int_equal(shmb_channel_recv(&here, msg, sizeof(msg), &len), 0);
        assert_int_equal(shmb_fipc_lender_on_response(l, msg, len), 0);
    }
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_channel_send(&here, msg, len), 0);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 0);
    int rc = shmb_channel_recv(&here, msg, sizeof(msg), &len);
    if (die_midway) {
        assert_int_equal(rc, -EPIPE);
        assert_int_equal(shmb_fipc_lender_frees(l), 0);
        assert_int_equal(shmb_fipc_lender_lent(l), 1);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(shmb_fipc_lender_on_return(l, msg, len), 0);
        assert_int_equal(shmb_fipc_lender_frees(l), 1);
        assert_int_equal(shmb_fipc_lender_lent(l), 0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    shmb_channel_close(&here);
    shmb_fipc_lender_destroy(l); /* a dead borrower's object goes with the session */
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(our_files(0), 0);
}

static void test_handoff_across_fork(void **state)
{
    (void)state;
    handoff_across_fork(0);
}

static void test_handoff_borrower_dies(void **state)
{
    (void)state;
    handoff_across_fork(1);
}

/* Fills what is left of /dev/shm with a file of ours (unlinked: its pages
 * stay taken while the descriptor is open). Returns the descriptor or -1. */
static int fill_shm(void)
{
    int fd = shm_open("/shmb_test_jem_filler", O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
        return -1;
    shm_unlink("/shmb_test_jem_filler");
    for (off_t chunk = 1 << 20, at = 0; chunk >= 4096; chunk /= 2)
        while (posix_fallocate(fd, at, chunk) == 0)
            at += chunk;
    return fd;
}

/* /dev/shm full: a 4 MiB tmpfs over it in a private mount namespace (in a
 * child), filled before the create (full_at_create) or right after it.
 * jemalloc's metadata pool is reserved, so a create that finds no room is
 * -ENOSPC, never a SIGBUS inside jemalloc (which writes its arena there);
 * blocks (unreserved, written by nobody but their user) may outgrow
 * /dev/shm until their first write, which the guard turns into -ENOSPC.
 * Nothing is left. */
static int full_shm_run(void *arg)
{
    const int full_at_create = *(const int *)arg;
    if (shmb_segment_install_signal_cleanup() != 0 || (full_at_create && fill_shm() < 0))
        return 10;
    shmb_fipc_jemalloc_t *j = NULL;
    int ret = shmb_fipc_jemalloc_create(prefix, 0, &j);
    if (full_at_create)
        return ret == -ENOSPC && strcmp(shmb_error_last()->call, "posix_fallocate") == 0 && our_files(0) == 0
                   ? 0 : 11;
    if (ret != 0 || fill_shm() < 0)
        return 12;
    enum { N = 64, BYTES = 256 << 10 }; /* 16 MiB of blocks */
    void *blocks[N];
    for (int i = 0; i < N; i++)
        if (shmb_fipc_jemalloc_alloc(j, BYTES, &blocks[i]) != 0)
            return 13;
    int nospace = 0;
    for (int i = 0; i < N; i++)
        nospace += shmb_segment_first_write(blocks[i], BYTES) == -ENOSPC;
    for (int i = 0; i < N; i++)
        shmb_fipc_jemalloc_free(j, blocks[i]);
    if (shmb_fipc_jemalloc_destroy(j, 1, NULL) != 0)
        return 14;
    return nospace == N && our_files(0) == 0 ? 0 : 15;
}

static void test_full_shm(void **state)
{
    (void)state;
    for (int full_at_create = 1; full_at_create >= 0; full_at_create--)
        shmb_test_in_tmpfs(4096, full_shm_run, &full_at_create,
                           full_at_create ? "/dev/shm full at the create" : "/dev/shm full after the create");
}

/* create_filled: n untouched blocks make the arena's pools (more blocks,
 * more pools; 64 blocks of 1 MB more than one pool); a failing allocation
 * (0 bytes) leaves no arena and nothing in /dev/shm. */
static void test_create_filled(void **state)
{
    (void)state;
    size_t pools[2];
    const uint64_t n[2] = {1, 64};
    for (int i = 0; i < 2; i++) {
        shmb_fipc_jemalloc_t *j = NULL;
        assert_int_equal(shmb_fipc_jemalloc_create_filled(prefix, n[i], 1 << 20, &j), 0);
        assert_non_null(j);
        uint64_t bytes = 0;
        pools[i] = shmb_fipc_jemalloc_pools(j, &bytes);
        assert_true(bytes >= n[i] << 20);
        assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    }
    assert_true(pools[0] >= 1 && pools[1] > pools[0]);
    shmb_fipc_jemalloc_t *bad = (shmb_fipc_jemalloc_t *)&pools;
    assert_int_equal(shmb_fipc_jemalloc_create_filled(prefix, 2, 0, &bad), -EINVAL);
    assert_null(bad);
    assert_int_equal(our_files(0), 0);
}

int main(void)
{
    prefix = shmb_test_prefix_init("/shmb_test_jem_");
    const struct CMUnitTest everywhere[] = {
        cmocka_unit_test(test_malloc_stays_glibcs),
        cmocka_unit_test_setup_teardown(test_repo_insert_erase, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_to_address_edges, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_from_address_edges, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_chain_is_dependent, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_batch_matches_reference, repo_setup,
                                        repo_teardown),
    };
    const struct CMUnitTest with_shm[] = {
        cmocka_unit_test_teardown(test_blocks_no_tcache, remove_leftovers),
        cmocka_unit_test_teardown(test_blocks_tcache, remove_leftovers),
        cmocka_unit_test_teardown(test_reuse_no_tcache, remove_leftovers),
        cmocka_unit_test_teardown(test_reuse_tcache, remove_leftovers),
        cmocka_unit_test_teardown(test_two_threads_no_tcache, remove_leftovers),
        cmocka_unit_test_teardown(test_two_threads_tcache, remove_leftovers),
        cmocka_unit_test_teardown(test_destroy_keeps_pools, remove_leftovers),
        cmocka_unit_test_teardown(test_bad_arguments, remove_leftovers),
        cmocka_unit_test_teardown(test_create_filled, remove_leftovers),
        cmocka_unit_test_teardown(test_pool_list_and_borrower_attach, remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_verify, remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_faults, remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_lent_twice, remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_bad_messages, remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_across_fork, remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_borrower_dies, remove_leftovers),
        cmocka_unit_test_teardown(test_full_shm, remove_leftovers),
    };
    int failed = shmb_test_group("repository", everywhere, NULL, NULL);
    if (failed != 0)
        return 1;
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "skip: /dev/shm is not writable\n");
        return 77;
    }
    return shmb_test_exit(shmb_test_group("allocator", with_shm, NULL, NULL));
}
