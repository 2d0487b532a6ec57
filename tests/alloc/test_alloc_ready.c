
#include "helpers.h"

#include "shmbench/alloc_ready.h"

#define MB (1ull << 20)

static shmb_alloc_ready_config_t config(void)
{
    shmb_alloc_ready_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.pool_bytes = 4 * MB;
    cfg.threads = 1;
    cfg.iterations = 2;
    cfg.shm_prefix = shmb_test_prefix();
    return cfg;
}

/* Bad configurations are refused before anything is made, rows untouched. */
static void test_bad_config(void **state)
{
    shmb_rows_t rows = {0};
    char why[128] = "";
    shmb_alloc_ready_config_t cfg = config();
    cfg.backing[SHMB_BACKING_MEMFD] = cfg.prefault[SHMB_PREFAULT_TOUCH] = 1;
    const struct {
        const char *what;
        uint64_t pool, iterations;
        int threads;
    } bad[] = {
        {"no pool", 0, 2, 1},
        {"no iterations", 4 * MB, 0, 1},
        {"too many iterations", 4 * MB, SHMB_ALLOC_READY_MAX_ITERATIONS + 1, 1},
        {"no thread", 4 * MB, 2, 0},
        {"too many threads", 4 * MB, 2, SHMB_BACKING_MAX_THREADS + 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        shmb_alloc_ready_config_t c = cfg;
        c.pool_bytes = bad[i].pool;
        c.iterations = bad[i].iterations;
        c.threads = bad[i].threads;
        if (shmb_alloc_ready_run(&c, &rows, why, sizeof(why)) != -EINVAL)
            fail_msg("%s: not refused", bad[i].what);
        assert_int_equal(rows.n, 0);
    }
    assert_int_equal(shmb_alloc_ready_run(NULL, &rows, why, sizeof(why)), -EINVAL);
    assert_int_equal(shmb_alloc_ready_run(&cfg, NULL, why, sizeof(why)), -EINVAL);
}

/* Each pool's bytes are rounded to its backing's page; the mappings grow
 * with the threads. */
static void test_pool_bytes_and_mappings(void **state)
{
    shmb_alloc_ready_config_t cfg = config();
    cfg.pool_bytes = 3 * MB;
    uint64_t bytes = 0;
    assert_int_equal(shmb_alloc_ready_pool_bytes(&cfg, SHMB_BACKING_MEMFD, &bytes), 0);
    assert_int_equal(bytes, 3 * MB);
    assert_int_equal(shmb_alloc_ready_pool_bytes(&cfg, SHMB_BACKING_THP, &bytes), 0);
    assert_int_equal(bytes, 4 * MB);
    cfg.hugepage_size = SHMB_BACKING_HUGE_1GB;
    assert_int_equal(shmb_alloc_ready_pool_bytes(&cfg, SHMB_BACKING_HUGETLB, &bytes), 0);
    assert_int_equal(bytes, 1ull << 30);
    cfg.hugepage_size = 3 * MB;
    bytes = 7;
    assert_int_equal(shmb_alloc_ready_pool_bytes(&cfg, SHMB_BACKING_HUGETLB, &bytes), -EINVAL);
    assert_int_equal(bytes, 7);
    uint64_t one = shmb_alloc_ready_mappings(&cfg);
    cfg.threads = 4;
    assert_int_equal(shmb_alloc_ready_mappings(&cfg), one + 8);
}

/* One row per backing x prefault selected, in the table's order, named as
 * the JSON names them, each with its iterations, a time, the pool's bytes
 * per second and a note read back from the kernel; nothing left. */
static void test_rows(void **state)
{
    shmb_alloc_ready_config_t cfg = config();
    cfg.backing[SHMB_BACKING_TMPFS] = cfg.backing[SHMB_BACKING_MEMFD] = 1;
    cfg.prefault[SHMB_PREFAULT_NONE] = cfg.prefault[SHMB_PREFAULT_TOUCH] = 1;
    cfg.prefault[SHMB_PREFAULT_POPULATE] = 1;
    cfg.threads = 2;
    cfg.repetition = 1;
    shmb_rows_t rows = {0};
    char why[128] = "";
    assert_int_equal(shmb_alloc_ready_run(&cfg, &rows, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 6);
    const char *names[] = {"ready/tmpfs/none", "ready/tmpfs/touch", "ready/tmpfs/populate",
                           "ready/memfd/none", "ready/memfd/touch", "ready/memfd/populate"};
    for (size_t i = 0; i < rows.n; i++) {
        const shmb_row_t *r = &rows.v[i];
        char name[80];
        snprintf(name, sizeof(name), "%s/%s", r->variant, r->step);
        assert_string_equal(name, names[i]);
        assert_string_equal(r->arg_name, "pool_mb");
        assert_int_equal(r->arg, 4);
        assert_int_equal(r->repetition, 1);
        assert_int_equal(r->iterations, 2);
        assert_int_equal(r->threads, strstr(name, "touch") ? 2 : 1); /* one mmap call: no threads */
        assert_true(r->ns.mean > 0);
        assert_true(r->bytes_per_second > 0);
        const char *rss = strstr(name, "none") ? "rss 0% huge 0%" : "rss 100% huge 0%";
        if (!strstr(r->note, rss))
            fail_msg("%s: note '%s' lacks '%s'", name, r->note, rss);
    }
    unsigned long long faults = 0;
    assert_int_equal(sscanf(rows.v[1].note, "%*s %llu faults", &faults), 1);
    assert_true(faults >= 1024 && faults < 1024 + 256); /* 4 MiB of 4 KiB pages, and the threads' own */
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* A failed pool (hugetlb one page beyond the whole pool, failing at mmap's reservation) stops the run
 * with its error, the rows before kept, no huge page of this process's left. */
static void test_failure_stops(void **state)
{
    int64_t pages = shmb_test_huge_beyond(), before = shmb_test_huge_held(0);
    if (pages < 0)
        shmb_test_skip("no 2 MiB huge page pool");
    shmb_alloc_ready_config_t cfg = config();
    cfg.pool_bytes = (uint64_t)pages * SHMB_BACKING_HUGE_2MB;
    cfg.backing[SHMB_BACKING_MEMFD] = cfg.backing[SHMB_BACKING_HUGETLB] = 1;
    cfg.prefault[SHMB_PREFAULT_NONE] = 1;
    cfg.iterations = 1;
    shmb_rows_t rows = {0};
    char why[128] = "";
    assert_int_equal(shmb_alloc_ready_run(&cfg, &rows, why, sizeof(why)), -ENOMEM);
    assert_int_equal(rows.n, 1);
    assert_string_equal(rows.v[0].variant, "ready/memfd");
    assert_int_equal(shmb_test_huge_held(0), before);
    shmb_rows_free(&rows);
}

int main(void)
{
    shmb_test_prefix_init("/shmb_test_alloc_ready_");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_pool_bytes_and_mappings),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_failure_stops),
    };
    if (shmb_segment_install_signal_cleanup() != 0)
        return 1;
    return shmb_test_run(tests, NULL, NULL);
}
