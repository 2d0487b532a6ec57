/* Mooncake's relocate path (TENT's ShmTransport) against a reference, on edge
 * cases, random buffers and every byte, with attach and detach counted. */

#include "helpers.h"

#include "shmbench/mooncake.h"
#include "shmbench/rng.h"

#include "mooncake_fake.h"

__extension__ typedef unsigned __int128 u128;

static int holds(const shmb_mooncake_buffer_t *b, uint64_t addr, uint64_t len)
{
    return addr >= b->addr && (u128)addr + len <= (u128)b->addr + b->length;
}

/* The reference (128-bit, nothing wraps): the mapped buffer holding [addr, addr + len) (tryResolve), else
 * the first registered one with an SHM path (findBuffer); its index or -1. */
static int reference(const shmb_mooncake_buffer_t *b, size_t n, uint64_t addr, uint64_t len)
{
    if (len == 0)
        return -1;
    for (size_t i = 0; i < n && i < FAKE_MAX; i++)
        if (fake.mapped[i] && holds(&b[i], addr, len))
            return (int)i;
    for (size_t i = 0; i < n; i++)
        if (holds(&b[i], addr, len))
            return b[i].shm_path[0] ? (int)i : -1;
    return -1;
}

static void check(shmb_mooncake_t *m, uint64_t id, const shmb_mooncake_buffer_t *b, size_t n,
                  uint64_t addr, uint64_t len)
{
    void *sentinel = (void *)&fake, *got = sentinel;
    int want = reference(b, n, addr, len);
    int rc = shmb_mooncake_relocate(m, id, addr, len, &got);
    if (want < 0) {
        if (rc != -EINVAL || got != sentinel)
            fail_msg("addr 0x%llx len %llu: rc %d, out %p; reference: -EINVAL, out untouched",
                     (unsigned long long)addr, (unsigned long long)len, rc, got);
        return;
    }
    unsigned char *local = fake_local(&fake, (size_t)want, b[want].shm_path);
    if (rc != 0 || !local || got != local + (addr - b[want].addr))
        fail_msg("addr 0x%llx len %llu: rc %d -> %p, reference buffer %d at %p",
                 (unsigned long long)addr, (unsigned long long)len, rc, got, want,
                 local ? (void *)(local + (addr - b[want].addr)) : NULL);
}

/* Registered out of order: C, A, B, then E (no SHM path) and F over E's end; A and B touch, C apart. */
static const uint64_t A = 0x10000, B = 0x11000, C = 0x20000, E = 0x30000, F = 0x30800;
static const uint64_t TARGET = 7;
static const shmb_mooncake_buffer_t edges[] = {
    {0x20000, 0x1000, "/mooncake_bench_4242_deadbeef_0"},
    {0x10000, 0x1000, "/mooncake_bench_4242_deadbeef_1"},
    {0x11000, 0x2000, "/mooncake_bench_4242_deadbeef_2"},
    {0x30000, 0x1000, ""},
    {0x30800, 0x1000, "/mooncake_bench_4242_deadbeef_3"},
};
enum { NEDGES = sizeof(edges) / sizeof(edges[0]) };

static int setup_edges(void **state)
{
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    if (shmb_mooncake_create(edges, NEDGES, TARGET, 20, &ops, &m) != 0)
        return -1;
    *state = m;
    return 0;
}

static int teardown(void **state)
{
    shmb_mooncake_destroy(*state);
    return 0;
}

static void test_edges(void **state)
{
    shmb_mooncake_t *m = *state;
    static const struct { uint64_t addr, len; } cases[] = {
        {A, 1},                   /* first byte of the first buffer */
        {A, 0x1000},              /* all of it */
        {A + 0x1000 - 16, 16},    /* last valid start */
        {A + 0x1000 - 15, 16},    /* straddles A and B */
        {B, 16},                  /* first byte of B, A's last byte just before */
        {B + 0x2000 - 1, 1},      /* last byte of B */
        {B + 0x2000, 1},          /* one past the end of B: a gap */
        {0x18000, 4},             /* between buffers */
        {0, 4},                   /* before the first */
        {A - 1, 2},               /* starts just before the first */
        {C + 0x1000, 1},          /* one past the end of C */
        {UINT64_MAX - 4, 4},      /* far after the last */
        {C, 0x1001},              /* longer than the buffer */
        {C + 8, UINT64_MAX},      /* length that wraps */
        {C + 8, UINT64_MAX - 7},  /* addr + len wraps around to C */
        {C + 8, 0 - (C + 8)},     /* addr + len wraps to exactly 0 */
        {C, 0},                   /* len = 0 */
        {E, 16},                  /* only in E, which has no SHM path */
        {E + 0x900, 16},          /* in E and F: findBuffer takes E */
        {F + 0x1000 - 1, 1},      /* last byte of F */
        {F + 0x1000, 1},          /* after the last */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(m, TARGET, edges, NEDGES, cases[i].addr, cases[i].len);
    /* and the answers are where they should be */
    void *p = NULL;
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, B + 5, 1, &p), 0);
    assert_ptr_equal(p, fake_local(&fake, 2, edges[2].shm_path) + 5);
    /* once F is mapped (its last byte above), tryResolve finds it too */
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, E + 0x900, 1, &p), 0);
    assert_ptr_equal(p, fake_local(&fake, 4, edges[4].shm_path) + 0x100);
}

static void test_unknown_target(void **state)
{
    shmb_mooncake_t *m = *state;
    void *sentinel = (void *)&fake, *p = sentinel;
    assert_int_equal(shmb_mooncake_relocate(m, 999, A, 1, &p), -ENOENT);
    /* segment 0 is the local segment, which holds no buffer */
    assert_int_equal(shmb_mooncake_relocate(m, 0, A, 1, &p), -EINVAL);
    /* another segment exists but holds no SHM buffer */
    assert_int_equal(shmb_mooncake_relocate(m, 3, A, 1, &p), -EINVAL);
    assert_ptr_equal(p, sentinel);
    assert_int_equal(fake.attach_calls, 0);
    assert_int_equal(shmb_mooncake_attached(m), 0);
}

static void test_attach_once_and_detach_all(void **state)
{
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    assert_int_equal(shmb_mooncake_create(edges, NEDGES, TARGET, 3, &ops, &m), 0);
    assert_int_equal(shmb_mooncake_attached(m), 0);
    void *p;
    for (int round = 0; round < 5; round++) {
        assert_int_equal(shmb_mooncake_relocate(m, TARGET, A + 100, 8, &p), 0);
        assert_int_equal(shmb_mooncake_relocate(m, TARGET, B + 0x1000, 8, &p), 0);
        assert_int_equal(shmb_mooncake_relocate(m, TARGET, B + 0x1ff8, 8, &p), 0);
        assert_int_equal(fake.attach_calls, 2);
        assert_int_equal(shmb_mooncake_attached(m), 2);
    }
    /* each attach maps the whole buffer, not the first request's length */
    assert_int_equal(fake.maps[0].length, 0x1000);
    assert_int_equal(fake.maps[1].length, 0x2000);
    assert_int_equal(fake.maps[1].index, 2);
    assert_string_equal(fake.maps[1].path, edges[2].shm_path);
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, C, 1, &p), 0);
    /* F's last byte: its first is also E's, which findBuffer takes */
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, F + 0xfff, 1, &p), 0);
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, E, 1, &p), -EINVAL); /* never attached */
    assert_int_equal(fake.attach_calls, 4);
    assert_int_equal(shmb_mooncake_attached(m), 4);
    shmb_mooncake_destroy(m);
    assert_int_equal(fake.detach_calls, 4);
    for (size_t i = 0; i < fake.n; i++)
        assert_true(fake.maps[i].detached);
    shmb_mooncake_destroy(NULL);
}

static void test_attach_failure_is_retried(void **state)
{
    shmb_mooncake_t *m = *state;
    void *sentinel = (void *)&fake, *p = sentinel;
    fake.fail_next = -EACCES;
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, A, 1, &p), -EACCES);
    assert_ptr_equal(p, sentinel);
    assert_int_equal(shmb_mooncake_attached(m), 0);
    assert_int_equal(fake.attach_calls, 1);
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, A, 1, &p), 0);
    assert_ptr_equal(p, fake_local(&fake, 1, edges[1].shm_path));
    assert_int_equal(fake.attach_calls, 2);
    assert_int_equal(shmb_mooncake_attached(m), 1);
}

static void test_bad_create(void **state)
{
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *sentinel = (shmb_mooncake_t *)&fake, *m = sentinel;
    assert_int_equal(shmb_mooncake_create(edges, 0, TARGET, 0, &ops, &m), -EINVAL);
    assert_int_equal(shmb_mooncake_create(NULL, 1, TARGET, 0, &ops, &m), -EINVAL);
    assert_int_equal(shmb_mooncake_create(edges, NEDGES, TARGET, 0, NULL, &m), -EINVAL);
    shmb_mooncake_ops_t no_attach = {NULL, fake_detach, &fake};
    assert_int_equal(shmb_mooncake_create(edges, NEDGES, TARGET, 0, &no_attach, &m), -EINVAL);
    shmb_mooncake_buffer_t zero[2] = {{0x1000, 0x1000, "/a"}, {0x3000, 0, "/b"}};
    assert_int_equal(shmb_mooncake_create(zero, 2, TARGET, 0, &ops, &m), -EINVAL);
    assert_ptr_equal(m, sentinel);
    /* a peer without detach is fine */
    shmb_mooncake_ops_t attach_only = {fake_attach, NULL, &fake};
    assert_int_equal(shmb_mooncake_create(zero, 1, TARGET, 0, &attach_only, &m), 0);
    void *p;
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, 0x1000, 1, &p), 0);
    shmb_mooncake_destroy(m);
    free(fake.maps[0].base);
}

enum { NRANDOM = 1000 };
static shmb_mooncake_buffer_t random_bufs[NRANDOM];
static char random_paths[NRANDOM][48];

static uint64_t build_random(shmb_rng_t *rng)
{
    uint64_t base = 0x7f0000000000ull;
    for (int i = 0; i < NRANDOM; i++) {
        base += shmb_rng_below(rng, 3) * 4096; /* gaps of 0, 1 or 2 pages */
        random_bufs[i].addr = base;
        random_bufs[i].length = (1 + shmb_rng_below(rng, 4)) * 4096;
        /* one in ten registered without SHM */
        if (shmb_rng_below(rng, 10) == 0)
            random_paths[i][0] = '\0';
        else
            snprintf(random_paths[i], sizeof(random_paths[i]), "/mooncake_bench_77_cafef00d_%d", i);
        random_bufs[i].shm_path = random_paths[i];
        base += random_bufs[i].length;
    }
    /* register in a random order */
    for (int i = NRANDOM - 1; i > 0; i--) {
        int j = (int)shmb_rng_below(rng, (uint64_t)i + 1);
        shmb_mooncake_buffer_t tmp = random_bufs[i];
        random_bufs[i] = random_bufs[j];
        random_bufs[j] = tmp;
    }
    return base;
}

static void test_random_against_reference(void **state)
{
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 1234);
    uint64_t end = build_random(&rng);
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    assert_int_equal(shmb_mooncake_create(random_bufs, NRANDOM, 42, 100, &ops, &m), 0);
    uint64_t lo = 0x7f0000000000ull - 8192, span = end + 8192 - lo;
    int hits = 0;
    for (int k = 0; k < 20000; k++) {
        uint64_t addr = lo + shmb_rng_below(&rng, span);
        uint64_t len = 1 + shmb_rng_below(&rng, 8192);
        check(m, 42, random_bufs, NRANDOM, addr, len);
        hits += reference(random_bufs, NRANDOM, addr, len) >= 0;
    }
    assert_true(hits > 2000 && hits < 20000);
    assert_int_equal(fake.attach_calls, (int)shmb_mooncake_attached(m));
    shmb_mooncake_destroy(m);
    assert_int_equal(fake.detach_calls, fake.attach_calls);
}

static void test_batch_sums_relocations(void **state)
{
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 5);
    uint64_t end = build_random(&rng);
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    assert_int_equal(shmb_mooncake_create(random_bufs, NRANDOM, 9, 10, &ops, &m), 0);
    enum { N = 5000 };
    static shmb_lookup_request_t req[N];
    uint64_t lo = 0x7f0000000000ull - 8192, span = end + 8192 - lo;
    for (int k = 0; k < N; k++) {
        req[k].addr = lo + shmb_rng_below(&rng, span);
        req[k].len = shmb_rng_below(&rng, 4096); /* 0 now and then: a miss */
    }
    uint64_t got = shmb_mooncake_relocate_batch(m, 9, req, N);
    uint64_t want = 0;
    int hits = 0;
    for (int k = 0; k < N; k++) {
        int i = reference(random_bufs, NRANDOM, req[k].addr, req[k].len);
        if (i < 0)
            continue;
        unsigned char *local = fake_local(&fake, (size_t)i, random_bufs[i].shm_path);
        assert_non_null(local);
        want += (uint64_t)(uintptr_t)(local + (req[k].addr - random_bufs[i].addr));
        hits++;
    }
    assert_true(hits > N / 10 && hits < N);
    assert_true(got == want);
    assert_true(shmb_mooncake_relocate_batch(m, 9, req, N) == want); /* steady state */
    assert_true(shmb_mooncake_relocate_batch(m, 9, req, 0) == 0);
    assert_true(shmb_mooncake_relocate_batch(m, 12345, req, N) == 0); /* unknown target */
    shmb_mooncake_destroy(m);
}

/* The latency chain sums the relocations; relocation 0 landing d bytes off moves request 1 by d. */
static void test_chain_is_dependent(void **state)
{
    shmb_mooncake_t *m = *state;
    const shmb_lookup_request_t r[2] = {{.addr = A + 1, .len = 1}, {.addr = B + 5, .len = 1}};
    void *p0 = NULL, *p1 = NULL;
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, r[0].addr, 1, &p0), 0);
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, r[1].addr, 1, &p1), 0);
    const uint64_t t0 = (uint64_t)(uintptr_t)p0, t1 = (uint64_t)(uintptr_t)p1;
    uint64_t expected[2] = {t0, t1};
    assert_true(shmb_mooncake_relocate_chain(m, TARGET, r, expected, 2) == t0 + t1);
    assert_true(shmb_mooncake_relocate_chain(m, TARGET, r, expected, 0) == 0);
    expected[0] = t0 - 16; /* relocation 0 lands 16 bytes past what was expected */
    assert_true(shmb_mooncake_relocate_chain(m, TARGET, r, expected, 2) == t0 + t1 + 16);
    expected[0] = t0 + 0x2000; /* 0x2000 short: request 1 falls below A, in no buffer */
    void *none = NULL;
    assert_int_equal(shmb_mooncake_relocate(m, TARGET, B + 5 - 0x2000, 1, &none), -EINVAL);
    assert_true(shmb_mooncake_relocate_chain(m, TARGET, r, expected, 2) == t0); /* a miss counts 0 */
    assert_true(shmb_mooncake_relocate_chain(m, 12345, r, expected, 2) == 0);   /* unknown target */
}

/* Wrong answers (0..2) for b[i].addr + off alone and to the buffer's end, against the fake's mapping. */
static long wrong_at(shmb_mooncake_t *m, const shmb_mooncake_buffer_t *b, size_t i, uint64_t off)
{
    long wrong = 0;
    for (int whole = 0; whole < 2; whole++) {
        void *got = NULL;
        int rc = shmb_mooncake_relocate(m, 77, b[i].addr + off, whole ? b[i].length - off : 1, &got);
        if (!b[i].shm_path[0]) {
            wrong += rc != -EINVAL;
            continue;
        }
        unsigned char *local = fake_local(&fake, i, b[i].shm_path);
        wrong += rc != 0 || !local || got != local + off;
    }
    return wrong;
}

/* wrong_at summed over the offsets 0, step, 2 * step, ... and the last byte of each buffer. */
static long count_wrong(shmb_mooncake_t *m, const shmb_mooncake_buffer_t *b, size_t n, uint64_t step)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++) {
        for (uint64_t off = 0; off < b[i].length; off += step)
            wrong += wrong_at(m, b, i, off);
        if ((b[i].length - 1) % step)
            wrong += wrong_at(m, b, i, b[i].length - 1);
    }
    return wrong;
}

/* Every byte of every registered buffer; the planted fault (buffer 2 mapped 64 off) seen on each of its. */
static void test_every_address(void **state)
{
    for (int lie = 0; lie < 2; lie++) {
        shmb_mooncake_ops_t ops = fake_ops();
        fake.lie_index = lie ? 2 : -1;
        shmb_mooncake_t *m = NULL;
        assert_int_equal(shmb_mooncake_create(plain, NPLAIN, 77, 5, &ops, &m), 0);
        long wrong = count_wrong(m, plain, NPLAIN, 1);
        assert_int_equal(wrong, lie ? 2 * (long)plain[2].length : 0);
        shmb_mooncake_destroy(m);
    }
}

/* Outside every buffer: gaps, either side, a range running into the next buffer, the buffer without SHM. */
static void test_outside_every_buffer(void **state)
{
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    assert_int_equal(shmb_mooncake_create(plain, NPLAIN, 77, 5, &ops, &m), 0);
    assert_int_equal(count_wrong(m, plain, NPLAIN, 512), 0); /* map every SHM buffer first */
    static const struct { uint64_t addr, len; } out[] = {
        {0, 1}, {0x0ffff, 1}, {0x0ffff, 2}, {0x13000, 1}, {0x12fff, 2}, {0x1ffff, 1}, {0x21000, 1},
        {0x20fff, 2}, {0x40000, 1}, {0x407ff, 1}, {0x53000, 1}, {UINT64_MAX, 1}, {0x50000, UINT64_MAX},
        {0x50008, 0 - (uint64_t)0x50008},
    };
    for (size_t k = 0; k < sizeof(out) / sizeof(out[0]); k++) {
        void *sentinel = (void *)&fake, *got = sentinel;
        assert_int_equal(shmb_mooncake_relocate(m, 77, out[k].addr, out[k].len, &got), -EINVAL);
        assert_ptr_equal(got, sentinel);
    }
    assert_int_equal(shmb_mooncake_attached(m), 4);
    shmb_mooncake_destroy(m);
}

/* First, last and all bytes of each of 1000 buffers in random order, with gaps and some without SHM. */
static void test_random_every_buffer(void **state)
{
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 99);
    build_random(&rng);
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    assert_int_equal(shmb_mooncake_create(random_bufs, NRANDOM, 77, 10, &ops, &m), 0);
    assert_int_equal(count_wrong(m, random_bufs, NRANDOM, 1000), 0);
    shmb_mooncake_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_edges, setup_edges, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_target, setup_edges, teardown),
        cmocka_unit_test(test_attach_once_and_detach_all),
        cmocka_unit_test_setup_teardown(test_attach_failure_is_retried, setup_edges, teardown),
        cmocka_unit_test(test_bad_create),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_batch_sums_relocations),
        cmocka_unit_test_setup_teardown(test_chain_is_dependent, setup_edges, teardown),
        cmocka_unit_test(test_every_address),
        cmocka_unit_test(test_outside_every_buffer),
        cmocka_unit_test(test_random_every_buffer),
    };
    return shmb_test_run(tests, NULL, NULL);
}
