/* SHM-jemalloc's pool repository against plain arithmetic. */

#include "helpers.h"

#include "shmbench/fipc_jemalloc.h"
#include "shmbench/rng.h"

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

/* The latency chain sums the translations; translation 0 landing d off shifts request 1's id and offset. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_repo_insert_erase, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_to_address_edges, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_from_address_edges, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_chain_is_dependent, repo_setup, repo_teardown),
        cmocka_unit_test_setup_teardown(test_repo_batch_matches_reference, repo_setup, repo_teardown),
    };
    return shmb_test_run(tests, NULL, NULL);
}
