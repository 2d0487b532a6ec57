
#include "helpers.h"

#include "shmbench/rng.h"

static void test_same_seed_same_sequence(void **state)
{
    shmb_rng_t a, b, c;
    shmb_rng_seed(&a, 42);
    shmb_rng_seed(&b, 42);
    shmb_rng_seed(&c, 43);
    int differs = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = shmb_rng_next(&a);
        assert_true(x == shmb_rng_next(&b));
        differs |= x != shmb_rng_next(&c);
    }
    assert_true(differs);
}

static void test_below_stays_below(void **state)
{
    shmb_rng_t r;
    shmb_rng_seed(&r, 1);
    int seen[7] = {0};
    for (int i = 0; i < 10000; i++) {
        uint64_t x = shmb_rng_below(&r, 7);
        assert_true(x < 7);
        seen[x]++;
    }
    for (int i = 0; i < 7; i++)
        assert_true(seen[i] > 1000); /* each ~1428 */
    assert_true(shmb_rng_below(&r, 0) == 0);
    assert_true(shmb_rng_below(&r, 1) == 0);
}

static void test_shuffle_is_permutation(void **state)
{
    enum { N = 1000 };
    uint64_t v[N];
    int seen[N];
    for (int i = 0; i < N; i++)
        v[i] = (uint64_t)i;
    shmb_rng_t r;
    shmb_rng_seed(&r, 7);
    shmb_rng_shuffle(&r, v, N);
    memset(seen, 0, sizeof(seen));
    int moved = 0;
    for (int i = 0; i < N; i++) {
        assert_true(v[i] < N);
        seen[v[i]]++;
        moved += v[i] != (uint64_t)i;
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
    assert_true(moved > N / 2);
    shmb_rng_shuffle(&r, v, 0); /* empty: no effect, no crash */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_sequence),
        cmocka_unit_test(test_below_stays_below),
        cmocka_unit_test(test_shuffle_is_permutation),
    };
    return shmb_test_run(tests, NULL, NULL);
}
