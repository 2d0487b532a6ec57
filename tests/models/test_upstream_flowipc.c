/* upstream_flowipc (-DSHMB_FLOWIPC_SOURCE, docs/upstream.md): Flow-IPC's Pool_arena and SHM-jemalloc's
 * borrower repository against planted faults, and the benchmarks' *_upstream rows beside the models. */
#include "helpers.h"
#include "transfer/copier_fixture.h"

#include "alloc/alloc_fixture.h"
#include "shmbench/upstream_flowipc.h"

#define prefix shmb_test_prefix()
#define our_segments shmb_test_count_ours

static void test_classic_api(void **state)
{
    enum { N = 256, BYTES = 4096 };
    assert_int_equal(shmb_upstream_flowipc_available(), 1);
    const char *commits = shmb_upstream_flowipc_commits();
    assert_non_null(strstr(commits, "flow "));
    assert_non_null(strstr(commits, "ipc_shm "));
    char name[96];
    snprintf(name, sizeof(name), "%sapi", prefix);
    shmb_upstream_classic_t *c = NULL;
    assert_int_equal(shmb_upstream_classic_create(name, 4u << 20, &c), 0);
    assert_int_equal(our_segments(NULL, 0), 1);
    shmb_upstream_classic_t *again = NULL;
    assert_int_equal(shmb_upstream_classic_create(name, 4u << 20, &again), -EEXIST);
    assert_int_equal(shmb_upstream_classic_create("no-slash", 4u << 20, &again), -EINVAL);
    const unsigned char *base = shmb_upstream_classic_base(c);
    const size_t size = shmb_upstream_classic_size(c);
    assert_true(base != NULL && size >= (4u << 20));
    static void *blocks[N];
    for (int i = 0; i < N; i++) {
        assert_int_equal(shmb_upstream_classic_alloc(c, BYTES, &blocks[i]), 0);
        const unsigned char *b = blocks[i];
        assert_true(b >= base && b + BYTES <= base + size);
        memset(blocks[i], i, BYTES); /* upstream's own metadata must survive the writes */
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) {
            const unsigned char *a = blocks[i], *b = blocks[j];
            assert_true(a + BYTES <= b || b + BYTES <= a);
        }
    assert_int_equal(shmb_upstream_classic_check(c, blocks, N), 0);
    assert_int_equal(shmb_upstream_classic_check(c, NULL, 0), -EBUSY); /* blocks live */
    /* planted: a block past the pool, and none */
    void *saved = blocks[7];
    blocks[7] = (unsigned char *)base + size + 64;
    assert_int_equal(shmb_upstream_classic_check(c, blocks, N), -EFAULT);
    blocks[7] = NULL;
    assert_int_equal(shmb_upstream_classic_check(c, blocks, N), -EFAULT);
    blocks[7] = saved;
    assert_int_equal(shmb_upstream_classic_alloc(c, size * 2, &saved), -ENOMEM);
    for (int i = N - 1; i >= 0; i--)
        assert_int_equal(shmb_upstream_classic_free(c, blocks[i]), 0);
    assert_int_equal(shmb_upstream_classic_check(c, NULL, 0), 0);
    assert_int_equal(shmb_upstream_classic_free(c, NULL), -EINVAL);
    assert_int_equal(shmb_upstream_classic_destroy(c), 0);
    assert_int_equal(shmb_upstream_classic_destroy(NULL), 0);
    assert_int_equal(our_segments(NULL, 0), 0);
}

static shmb_alloc_config_t paired_config(int upstream_at)
{
    shmb_alloc_config_t c = shmb_test_alloc_small(prefix);
    c.nsystems = 3;
    static const char *const names[] = {"flowipc_classic", SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM_NAME,
                                        "flowipc_classic_control"};
    for (int s = 0; s < 3; s++) {
        c.systems[s] = s == upstream_at ? SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM : SHMB_SYSTEM_FLOWIPC_CLASSIC;
        c.system_names[s] = names[s];
    }
    const char *kinds = shmb_alloc_system_allocators("flowipc_classic");
    for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
        c.run[k] = strstr(kinds, shmb_alloc_kind_name((shmb_alloc_kind_t)k)) != NULL;
    return c;
}

static size_t rows_of(const shmb_rows_t *rows, const char *step, const char *system, int ratio)
{
    size_t n = 0;
    for (size_t i = 0; i < rows->n; i++)
        n += strcmp(rows->v[i].step, step) == 0 && strcmp(rows->v[i].system, system) == 0 &&
             (rows->v[i].vs[0] != '\0') == ratio;
    return n;
}

/* Moves the first block past the end of its pool. */
static void plant_outside(void **blocks, uint64_t per_thread, int threads, void *arg)
{
    (void)per_thread, (void)threads, (void)arg;
    blocks[0] = (unsigned char *)blocks[0] + (1ull << 32);
}

static void test_classic_rows(void **state)
{
    shmb_alloc_config_t c = paired_config(1);
    shmb_rows_t rows = {0};
    uint64_t kept = 0;
    char why[256] = "";
    assert_int_equal(shmb_alloc_bench_run(&c, &rows, &kept, why, sizeof(why)), 0);
    const char *up = SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM_NAME;
    for (const char *const *step = (const char *const[]){"alloc_bare", "free_bare", NULL}; *step; step++) {
        assert_int_equal(rows_of(&rows, *step, up, 0), 2); /* 4 and 8 KB */
        assert_int_equal(rows_of(&rows, *step, up, 1), 2);
        assert_int_equal(rows_of(&rows, *step, "flowipc_classic", 0), 2);
    }
    for (const char *const *step = (const char *const[]){"alloc", "free", "alloc_reuse", "register", NULL}; *step;
         step++) {
        assert_int_equal(rows_of(&rows, *step, up, 0), 0);
        assert_int_equal(rows_of(&rows, *step, up, 1), 0);
        assert_int_equal(rows_of(&rows, *step, "flowipc_classic_control", 1), *step[0] == 'r' ? 6 : 2);
    }
    for (size_t i = 0; i < rows.n; i++)
        if (rows.v[i].vs[0])
            assert_int_equal(rows.v[i].iterations % 12, 0); /* balanced over 3 systems and over 2 */
    shmb_rows_free(&rows);
    assert_int_equal(our_segments(NULL, 0), 0);

    /* a planted wrong block fails the run before any figure counts */
    shmb_alloc_hook_t hook = {.check = plant_outside};
    c = paired_config(1);
    c.max_size_kb = 4;
    assert_int_equal(shmb_alloc_bench_run_hooked(&c, &hook, &rows, &kept, why, sizeof(why)), -EPROTO);
    assert_int_equal(rows.n, 0);
    assert_int_equal(our_segments(NULL, 0), 0);

    /* never the baseline, nor beside another model */
    c = paired_config(0);
    assert_int_equal(shmb_alloc_bench_run(&c, &rows, &kept, why, sizeof(why)), -EINVAL);
    c = paired_config(1);
    c.systems[0] = c.systems[2] = SHMB_SYSTEM_MOONCAKE;
    assert_int_equal(shmb_alloc_bench_run(&c, &rows, &kept, why, sizeof(why)), -EINVAL);
    assert_int_equal(our_segments(NULL, 0), 0);
}

static int count_ours(void)
{
    return our_segments(NULL, 0);
}

/* The frees' check, straight on the pool: a block left live fails it. */
static void test_classic_freed(void **state)
{
    const shmb_alloc_config_t c = paired_config(1);
    shmb_test_pool_frees_checked(&c, SHMB_ALLOC_UPSTREAM_CLASSIC_BARE, "upstream_bipc_bare", count_ours,
                                 "a block not freed", 0);
    assert_int_equal(our_segments(NULL, 0), 0);
}

static void test_jemalloc_repo(void **state)
{
    static unsigned char pools[3][8192];
    shmb_upstream_jemalloc_repo_t *r = NULL;
    assert_int_equal(shmb_upstream_jemalloc_repo_create(&r), 0);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(shmb_upstream_jemalloc_repo_insert(r, 10 + i, "/pool", pools[i], sizeof(pools[i]), -1), 0);
    assert_int_equal(shmb_upstream_jemalloc_repo_insert(r, 11, "/again", pools[0] + 1, 64, -1), -EEXIST);
    assert_int_equal(shmb_upstream_jemalloc_repo_insert(r, 20, "/zero", pools[0], 0, -1), -EINVAL);
    assert_ptr_equal(shmb_upstream_jemalloc_to_address(r, 11, 100), pools[1] + 100);
    assert_null(shmb_upstream_jemalloc_to_address(r, 13, 0));
    uint32_t id = 0, off = 0;
    assert_int_equal(shmb_upstream_jemalloc_from_address(r, pools[2] + 4000, &id, &off), 0);
    assert_int_equal(id, 12);
    assert_int_equal(off, 4000);
    assert_int_equal(shmb_upstream_jemalloc_from_address(r, pools[2] + 9000, &id, &off), -ENOENT);
    shmb_upstream_jemalloc_repo_destroy(r);
    shmb_upstream_jemalloc_repo_destroy(NULL);
}

/* The view alone: to_address lands on dst, from_address agrees; 64 bytes off or a part not run: a miss. */
static void test_jemalloc_view(void **state)
{
    char why[256] = "";
    shmb_transfer_config_t c = shmb_test_transfer_config();
    c.translate = 1;
    c.system = SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM;
    c.num_segments = 10;
    shmb_transfer_run_t r;
    shmb_test_copier_up(&r, &c, 65536, 65536, why, sizeof(why));
    assert_int_equal(r.translation.index, 5);
    shmb_transfer_fipcup_part(&r, SHMB_TRANSFER_TRANSLATE, 4096, 3);
    assert_int_equal(r.translation.missed, 0);
    assert_int_equal(shmb_transfer_fipcup_check(&r, SHMB_TRANSFER_TRANSLATE), 0);
    shmb_transfer_bench_wrong_landing = r.translation.index + 1;
    shmb_transfer_fipcup_part(&r, SHMB_TRANSFER_TRANSLATE, 4096, 1);
    shmb_transfer_bench_wrong_landing = 0;
    assert_int_equal(r.translation.missed, 1);
    assert_int_equal(shmb_transfer_fipcup_check(&r, SHMB_TRANSFER_TRANSLATE), -EPROTO);
    assert_non_null(strstr(why, "flowipc_jemalloc_upstream"));
    shmb_transfer_fipcup_part(&r, SHMB_TRANSFER_REQUEST, 4096, 1);
    assert_int_equal(r.translation.missed, 2);
    assert_int_equal(shmb_transfer_bench_verify_translations(&r), -EPROTO);
    shmb_test_copier_down(&r);
    assert_null(r.translation.fipcup);
    shmb_test_assert_clean();
}

static shmb_transfer_config_t jemalloc_paired(void)
{
    shmb_transfer_config_t c = shmb_test_transfer_config();
    c.num_segments = 10;
    c.nsystems = 3;
    c.systems[0] = c.systems[2] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    c.systems[1] = SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM;
    return c;
}

/* Paired: upstream's translate row and its ratio, no other row of it; a
 * wrong landing planted fails the run; never the baseline, nor beside another model. */
static void test_jemalloc_rows(void **state)
{
    shmb_transfer_config_t c = jemalloc_paired();
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    char why[256] = "";
    const char *up = SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM_NAME;
    const shmb_report_t report = {.bench = "shm_transfer"};
    size_t translate = 0, other = 0;
    for (size_t i = 0; i < rows.n; i++)
        if (strcmp(rows.v[i].system, up) == 0) {
            char name[160];
            shmb_report_row_name(&report, &rows.v[i], name, sizeof(name));
            const int t = strncmp(name, "shm_transfer/translate/", 23) == 0;
            translate += t;
            other += !t;
            if (t && !rows.v[i].vs[0])
                assert_non_null(strstr(rows.v[i].note, "not possible upstream"));
        }
    assert_int_equal(translate, 2); /* its row and its ratio row */
    assert_int_equal(other, 0);
    shmb_rows_free(&rows);
    shmb_transfer_bench_wrong_landing = 5 + 1; /* dst, the middle of 10 */
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), -EPROTO);
    shmb_transfer_bench_wrong_landing = 0;
    assert_non_null(strstr(why, "flowipc_jemalloc_upstream"));
    shmb_rows_free(&rows);
    c.systems[0] = c.systems[2] = SHMB_SYSTEM_FLOWIPC_CLASSIC;
    assert_int_equal(shmb_transfer_bench_config_check(&c), -EINVAL);
    c = jemalloc_paired();
    c.systems[0] = c.systems[2] = SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM;
    c.systems[1] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    assert_int_equal(shmb_transfer_bench_config_check(&c), -EINVAL);
    assert_int_equal(our_segments(NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classic_api),
        cmocka_unit_test(test_classic_rows),
        cmocka_unit_test(test_classic_freed),
        cmocka_unit_test(test_jemalloc_repo),
        cmocka_unit_test(test_jemalloc_view),
        cmocka_unit_test(test_jemalloc_rows),
    };
    return shmb_test_run_shm("/shmb_tfu_", tests, NULL, shmb_test_remove_leftovers);
}
