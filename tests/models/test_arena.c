
#include "helpers.h"

#include "shmbench/arena.h"
#include "shmbench/rng.h"

#define POOL (4u << 20) /* 4 MiB: 1024 granules */

typedef struct fixture {
    void *region;
    shmb_arena_t arena;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    f->region = mmap(NULL, POOL, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f->region == MAP_FAILED || shmb_arena_init(&f->arena, f->region, POOL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    shmb_arena_fini(&f->arena);
    munmap(f->region, POOL);
    free(f);
    return 0;
}

static void test_init_rejects_bad_regions(void **state)
{
    fixture_t *f = *state;
    shmb_arena_t a;
    assert_int_equal(shmb_arena_init(&a, f->region, 0), -EINVAL);
    assert_int_equal(shmb_arena_init(&a, f->region, 4095), -EINVAL);
    assert_int_equal(shmb_arena_init(&a, (char *)f->region + 64, 4096), -EINVAL);
    assert_int_equal(shmb_arena_init(&a, NULL, 4096), -EINVAL);
}

static void test_block_bytes(void **state)
{
    assert_int_equal(shmb_arena_block_bytes(0), 0);
    assert_int_equal(shmb_arena_block_bytes(1), 4096);
    assert_int_equal(shmb_arena_block_bytes(4096), 4096);
    assert_int_equal(shmb_arena_block_bytes(4097), 8192);
    assert_int_equal(shmb_arena_block_bytes(1000 * 1024), 1024 * 1024);
    assert_int_equal(shmb_arena_block_bytes(SIZE_MAX), 0);
}

static void test_handles_convert_both_ways(void **state)
{
    fixture_t *f = *state;
    shmb_handle_t h;
    assert_int_equal(shmb_arena_alloc(&f->arena, 100, &h), 0);
    void *p = shmb_arena_ptr(&f->arena, h);
    assert_ptr_equal(p, (char *)f->region + h);
    assert_true(shmb_arena_handle(&f->arena, p) == h);
    memset(p, 0xab, 100); /* the block is real memory */
}

static void test_zero_and_too_large(void **state)
{
    fixture_t *f = *state;
    shmb_handle_t h = 12345;
    assert_int_equal(shmb_arena_alloc(&f->arena, 0, &h), -EINVAL);
    assert_int_equal(shmb_arena_alloc(&f->arena, POOL + 1, &h), -ENOMEM);
    assert_true(h == 12345); /* untouched on error */
    assert_int_equal(shmb_arena_alloc(&f->arena, POOL, &h), 0); /* exactly the pool */
    assert_true(h == 0);
    assert_int_equal(shmb_arena_alloc(&f->arena, 1, &h), -ENOMEM);
}

static void test_bad_frees(void **state)
{
    fixture_t *f = *state;
    shmb_handle_t h;
    assert_int_equal(shmb_arena_alloc(&f->arena, 4096, &h), 0);
    assert_int_equal(shmb_arena_free(&f->arena, h + 1), -EINVAL);    /* not a block start */
    assert_int_equal(shmb_arena_free(&f->arena, h + 4096), -EINVAL); /* never allocated */
    assert_int_equal(shmb_arena_free(&f->arena, POOL), -EINVAL);     /* outside */
    assert_int_equal(shmb_arena_free(&f->arena, h), 0);
    assert_int_equal(shmb_arena_free(&f->arena, h), -EINVAL);        /* double free */
}

static void test_freed_block_is_reused(void **state)
{
    fixture_t *f = *state;
    shmb_handle_t a, b, c;
    assert_int_equal(shmb_arena_alloc(&f->arena, 8192, &a), 0);
    assert_int_equal(shmb_arena_alloc(&f->arena, 8192, &b), 0);
    assert_int_equal(shmb_arena_free(&f->arena, a), 0);
    assert_int_equal(shmb_arena_alloc(&f->arena, 5000, &c), 0); /* same class */
    assert_true(c == a);
    assert_true(b != a);
}

/* Blocks of `sizes` must lie inside the pool and not overlap. */
static void check_disjoint(const shmb_handle_t *h, const size_t *sizes, size_t n)
{
    unsigned char *owner = calloc(POOL / 4096, 1);
    for (size_t i = 0; i < n; i++) {
        size_t bytes = shmb_arena_block_bytes(sizes[i]);
        assert_true(h[i] % 4096 == 0);
        assert_true(h[i] + bytes <= POOL);
        for (size_t g = h[i] / 4096; g < (h[i] + bytes) / 4096; g++) {
            assert_int_equal(owner[g], 0);
            owner[g] = 1;
        }
    }
    free(owner);
}

static void fill_free_refill(fixture_t *f, const size_t *sizes, size_t n, uint64_t seed)
{
    shmb_handle_t *h = calloc(n, sizeof(*h));
    uint64_t *order = calloc(n, sizeof(*order));
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(shmb_arena_alloc(&f->arena, sizes[i], &h[i]), 0);
        order[i] = i;
    }
    check_disjoint(h, sizes, n);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, seed);
    shmb_rng_shuffle(&rng, order, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(shmb_arena_free(&f->arena, h[order[i]]), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(shmb_arena_alloc(&f->arena, sizes[i], &h[i]), 0);
    check_disjoint(h, sizes, n);
    free(h);
    free(order);
}

static void test_fill_free_random_refill_one_size(void **state)
{
    fixture_t *f = *state;
    enum { N = POOL / 16384 };
    size_t sizes[N];
    for (size_t i = 0; i < N; i++)
        sizes[i] = 16384;
    fill_free_refill(f, sizes, N, 1);
    /* The pool is exactly full: one more does not fit. */
    shmb_handle_t h;
    assert_int_equal(shmb_arena_alloc(&f->arena, 16384, &h), -ENOMEM);
}

static void test_fill_free_random_refill_mixed_sizes(void **state)
{
    fixture_t *f = *state;
    static const size_t classes[] = {1, 4096, 4097, 8192, 20000, 65536};
    size_t sizes[256];
    size_t n = 0, used = 0;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 2);
    while (n < 256) {
        size_t s = classes[shmb_rng_below(&rng, 6)];
        if (used + shmb_arena_block_bytes(s) > POOL)
            break;
        used += shmb_arena_block_bytes(s);
        sizes[n++] = s;
    }
    assert_true(n > 50);
    fill_free_refill(f, sizes, n, 3);
}

static void test_reset_forgets_everything(void **state)
{
    fixture_t *f = *state;
    shmb_handle_t h;
    assert_int_equal(shmb_arena_alloc(&f->arena, POOL, &h), 0);
    shmb_arena_reset(&f->arena);
    assert_int_equal(shmb_arena_free(&f->arena, h), -EINVAL);
    assert_int_equal(shmb_arena_alloc(&f->arena, POOL, &h), 0);
    assert_true(h == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init_rejects_bad_regions, setup, teardown),
        cmocka_unit_test(test_block_bytes),
        cmocka_unit_test_setup_teardown(test_handles_convert_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_and_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_frees, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freed_block_is_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_free_random_refill_one_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_free_random_refill_mixed_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_forgets_everything, setup, teardown),
    };
    return shmb_test_run(tests, NULL, NULL);
}
