/* alloc_space: utilization at the first failure and fragmentation, on
 * pools whose answers are known by hand. */

#include "helpers.h"

#include "alloc/alloc_internal.h"

#define MIB (1ull << 20)

static int remove_leftovers(void **state)
{
    assert_int_equal(shmb_test_remove_ours(), 0);
    return 0;
}

static shmb_alloc_space_config_t config(uint64_t pool_mb, const shmb_alloc_space_class_t *mix, uint64_t rounds)
{
    return (shmb_alloc_space_config_t){.pool_bytes = pool_mb * MIB, .rounds = rounds, .free_percent = 50,
                                       .mix = mix, .nmix = mix ? 1 : 0, .seed = 7,
                                       .shm_prefix = shmb_test_prefix()};
}

static void test_draw_and_fragmentation(void **state)
{
    for (uint64_t r = 0; r < 200; r++) {
        const uint64_t want = r % 100 < 70 ? 4096 : r % 100 < 90 ? 262144 : 3274752;
        assert_int_equal(shmb_alloc_space_draw(NULL, 0, r), want);
    }
    const shmb_alloc_space_class_t one = {1000, 100};
    assert_int_equal(shmb_alloc_space_draw(&one, 1, 99), 1000);
    assert_true(shmb_alloc_space_fragmentation(0, 0) == 0.0);
    assert_true(shmb_alloc_space_fragmentation(8, 8) == 0.0);
    assert_true(shmb_alloc_space_fragmentation(4, 8) == 0.5);
}

static void test_bad_config(void **state)
{
    shmb_alloc_space_t r = {.fill_blocks = 77};
    char why[256] = "";
    shmb_alloc_space_config_t cfg = config(64, NULL, 0);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_ARENA, &r, NULL, why, sizeof(why)), -EINVAL);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET_BARE, &r, NULL, why, sizeof(why)), -EINVAL);
    cfg.free_percent = 0;
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET, &r, NULL, why, sizeof(why)), -EINVAL);
    const shmb_alloc_space_class_t short_mix = {4096, 90};
    cfg = config(64, &short_mix, 0);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET, &r, NULL, why, sizeof(why)), -EINVAL);
    assert_int_equal(r.fill_blocks, 77); /* untouched on failure */
}

/* 4 MiB blocks (a bin size) fill 64 MiB exactly: the 17th fails, util 1,
 * nothing free; in 66 MiB, still 16 (util 64/66), 2 MiB free in one piece. */
static void test_offset_first_failure(void **state)
{
    const shmb_alloc_space_class_t four = {4 * MIB, 100};
    char why[256] = "";
    shmb_alloc_space_t r;
    shmb_alloc_space_config_t cfg = config(64, &four, 0);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET, &r, NULL, why, sizeof(why)), 0);
    assert_int_equal(r.fill_blocks, 16);
    assert_true(r.utilization == 1.0);
    assert_int_equal(r.has_free, 1);
    assert_int_equal(r.total_free, 0);
    assert_true(r.fragmentation == 0.0);
    cfg = config(66, &four, 0);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET, &r, NULL, why, sizeof(why)), 0);
    assert_int_equal(r.fill_blocks, 16);
    assert_true(r.utilization == 64.0 / 66.0);
    assert_int_equal(r.total_free, 2 * MIB);
    assert_int_equal(r.largest_free, 2 * MIB);
    assert_int_equal(r.checks, 1);
}

/* A request larger than the pool fails first: nothing live, the pool one
 * free block (offset: exactly; bipc: but for the block's header). */
static void test_empty_pool_unfragmented(void **state)
{
    const shmb_alloc_space_class_t huge = {128 * MIB, 100};
    char why[256] = "";
    shmb_alloc_space_t r;
    shmb_alloc_space_config_t cfg = config(64, &huge, 2);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET, &r, NULL, why, sizeof(why)), 0);
    assert_int_equal(r.fill_blocks, 0);
    assert_int_equal(r.total_free, 64 * MIB);
    assert_int_equal(r.largest_free, 64 * MIB);
    assert_true(r.fragmentation == 0.0);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_BIPC, &r, NULL, why, sizeof(why)), 0);
    assert_int_equal(r.fill_blocks, 0);
    assert_true(r.total_free > 63 * MIB && r.largest_free <= r.total_free);
    assert_true(r.fragmentation < 1e-6);
}

/* Holes planted by hand: 16 blocks of 4 MiB in 64 MiB, blocks 3 and 9
 * freed: 8 MiB free, 4 MiB the largest (offset: 0.5 exactly; bipc's
 * largest is the largest request the probe found, which allocates, and one
 * byte more does not). */
static void test_planted_holes(void **state)
{
    const shmb_alloc_kind_t kinds[] = {SHMB_ALLOC_OFFSET, SHMB_ALLOC_BIPC};
    for (size_t k = 0; k < 2; k++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kinds[k]);
        shmb_alloc_pool_t p = {.ops = ops, .blocks = 32};
        assert_int_equal(ops->create(&p, shmb_test_prefix(), 64 * MIB + (k ? MIB : 0)), 0);
        void *blocks[16];
        uint64_t total = 0, largest = 0, order[2] = {3, 9};
        assert_int_equal(ops->alloc(&p, 4 * MIB, blocks, NULL, 16), 0);
        assert_int_equal(ops->space(&p, &total, &largest), 0);
        const uint64_t tail = total;
        assert_int_equal(ops->free(&p, blocks, NULL, order, 2), 0);
        assert_int_equal(ops->space(&p, &total, &largest), 0);
        if (k == 0) {
            assert_int_equal(total, 8 * MIB);
            assert_int_equal(largest, 4 * MIB);
            assert_true(shmb_alloc_space_fragmentation(largest, total) == 0.5);
        } else {
            void *probe;
            assert_true(total >= tail + 8 * MIB && largest >= 4 * MIB && largest < 4 * MIB + 4096);
            assert_true(shmb_alloc_space_fragmentation(largest, total) > 0.3);
            assert_int_equal(ops->alloc(&p, largest, &probe, NULL, 1), 0);
            assert_int_equal(ops->free(&p, &probe, NULL, &(uint64_t){0}, 1), 0);
            assert_int_equal(ops->alloc(&p, largest + 1, &probe, NULL, 1), -ENOMEM);
        }
        uint64_t rest[14], n = 0;
        for (uint64_t i = 0; i < 16; i++)
            if (i != 3 && i != 9)
                rest[n++] = i;
        assert_int_equal(ops->free(&p, blocks, NULL, rest, n), 0);
        uint64_t kept = 0;
        assert_int_equal(ops->destroy(&p, 1, &kept), 0);
    }
}

/* The KV mix: the same seed, the same answers; two rows per allocator with
 * utilization and fragmentation in the note ('-' for jemalloc). */
static void test_kv_mix_rows(void **state)
{
    char why[256] = "";
    shmb_alloc_space_t a, b;
    shmb_alloc_space_config_t cfg = config(128, NULL, 3);
    shmb_rows_t rows = {0};
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET, &a, &rows, why, sizeof(why)), 0);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_OFFSET, &b, NULL, why, sizeof(why)), 0);
    assert_int_equal(a.fill_blocks, b.fill_blocks);
    assert_int_equal(a.total_free, b.total_free);
    assert_int_equal(a.largest_free, b.largest_free);
    assert_true(a.utilization > 0.5 && a.utilization <= 1.0);
    assert_int_equal(a.checks, 4);
    assert_true(a.frees > 0 && a.allocs >= a.fill_blocks);
    assert_int_equal(shmb_alloc_space_run(&cfg, SHMB_ALLOC_JEMALLOC, &b, &rows, why, sizeof(why)), 0);
    assert_int_equal(b.has_free, 0);
    assert_true(b.utilization > 0.0 && b.utilization <= 1.0);
    assert_int_equal(rows.n, 4);
    assert_string_equal(rows.v[0].variant, "offset");
    assert_string_equal(rows.v[0].step, "space_alloc");
    assert_string_equal(rows.v[1].step, "space_free");
    assert_string_equal(rows.v[0].arg_name, "pool_mb");
    assert_int_equal(rows.v[0].arg, 128);
    assert_int_equal(rows.v[0].iterations, a.allocs);
    assert_non_null(strstr(rows.v[0].note, "util 0."));
    assert_non_null(strstr(rows.v[2].note, "frag -"));
    assert_string_equal(rows.v[3].note, "verified 4 live sets");
    shmb_rows_free(&rows);
}

int main(void)
{
    shmb_test_prefix_init("/shmb_test_space_");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draw_and_fragmentation),
        cmocka_unit_test_teardown(test_bad_config, remove_leftovers),
        cmocka_unit_test_teardown(test_offset_first_failure, remove_leftovers),
        cmocka_unit_test_teardown(test_empty_pool_unfragmented, remove_leftovers),
        cmocka_unit_test_teardown(test_planted_holes, remove_leftovers),
        cmocka_unit_test_teardown(test_kv_mix_rows, remove_leftovers),
    };
    if (!shmb_test_shm_writable())
        return 77;
    return shmb_test_run(tests, NULL, NULL);
}
