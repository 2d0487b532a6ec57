
#include "helpers.h"

#include "shmbench/lookup.h"
#include "shmbench/rng.h"

static unsigned char local[1 << 20];

/* The reference: any segment holding all of [addr, addr + len), found plainly in 128-bit arithmetic. */
static void *reference(const shmb_lookup_segment_t *segs, size_t n, uint64_t addr, uint64_t len)
{
    for (size_t i = 0; i < n; i++) {
        __extension__ typedef unsigned __int128 u128;
        u128 end = (u128)addr + len;
        u128 seg_end = (u128)segs[i].peer_base + segs[i].size;
        if (addr >= segs[i].peer_base && end <= seg_end)
            return segs[i].local_base + (addr - segs[i].peer_base);
    }
    return NULL;
}

static const shmb_lookup_strategy_t address_strategies[] = {
    SHMB_LOOKUP_LINEAR, SHMB_LOOKUP_LOWER_BOUND, SHMB_LOOKUP_TREE};

static void check_addr(const shmb_lookup_table_t *t, const shmb_lookup_segment_t *segs, size_t n,
                       uint64_t addr, uint64_t len)
{
    shmb_lookup_request_t r = {.addr = addr, .len = len};
    void *want = reference(segs, n, addr, len);
    for (int i = 0; i < 3; i++) {
        void *got = shmb_lookup_translate(t, address_strategies[i], &r);
        if (got != want)
            fail_msg("%s: addr 0x%llx len %llu -> %p, reference %p",
                     shmb_lookup_strategy_name(address_strategies[i]), (unsigned long long)addr,
                     (unsigned long long)len, got, want);
    }
}

/* Registered out of address order: C, A, B. A and B touch; C stands apart. */
static const uint64_t A = 0x10000, B = 0x11000, C = 0x20000;
static shmb_lookup_segment_t edges[3];

static int setup_edges(void **state)
{
    static shmb_lookup_table_t t;
    edges[0] = (shmb_lookup_segment_t){C, 0x1000, local + 0x8000};
    edges[1] = (shmb_lookup_segment_t){A, 0x1000, local};
    edges[2] = (shmb_lookup_segment_t){B, 0x2000, local + 0x1000};
    if (shmb_lookup_init(&t, edges, 3) != 0)
        return -1;
    *state = &t;
    return 0;
}

static int teardown_table(void **state)
{
    shmb_lookup_fini(*state);
    return 0;
}

static void test_edges(void **state)
{
    shmb_lookup_table_t *t = *state;
    check_addr(t, edges, 3, A, 1);                 /* first byte of the first segment */
    check_addr(t, edges, 3, A, 0x1000);            /* all of it */
    check_addr(t, edges, 3, A + 0x1000 - 16, 16);  /* last valid start */
    check_addr(t, edges, 3, A + 0x1000 - 15, 16);  /* straddles A and B */
    check_addr(t, edges, 3, B, 16);                /* first byte of B, the last byte of A just before */
    check_addr(t, edges, 3, B + 0x2000 - 1, 1);    /* last byte of B */
    check_addr(t, edges, 3, B + 0x2000, 1);        /* one past the end of B: a gap */
    check_addr(t, edges, 3, 0x18000, 4);           /* between segments */
    check_addr(t, edges, 3, 0, 4);                 /* before the first */
    check_addr(t, edges, 3, A - 1, 2);             /* starts just before the first */
    check_addr(t, edges, 3, C + 0x1000, 1);        /* one past the end of the last */
    check_addr(t, edges, 3, UINT64_MAX - 4, 4);    /* far after the last */
    check_addr(t, edges, 3, C, 0x1001);            /* longer than the segment */
    check_addr(t, edges, 3, C + 8, UINT64_MAX);    /* length that wraps */
    /* and the answers are where they should be */
    shmb_lookup_request_t r = {.addr = B + 5, .len = 1};
    for (int i = 0; i < 3; i++)
        assert_ptr_equal(shmb_lookup_translate(t, address_strategies[i], &r), local + 0x1000 + 5);
    r.addr = A + 0x1000 - 15;
    r.len = 16;
    for (int i = 0; i < 3; i++)
        assert_null(shmb_lookup_translate(t, address_strategies[i], &r));
}

static void test_arithmetic_edges(void **state)
{
    shmb_lookup_table_t *t = *state;
    shmb_lookup_request_t r = {.id = 2, .offset = 0, .len = 1};
    assert_ptr_equal(shmb_lookup_translate(t, SHMB_LOOKUP_ARITHMETIC, &r), local + 0x1000);
    r.offset = 0x2000 - 16;
    r.len = 16;
    assert_ptr_equal(shmb_lookup_translate(t, SHMB_LOOKUP_ARITHMETIC, &r), local + 0x1000 + 0x2000 - 16);
    r.offset++;
    assert_null(shmb_lookup_translate(t, SHMB_LOOKUP_ARITHMETIC, &r)); /* one past the end */
    r.offset = 0;
    r.len = 0x2001;
    assert_null(shmb_lookup_translate(t, SHMB_LOOKUP_ARITHMETIC, &r)); /* too long */
    r.len = 1;
    r.id = 3;
    assert_null(shmb_lookup_translate(t, SHMB_LOOKUP_ARITHMETIC, &r)); /* no such id */
    r.id = 0;
    r.offset = UINT64_MAX;
    assert_null(shmb_lookup_translate(t, SHMB_LOOKUP_ARITHMETIC, &r));
}

static void test_one_segment(void **state)
{
    shmb_lookup_segment_t seg = {0x1000, 0x1000, local};
    shmb_lookup_table_t t;
    assert_int_equal(shmb_lookup_init(&t, &seg, 1), 0);
    check_addr(&t, &seg, 1, 0x1000, 1);
    check_addr(&t, &seg, 1, 0xfff, 1);
    check_addr(&t, &seg, 1, 0x1fff, 1);
    check_addr(&t, &seg, 1, 0x2000, 1);
    shmb_lookup_fini(&t);
}

static void test_random_against_reference(void **state)
{
    enum { N = 1000, REQUESTS = 50000 };
    static shmb_lookup_segment_t segs[N];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 99);
    uint64_t base = 0x7f0000000000ull;
    for (int i = 0; i < N; i++) {
        base += shmb_rng_below(&rng, 3) * 4096; /* gaps of 0, 1 or 2 pages */
        segs[i].peer_base = base;
        segs[i].size = (1 + shmb_rng_below(&rng, 4)) * 4096;
        segs[i].local_base = local + (size_t)shmb_rng_below(&rng, 1 << 19);
        base += segs[i].size;
    }
    uint64_t lo = segs[0].peer_base - 8192, span = base + 8192 - lo;
    /* register in a random order */
    for (int i = N - 1; i > 0; i--) {
        int j = (int)shmb_rng_below(&rng, (uint64_t)i + 1);
        shmb_lookup_segment_t tmp = segs[i];
        segs[i] = segs[j];
        segs[j] = tmp;
    }
    shmb_lookup_table_t t;
    assert_int_equal(shmb_lookup_init(&t, segs, N), 0);
    int hits = 0;
    for (int k = 0; k < REQUESTS; k++) {
        uint64_t addr = lo + shmb_rng_below(&rng, span);
        uint64_t len = 1 + shmb_rng_below(&rng, 8192);
        check_addr(&t, segs, N, addr, len);
        hits += reference(segs, N, addr, len) != NULL;
        /* arithmetic, from a handle */
        uint32_t id = (uint32_t)shmb_rng_below(&rng, N);
        uint64_t off = shmb_rng_below(&rng, segs[id].size);
        shmb_lookup_request_t r = {.id = id, .offset = off, .len = len};
        void *want = off + len <= segs[id].size ? segs[id].local_base + off : NULL;
        assert_ptr_equal(shmb_lookup_translate(&t, SHMB_LOOKUP_ARITHMETIC, &r), want);
    }
    assert_true(hits > REQUESTS / 10 && hits < REQUESTS); /* both outcomes were exercised */
    shmb_lookup_fini(&t);
}

static void test_bad_tables(void **state)
{
    shmb_lookup_table_t t;
    shmb_lookup_segment_t s[2] = {{0x1000, 0x1000, local}, {0x1800, 0x1000, local}};
    assert_int_equal(shmb_lookup_init(&t, s, 0), -EINVAL);
    assert_int_equal(shmb_lookup_init(&t, NULL, 1), -EINVAL);
    assert_int_equal(shmb_lookup_init(&t, s, 2), -EINVAL); /* overlap */
    s[1].peer_base = 0x2000;
    assert_int_equal(shmb_lookup_init(&t, s, 2), 0);
    shmb_lookup_fini(&t);
    s[1].size = 0;
    assert_int_equal(shmb_lookup_init(&t, s, 2), -EINVAL);
    s[1].size = 0x1000;
    s[1].peer_base = UINT64_MAX - 10; /* wraps around */
    assert_int_equal(shmb_lookup_init(&t, s, 2), -EINVAL);
}

static void test_batch_sums_translations(void **state)
{
    shmb_lookup_table_t *t = *state;
    shmb_lookup_request_t r[3] = {
        {.addr = A + 1, .len = 1, .id = 1, .offset = 1},
        {.addr = C + 7, .len = 2, .id = 0, .offset = 7},
        {.addr = 0x18000, .len = 1, .id = 9, .offset = 0}, /* a miss counts 0 */
    };
    uint64_t want = (uint64_t)(uintptr_t)(local + 1) + (uint64_t)(uintptr_t)(local + 0x8000 + 7);
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++) {
        assert_true(shmb_lookup_batch(t, (shmb_lookup_strategy_t)s, r, 3) == want);
        assert_true(shmb_lookup_batch(t, (shmb_lookup_strategy_t)s, r, 2) == want);
        assert_true(shmb_lookup_batch(t, (shmb_lookup_strategy_t)s, r, 0) == 0);
    }
}

/* The chain sums the translations; translation 0 landing d bytes off shifts request 1's keys by d. */
static void test_chain_is_dependent(void **state)
{
    shmb_lookup_table_t *t = *state;
    const shmb_lookup_request_t r[2] = {
        {.addr = A + 1, .len = 1, .id = 1, .offset = 1},
        {.addr = B + 5, .len = 1, .id = 2, .offset = 5},
    };
    /* the same, but request 1's id one below B's: shifted by 1, B's again */
    shmb_lookup_request_t below[2] = {r[0], r[1]};
    below[1].id = 1;
    const uint64_t t0 = (uint64_t)(uintptr_t)(local + 1), t1 = (uint64_t)(uintptr_t)(local + 0x1000 + 5);
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++) {
        uint64_t expected[2] = {t0, t1};
        assert_true(shmb_lookup_chain(t, (shmb_lookup_strategy_t)s, r, expected, 2) == t0 + t1);
        assert_true(shmb_lookup_chain(t, (shmb_lookup_strategy_t)s, r, expected, 0) == 0);
        expected[0] = t0 - 1; /* translation 0 lands 1 byte past what was expected */
        uint64_t got = shmb_lookup_chain(t, (shmb_lookup_strategy_t)s, below, expected, 2);
        if (got != t0 + t1 + 1)
            fail_msg("%s: chain with translation 0 off by 1 sums 0x%llx, expected 0x%llx",
                     shmb_lookup_strategy_name((shmb_lookup_strategy_t)s), (unsigned long long)got,
                     (unsigned long long)(t0 + t1 + 1));
    }
}

/* The chain against a reference chain, with some expected addresses wrong so wrong turns propagate. */
static void test_chain_against_reference(void **state)
{
    enum { N = 200, REQUESTS = 20000 };
    static shmb_lookup_segment_t segs[N];
    static shmb_lookup_request_t req[REQUESTS];
    static uint64_t expected[REQUESTS];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 7);
    uint64_t base = 0x100000;
    for (int i = 0; i < N; i++) {
        base += shmb_rng_below(&rng, 2) * 4096;
        segs[i] = (shmb_lookup_segment_t){base, 4096 * (1 + shmb_rng_below(&rng, 3)),
                                          local + (size_t)shmb_rng_below(&rng, 1 << 19)};
        base += segs[i].size;
    }
    shmb_lookup_table_t t;
    assert_int_equal(shmb_lookup_init(&t, segs, N), 0);
    for (int k = 0; k < REQUESTS; k++) {
        uint32_t id = (uint32_t)shmb_rng_below(&rng, N);
        uint64_t off = shmb_rng_below(&rng, segs[id].size);
        req[k] = (shmb_lookup_request_t){.addr = segs[id].peer_base + off, .len = 1, .id = id, .offset = off};
        expected[k] = (uint64_t)(uintptr_t)(segs[id].local_base + off);
        if (shmb_rng_below(&rng, 100) == 0)
            expected[k] -= shmb_rng_below(&rng, 3); /* now and then a little off: shifts what follows */
    }
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++) {
        uint64_t want = 0, delta = 0;
        for (int k = 0; k < REQUESTS; k++) {
            shmb_lookup_request_t r = req[k];
            r.addr += delta;
            r.id += (uint32_t)delta;
            r.offset += delta;
            void *p = s == SHMB_LOOKUP_ARITHMETIC
                          ? (r.id < N && r.offset < segs[r.id].size ? segs[r.id].local_base + r.offset : NULL)
                          : reference(segs, N, r.addr, r.len);
            delta = (uint64_t)(uintptr_t)p - expected[k];
            want += (uint64_t)(uintptr_t)p;
        }
        assert_true(shmb_lookup_chain(&t, (shmb_lookup_strategy_t)s, req, expected, REQUESTS) == want);
    }
    shmb_lookup_fini(&t);
}

static void test_names(void **state)
{
    shmb_lookup_strategy_t s;
    for (int i = 0; i < SHMB_LOOKUP_STRATEGIES; i++) {
        assert_int_equal(shmb_lookup_parse_strategy(shmb_lookup_strategy_name((shmb_lookup_strategy_t)i), &s), 0);
        assert_int_equal(s, i);
    }
    assert_string_equal(shmb_lookup_strategy_name(SHMB_LOOKUP_LOWER_BOUND), "lower_bound");
    assert_int_equal(shmb_lookup_parse_strategy("hash", &s), -EINVAL);
    assert_int_equal(shmb_lookup_parse_strategy(NULL, &s), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_edges, setup_edges, teardown_table),
        cmocka_unit_test_setup_teardown(test_arithmetic_edges, setup_edges, teardown_table),
        cmocka_unit_test(test_one_segment),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test_setup_teardown(test_batch_sums_translations, setup_edges, teardown_table),
        cmocka_unit_test_setup_teardown(test_chain_is_dependent, setup_edges, teardown_table),
        cmocka_unit_test(test_chain_against_reference),
        cmocka_unit_test(test_names),
    };
    return shmb_test_run(tests, NULL, NULL);
}
