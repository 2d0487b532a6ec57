/* upstream (-DSHMB_MOONCAKE_SOURCE, docs/upstream.md): Mooncake's OffsetAllocator and TENT's engine against
 * the models and planted faults, and the alloc and transfer benchmarks' mooncake_upstream rows. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc/alloc_fixture.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/upstream.h"

#define SLOTS 2048u

typedef struct {
    unsigned char *base;
    size_t bytes;
    shmb_upstream_offset_t *a;
    void *addr[SLOTS];
    size_t size[SLOTS];
} fixture_t;

static void open_fixture(fixture_t *f, size_t bytes)
{
    memset(f, 0, sizeof(*f));
    f->bytes = bytes;
    f->base = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(f->base != MAP_FAILED);
    assert_int_equal(shmb_upstream_offset_create(f->base, bytes, SLOTS, &f->a), 0);
    assert_non_null(f->a);
}

static void close_fixture(fixture_t *f)
{
    shmb_upstream_offset_destroy(f->a);
    assert_int_equal(munmap(f->base, f->bytes), 0);
}

/* Fills slots [0, n) with blocks of `bytes`. */
static void fill(fixture_t *f, uint32_t n, size_t bytes)
{
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(shmb_upstream_offset_alloc(f->a, i, bytes, &f->addr[i]), 0);
        f->size[i] = bytes;
    }
}

static void test_commit_named(void **state)
{
    (void)state;
    assert_int_equal(shmb_upstream_available(), 1);
    assert_true(strlen(shmb_upstream_commit()) >= 7);
}

/* Each size's working set in range and disjoint, freed in a scattered order and allocated again. */
static void test_in_range_disjoint_reusable(void **state)
{
    (void)state;
    static const size_t sizes[] = {4096, 65536, 1 << 20};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        fixture_t *f = malloc(sizeof(*f));
        assert_non_null(f);
        open_fixture(f, (size_t)SLOTS * sizes[k] + (sizes[k] << 4));
        fill(f, SLOTS, sizes[k]);
        assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, SLOTS), 0);
        for (uint32_t i = 0; i < SLOTS; i += 3) {
            assert_int_equal(shmb_upstream_offset_free(f->a, i), 0);
            f->addr[i] = NULL;
        }
        assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, SLOTS), 0);
        for (uint32_t i = 0; i < SLOTS; i += 3)
            assert_int_equal(shmb_upstream_offset_alloc(f->a, i, sizes[k], &f->addr[i]), 0);
        assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, SLOTS), 0);
        close_fixture(f);
        free(f);
    }
}

/* Everything freed merges back: the whole range is one block again. */
static void test_freed_merge_to_whole(void **state)
{
    (void)state;
    fixture_t *f = malloc(sizeof(*f));
    assert_non_null(f);
    open_fixture(f, (size_t)64 << 20);
    fill(f, 1024, 65536);
    void *whole = NULL;
    assert_int_equal(shmb_upstream_offset_alloc(f->a, 1024, (size_t)64 << 20, &whole), -ENOMEM);
    for (uint32_t i = 0; i < 1024; i++)
        assert_int_equal(shmb_upstream_offset_free(f->a, i), 0);
    assert_int_equal(shmb_upstream_offset_alloc(f->a, 1024, (size_t)64 << 20, &whole), 0);
    assert_ptr_equal(whole, f->base);
    close_fixture(f);
    free(f);
}

static void test_slots_misused(void **state)
{
    (void)state;
    fixture_t *f = malloc(sizeof(*f));
    assert_non_null(f);
    open_fixture(f, (size_t)1 << 20);
    void *p = NULL;
    assert_int_equal(shmb_upstream_offset_alloc(f->a, 0, 4096, &p), 0);
    assert_int_equal(shmb_upstream_offset_alloc(f->a, 0, 4096, &p), -EBUSY);
    assert_int_equal(shmb_upstream_offset_free(f->a, 0), 0);
    assert_int_equal(shmb_upstream_offset_free(f->a, 0), -ENOENT);
    assert_int_equal(shmb_upstream_offset_alloc(f->a, SLOTS, 4096, &p), -EINVAL);
    assert_int_equal(shmb_upstream_offset_alloc(f->a, 1, 0, &p), -EINVAL);
    assert_int_equal(shmb_upstream_offset_alloc(f->a, 1, 4096, NULL), -EINVAL);
    assert_int_equal(shmb_upstream_offset_free(f->a, SLOTS), -EINVAL);
    assert_int_equal(shmb_upstream_offset_free(NULL, 0), -EINVAL);
    assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, SLOTS + 1), -EINVAL);
    shmb_upstream_offset_t *b = NULL;
    assert_int_equal(shmb_upstream_offset_create(NULL, 4096, 1, &b), -EINVAL);
    assert_int_equal(shmb_upstream_offset_create(f->base, 0, 1, &b), -EINVAL);
    assert_int_equal(shmb_upstream_offset_create(f->base, 4096, 0, &b), -EINVAL);
    assert_int_equal(shmb_upstream_offset_create((void *)(uintptr_t)-4096, 8192, 1, &b), -EINVAL);
    assert_null(b);
    shmb_upstream_offset_destroy(NULL);
    close_fixture(f);
    free(f);
}

/* Each fault planted in what the caller recorded fails the check. */
static void test_check_catches_faults(void **state)
{
    (void)state;
    fixture_t *f = malloc(sizeof(*f));
    assert_non_null(f);
    open_fixture(f, (size_t)64 << 20);
    fill(f, 16, 65536);
    assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, 16), 0);

    void *saved = f->addr[5];
    f->addr[5] = (unsigned char *)saved + 4096; /* not the handle's address */
    assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, 16), -EFAULT);
    f->addr[5] = saved;

    f->size[15] = f->bytes; /* runs past the range's end */
    assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, 16), -EFAULT);
    f->size[15] = 65536;

    f->size[3] = 65536 + 1; /* overlaps its neighbour */
    assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, 16), -EEXIST);
    f->size[3] = 65536;

    void *held = f->addr[7];
    f->addr[7] = NULL; /* the caller lost a block the allocator holds */
    assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, 16), -ENOENT);
    f->addr[7] = held;
    assert_int_equal(shmb_upstream_offset_free(f->a, 7), 0); /* and the reverse */
    assert_int_equal(shmb_upstream_offset_check(f->a, f->addr, f->size, 16), -ENOENT);
    close_fixture(f);
    free(f);
}

/* TENT's SHM buffers this process made in /dev/shm (mooncake_<pid>_...: allocateLocalMemory). */
int our_tent_buffers(void); /* test_upstream_transfer.c's too */
int our_tent_buffers(void)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "mooncake_%ld_", (long)getpid());
    DIR *d = opendir("/dev/shm");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* The group's teardown: what a failed case left in /dev/shm, TENT's buffers
 * (mooncake_<pid>_*) and the allocation cases' pools (shmb_tu_<pid>_*). */
static int remove_tent_buffers(void **state)
{
    (void)state;
    char prefix[2][64];
    snprintf(prefix[0], sizeof(prefix[0]), "mooncake_%ld_", (long)getpid());
    snprintf(prefix[1], sizeof(prefix[1]), "shmb_tu_%ld_", (long)getpid());
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        for (int k = 0; k < 2; k++)
            if (strncmp(e->d_name, prefix[k], strlen(prefix[k])) == 0) {
                char name[300];
                snprintf(name, sizeof(name), "/%s", e->d_name);
                shm_unlink(name);
            }
    closedir(d);
    return 0;
}

static void test_tent_request_lands(void **state)
{
    (void)state;
    if (!shmb_upstream_tent_available()) {
        skip(); /* built with -DSHMB_MOONCAKE_TENT=OFF */
        return;
    }
    enum { BUFFERS = 10, BYTES = 65536 };
    shmb_upstream_tent_t *t = NULL;
    assert_int_equal(shmb_upstream_tent_create(BUFFERS, BYTES, 4096, &t), 0);
    assert_int_equal(our_tent_buffers(), BUFFERS + 1);
    void *landed[BUFFERS];
    for (uint32_t b = 0; b < BUFFERS; b++) {
        const uint64_t off = (uint64_t)b * 4096;
        assert_int_equal(shmb_upstream_tent_submit(t, &b, &off, 1, 4096, &landed[b]), 0);
        assert_int_equal(shmb_upstream_tent_check(t, b, off, landed[b]), 0);
    }
    /* Planted: the address of another buffer, or of another byte. */
    assert_int_equal(shmb_upstream_tent_check(t, 3, 3 * 4096, landed[4]), -EFAULT);
    assert_int_equal(shmb_upstream_tent_check(t, 3, 3 * 4096 + 64, landed[3]), -EFAULT);
    assert_int_equal(shmb_upstream_tent_check(t, 3, 3 * 4096, NULL), -EFAULT);

    /* Relocation alone: the same byte, through its own mapping; a relocation
     * into one buffer is not the byte of another. */
    void *local[2];
    for (uint32_t b = 0; b < 2; b++) {
        assert_int_equal(shmb_upstream_tent_relocate(t, b + 6, 128, 64, &local[b]), 0);
        assert_int_equal(shmb_upstream_tent_check(t, b + 6, 128, local[b]), 0);
    }
    assert_int_equal(shmb_upstream_tent_check(t, 6, 128, local[1]), -EFAULT);
    assert_int_equal(shmb_upstream_tent_relocate(t, BUFFERS, 0, 64, &local[0]), -ERANGE);
    assert_int_equal(shmb_upstream_tent_relocate(t, 0, BYTES - 32, 64, &local[0]), -ERANGE);

    /* A batch: the last request's landing is checked. */
    uint32_t bufs[4] = {9, 2, 7, 5};
    uint64_t offs[4] = {0, 4096, 8192, BYTES - 4096};
    void *last = NULL;
    assert_int_equal(shmb_upstream_tent_submit(t, bufs, offs, 4, 4096, &last), 0);
    assert_int_equal(shmb_upstream_tent_check(t, 5, BYTES - 4096, last), 0);

    uint32_t b = BUFFERS;
    uint64_t off = 0;
    assert_int_equal(shmb_upstream_tent_submit(t, &b, &off, 1, 4096, NULL), -ERANGE);
    b = 0, off = BYTES - 4095;
    assert_int_equal(shmb_upstream_tent_submit(t, &b, &off, 1, 4096, NULL), -ERANGE);
    assert_int_equal(shmb_upstream_tent_submit(t, &b, &off, 1, 8192, NULL), -EINVAL); /* > the source */
    assert_null(shmb_upstream_tent_buffer(t, BUFFERS));
    assert_non_null(shmb_upstream_tent_buffer(t, 0));
    shmb_upstream_tent_destroy(t);
    assert_int_equal(our_tent_buffers(), 0);
}

/* ---- the allocation benchmark's mooncake_upstream rows ---- */

static char alloc_prefix[64];

static int our_alloc_segments(void)
{
    int n = 0;
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, alloc_prefix + 1, strlen(alloc_prefix) - 1) == 0;
    if (d)
        closedir(d);
    return n;
}

static shmb_alloc_config_t alloc_config(void)
{
    snprintf(alloc_prefix, sizeof(alloc_prefix), "/shmb_tu_%ld_", (long)getpid());
    return shmb_test_alloc_small(alloc_prefix);
}

static size_t rows_of(const shmb_rows_t *rows, const char *step, const char *system, int ratio)
{
    size_t n = 0;
    for (size_t i = 0; i < rows->n; i++)
        n += strcmp(rows->v[i].step, step) == 0 && strcmp(rows->v[i].system, system) == 0 &&
             (rows->v[i].vs[0] != '\0') == ratio;
    return n;
}

static void test_alloc_rows_paired(void **state)
{
    (void)state;
    shmb_alloc_config_t c = alloc_config();
    const int sys[] = {SHMB_SYSTEM_MOONCAKE, SHMB_SYSTEM_MOONCAKE_UPSTREAM, SHMB_SYSTEM_MOONCAKE};
    const char *names[] = {"mooncake", SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME, "mooncake_control"};
    c.nsystems = 3;
    c.run[SHMB_ALLOC_POSIX] = c.run[SHMB_ALLOC_OFFSET] = c.run[SHMB_ALLOC_OFFSET_BARE] = 1;
    for (int s = 0; s < 3; s++) {
        c.systems[s] = sys[s];
        c.system_names[s] = names[s];
    }
    shmb_rows_t rows = {0};
    uint64_t kept = 0;
    char why[256] = "";
    assert_int_equal(shmb_alloc_bench_run(&c, &rows, &kept, why, sizeof(why)), 0);
    /* per size (4, 8 KB): the bare rows of upstream and its ratio; no other row of it */
    for (const char *const *step = (const char *const[]){"alloc_bare", "free_bare", NULL}; *step; step++) {
        assert_int_equal(rows_of(&rows, *step, "mooncake_upstream", 0), 2);
        assert_int_equal(rows_of(&rows, *step, "mooncake_upstream", 1), 2);
        assert_int_equal(rows_of(&rows, *step, "mooncake", 0), 2);
    }
    for (const char *const *step = (const char *const[]){"alloc", "free", "alloc_reuse", "register", NULL}; *step;
         step++) {
        assert_int_equal(rows_of(&rows, *step, "mooncake_upstream", 0), 0);
        assert_int_equal(rows_of(&rows, *step, "mooncake_control", 1), *step[0] == 'r' ? 6 : 2);
    }
    /* every question in whole blocks of the balanced order of 3 systems and of 2 (lcm: 12) */
    for (size_t i = 0; i < rows.n; i++)
        if (rows.v[i].vs[0])
            assert_int_equal(rows.v[i].iterations % 12, 0);
    shmb_rows_free(&rows);
    /* upstream is never the baseline, nor where it was not built */
    c.systems[0] = SHMB_SYSTEM_MOONCAKE_UPSTREAM;
    assert_int_equal(shmb_alloc_bench_run(&c, &rows, &kept, why, sizeof(why)), -EINVAL);
    assert_int_equal(our_alloc_segments(), 0);
}

/* Swaps blocks 0 and 1: both in range and disjoint, each not its slot's. */
static void plant_swap(void **blocks, uint64_t per_thread, int threads, void *arg)
{
    (void)per_thread, (void)threads, (void)arg;
    void *b = blocks[0];
    blocks[0] = blocks[1];
    blocks[1] = b;
}

static void test_alloc_rows_system_and_faults(void **state)
{
    (void)state;
    shmb_alloc_config_t c = alloc_config();
    c.system_rows = c.upstream = 1;
    shmb_rows_t rows = {0};
    uint64_t kept = 0;
    char why[256] = "";
    assert_int_equal(shmb_alloc_bench_run(&c, &rows, &kept, why, sizeof(why)), 0);
    /* the --system rows: alloc_bare, free_bare measured, every other step a dash */
    for (size_t i = 0; i < rows.n; i++) {
        const int bare = strcmp(rows.v[i].step, "alloc_bare") == 0 || strcmp(rows.v[i].step, "free_bare") == 0;
        assert_int_equal(rows.v[i].ns.p50 > 0, bare);
    }
    assert_int_equal(rows.n, 2 * (3 + 5)); /* per size: register x 3, alloc, free, alloc_reuse, alloc_bare, free_bare */
    shmb_rows_free(&rows);

    shmb_alloc_hook_t hook = {.check = plant_swap};
    assert_int_equal(shmb_alloc_bench_run_hooked(&c, &hook, &rows, &kept, why, sizeof(why)), -EPROTO);
    assert_non_null(strstr(why, "upstream_offset_bare (alloc)"));
    assert_non_null(strstr(why, "not its handle's"));
    assert_int_equal(rows.n, 0);
    assert_int_equal(our_alloc_segments(), 0);

    /* the frees' check, straight on the pool: one block left live fails it */
    shmb_test_pool_frees_checked(&c, SHMB_ALLOC_UPSTREAM_BARE, "upstream_offset_bare", our_alloc_segments,
                                 "freed not once", 1);
    assert_int_equal(our_alloc_segments(), 0);
}

/* TENT's transfer view (transfer_upstream.c): translate and submit land and pass the landing check; a
 * landing checked as another's, a part upstream does not run, a submit past the buffers fail (-EPROTO). */
void test_transfer_view(void **state);   /* test_upstream_transfer.c */
void test_transfer_spread(void **state);

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_named),
        cmocka_unit_test(test_in_range_disjoint_reusable),
        cmocka_unit_test(test_freed_merge_to_whole),
        cmocka_unit_test(test_slots_misused),
        cmocka_unit_test(test_check_catches_faults),
        cmocka_unit_test(test_tent_request_lands),
        cmocka_unit_test(test_alloc_rows_paired),
        cmocka_unit_test(test_alloc_rows_system_and_faults),
        cmocka_unit_test(test_transfer_view),
        cmocka_unit_test(test_transfer_spread),
    };
    return cmocka_run_group_tests(tests, NULL, remove_tent_buffers);
}
