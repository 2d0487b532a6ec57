/* alloc_grow: one segment against jemalloc's pools, counted. */

#include "helpers.h"

#include "shmbench/alloc_grow.h"
#include "shmbench/segment.h"

#define MIB (1ull << 20)

static int remove_leftovers(void **state)
{
    assert_int_equal(shmb_test_remove_ours(), 0);
    return 0;
}

static void test_names(void **state)
{
    assert_string_equal(shmb_alloc_grow_system_name(SHMB_ALLOC_GROW_MOONCAKE), "mooncake");
    assert_string_equal(shmb_alloc_grow_system_name(SHMB_ALLOC_GROW_FLOWIPC_JEMALLOC), "flowipc_jemalloc");
    assert_null(shmb_alloc_grow_system_name(SHMB_ALLOC_GROW_SYSTEMS));
}

static void test_bad_arguments(void **state)
{
    shmb_alloc_grow_t g = {.pools = 77};
    const char *p = shmb_test_prefix();
    assert_int_equal(shmb_alloc_grow_run(SHMB_ALLOC_GROW_SYSTEMS, MIB, 4096, p, &g), -EINVAL);
    assert_int_equal(shmb_alloc_grow_run(SHMB_ALLOC_GROW_MOONCAKE, 0, 4096, p, &g), -EINVAL);
    assert_int_equal(shmb_alloc_grow_run(SHMB_ALLOC_GROW_FLOWIPC_JEMALLOC, MIB, 0, p, &g), -EINVAL);
    assert_int_equal(shmb_alloc_grow_run(SHMB_ALLOC_GROW_FLOWIPC_JEMALLOC,
                                         (uint64_t)SHMB_ALLOC_GROW_MAX_BLOCKS + 1, 1, p, &g), -EINVAL);
    assert_int_equal(shmb_alloc_grow_run(SHMB_ALLOC_GROW_MOONCAKE, MIB, 4096, p, NULL), -EINVAL);
    assert_int_equal(g.pools, 77); /* untouched on failure */
}

/* Mooncake: one segment, one mapping, a fault per page at least, nothing left. */
static void test_mooncake_one_segment(void **state)
{
    shmb_alloc_grow_t g;
    assert_int_equal(shmb_alloc_grow_run(SHMB_ALLOC_GROW_MOONCAKE, 8 * MIB + 1, 64 << 10, shmb_test_prefix(), &g),
                     0);
    assert_int_equal(g.pools, 1);
    assert_int_equal(g.pool_bytes, 8 * MIB + 4096); /* rounded up to the page */
    assert_int_equal(g.live_bytes, 8 * MIB + 4096);
    assert_int_equal(g.mappings, 1);
    assert_true(g.faults >= (8 * MIB + 4096) / 4096);
    assert_true(g.ns > 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* jemalloc: at least the bytes live, in pools it made as it went (more than
 * one: its metadata's and the extents'), a fault per page written, nothing
 * left. */
static void test_jemalloc_pools(void **state)
{
    shmb_alloc_grow_t g;
    assert_int_equal(
        shmb_alloc_grow_run(SHMB_ALLOC_GROW_FLOWIPC_JEMALLOC, 8 * MIB, 64 << 10, shmb_test_prefix(), &g), 0);
    assert_int_equal(g.live_bytes, 8 * MIB);
    assert_true(g.pools > 1);
    assert_true(g.pool_bytes >= 8 * MIB);
    assert_true(g.mappings >= (int64_t)g.pools); /* a mapping per pool at least */
    assert_true(g.faults >= 8 * MIB / 4096);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* A row per system, in order, named and noted from what was counted. */
static void test_rows(void **state)
{
    shmb_rows_t rows = {0};
    assert_int_equal(shmb_alloc_grow_rows(4 * MIB, 64 << 10, shmb_test_prefix(), 2, &rows), 0);
    assert_int_equal(rows.n, 2);
    assert_string_equal(rows.v[0].variant, "mooncake");
    assert_string_equal(rows.v[1].variant, "flowipc_jemalloc");
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(rows.v[i].step, "grow");
        assert_int_equal(rows.v[i].arg, 4);
        assert_int_equal(rows.v[i].repetition, 2);
        assert_int_equal(rows.v[i].iterations, 1);
        assert_true(rows.v[i].bytes_per_second > 0);
    }
    assert_non_null(strstr(rows.v[0].note, "1 pools 1 maps "));
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_rows_free(&rows);
}

/* A /dev/shm that fills: -ENOSPC, never a SIGBUS, nothing left (the guard
 * installed here: cmocka puts its own SIGBUS handler around each case). */
static int full_mooncake(void *arg)
{
    (void)arg;
    if (shmb_segment_install_signal_cleanup() != 0)
        return 1;
    shmb_alloc_grow_t g;
    if (shmb_alloc_grow_run(SHMB_ALLOC_GROW_MOONCAKE, 4 * MIB, 4096, shmb_test_prefix(), &g) != -ENOSPC)
        return 2;
    return shmb_test_count_ours(NULL, 0) == 0 ? 0 : 3;
}

static void test_full_shm(void **state)
{
    shmb_test_in_tmpfs(1024, full_mooncake, NULL, "a private 1 MiB /dev/shm");
}

int main(void)
{
    shmb_test_prefix_init("/shmb_test_grow_");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_teardown(test_bad_arguments, remove_leftovers),
        cmocka_unit_test_teardown(test_mooncake_one_segment, remove_leftovers),
        cmocka_unit_test_teardown(test_jemalloc_pools, remove_leftovers),
        cmocka_unit_test_teardown(test_rows, remove_leftovers),
        cmocka_unit_test_teardown(test_full_shm, remove_leftovers),
    };
    if (!shmb_test_shm_writable())
        return 77;
    return shmb_test_run(tests, NULL, NULL);
}
