#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>

#include "helpers.h"

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

/* glibc's, or a sanitizer's wrapping it (libasan/libtsan with gcc, linked into this program with clang). */
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

/* ---- allocator over SHM pools ---- */

static const char *prefix; /* "/shmb_test_jem_<pid>_" (helpers.h) */

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

static void test_blocks(void **state)
{
    const int tcache = shmb_test_arg(state);
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
    assert_true(npools >= 1 && npools == shmb_test_ours() && npools == shmb_segment_registered() - before);
    assert_true(bytes >= 2000 * 1024ull && bytes <= 2 * SHMB_FIPC_JEMALLOC_MAX_POOL);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(shmb_fipc_jemalloc_free(j, b[i].p), 0);
    free(b);
    uint64_t kept = 0;
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, &kept), 0);
    assert_true(kept == 0);
    assert_int_equal(shmb_test_ours(), 0);
    assert_int_equal(shmb_segment_registered(), before);
}

static void test_reuse(void **state)
{
    const int tcache = shmb_test_arg(state);
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

/* Two threads, one allocator: tcache keeps a freed block per thread, else back to the arena; blocks disjoint. */
static void test_two_threads(void **state)
{
    const int tcache = shmb_test_arg(state);
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
    assert_int_equal(shmb_test_ours(), 0);
    assert_int_equal(shmb_segment_registered(), before);
}

static void test_destroy_keeps_pools(void **state)
{
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
    assert_int_equal(shmb_test_ours(), npools);
    assert_int_equal(shmb_segment_registered(), before);
    assert_int_equal((size_t)shmb_test_remove_ours(), npools);
    assert_int_equal(shmb_test_ours(), 0);
}

/* The protection of the mapping holding addr, from /proc/self/maps ("r--s"), into perms[5]. */
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

/* The lender lists its pools (ascending ids, bytes); a borrower maps each and finds its bytes at (id, offset). */
static void test_pool_list_and_borrower_attach(void **state)
{
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
    assert_int_equal(shmb_test_ours(), 0);
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

/* A full 4 MiB /dev/shm, before the create (-ENOSPC: the metadata pool is reserved, never a SIGBUS
 * in jemalloc) or after it (each block's guarded first write -ENOSPC); nothing left. */
static int full_shm_run(void *arg)
{
    const int full_at_create = *(const int *)arg;
    if (shmb_segment_install_signal_cleanup() != 0 || (full_at_create && fill_shm() < 0))
        return 10;
    shmb_fipc_jemalloc_t *j = NULL;
    int ret = shmb_fipc_jemalloc_create(prefix, 0, &j);
    if (full_at_create)
        return ret == -ENOSPC && strcmp(shmb_error_last()->call, "posix_fallocate") == 0 && shmb_test_ours() == 0
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
    return nospace == N && shmb_test_ours() == 0 ? 0 : 15;
}

static void test_full_shm(void **state)
{
    for (int full_at_create = 1; full_at_create >= 0; full_at_create--)
        shmb_test_in_tmpfs(4096, full_shm_run, &full_at_create,
                           full_at_create ? "/dev/shm full at the create" : "/dev/shm full after the create");
}

/* create_filled: n untouched blocks make the pools (64 x 1 MB: more than one); a failure leaves nothing. */
static void test_create_filled(void **state)
{
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
    assert_int_equal(shmb_test_ours(), 0);
}

int main(void)
{
    prefix = shmb_test_prefix_init("/shmb_test_jem_");
    static const int off = 0, on = 1;
    const struct CMUnitTest everywhere[] = {
        cmocka_unit_test(test_malloc_stays_glibcs),
    };
    const struct CMUnitTest with_shm[] = {
        shmb_test_case_with("test_blocks_no_tcache", test_blocks, &off, shmb_test_remove_leftovers),
        shmb_test_case_with("test_blocks_tcache", test_blocks, &on, shmb_test_remove_leftovers),
        shmb_test_case_with("test_reuse_no_tcache", test_reuse, &off, shmb_test_remove_leftovers),
        shmb_test_case_with("test_reuse_tcache", test_reuse, &on, shmb_test_remove_leftovers),
        shmb_test_case_with("test_two_threads_no_tcache", test_two_threads, &off, shmb_test_remove_leftovers),
        shmb_test_case_with("test_two_threads_tcache", test_two_threads, &on, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_destroy_keeps_pools, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_bad_arguments, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_create_filled, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_pool_list_and_borrower_attach, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_full_shm, shmb_test_remove_leftovers),
    };
    if (shmb_test_group("malloc", everywhere, NULL, NULL) != 0)
        return 1;
    if (!shmb_test_shm_writable())
        return 77;
    return shmb_test_exit(shmb_test_group("allocator", with_shm, NULL, NULL));
}
