/* Mooncake's request path: TENT's submitTransfer over the model's engine, with and without the hooks. */

#include "helpers.h"

#include "shmbench/mooncake.h"
#include "shmbench/rng.h"

#include "mooncake_fake.h"

static unsigned char source[0x4000];

static void copy_bytes(void *ctx, void *dst, const void *src, uint64_t len)
{
    (void)ctx;
    memcpy(dst, src, (size_t)len);
}

static shmb_mooncake_engine_t *make_engine(void)
{
    shmb_mooncake_engine_t *e = NULL;
    assert_int_equal(shmb_mooncake_engine_create(plain, NPLAIN, 77, 5, source, sizeof(source), &e), 0);
    return e;
}

static shmb_mooncake_request_t request(shmb_mooncake_opcode_t op, uint64_t target_id, uint64_t addr, uint64_t len)
{
    return (shmb_mooncake_request_t){op, source, target_id, addr, len};
}

/* Registered buffers are counted per target segment (what findBuffer walks); unknown or no engine: 0. */
static void test_engine_buffers(void **state)
{
    shmb_mooncake_engine_t *e = make_engine();
    assert_int_equal(shmb_mooncake_engine_buffers(e, 77), NPLAIN);
    assert_int_equal(shmb_mooncake_engine_buffers(e, 1), 1); /* one of the other segments */
    assert_int_equal(shmb_mooncake_engine_buffers(e, 4242), 0);
    shmb_mooncake_engine_destroy(e);
    assert_int_equal(shmb_mooncake_engine_create(plain, 1, 77, 0, NULL, 0, &e), 0);
    assert_int_equal(shmb_mooncake_engine_buffers(e, 77), 1);
    shmb_mooncake_engine_destroy(e);
    assert_int_equal(shmb_mooncake_engine_buffers(NULL, 77), 0);
}

/* No hooks, the path alone: the selection finds the target's buffer; the task carries the peer's address. */
static void test_engine_finds_buffer(void **state)
{
    shmb_mooncake_engine_t *e = make_engine();
    for (size_t i = 0; i < NPLAIN; i++) {
        const uint64_t offs[] = {0, plain[i].length / 2, plain[i].length - 1};
        for (size_t k = 0; k < 3; k++) {
            shmb_mooncake_request_t r = request(SHMB_MOONCAKE_WRITE, 77, plain[i].addr + offs[k], 1);
            shmb_mooncake_submitted_t done = {0};
            int rc = shmb_mooncake_engine_submit(e, &r, NULL, &done);
            if (!plain[i].shm_path[0]) {
                assert_int_equal(rc, -EINVAL); /* no transport: SHM is not among its transports */
                continue;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(done.buffer_addr, plain[i].addr);
            assert_ptr_equal(done.target, (void *)(uintptr_t)r.target_offset);
            assert_int_equal(done.transferred_bytes, 1);
        }
    }
    /* a whole buffer, and a range that crosses from A into B: no buffer */
    shmb_mooncake_request_t whole = request(SHMB_MOONCAKE_READ, 77, 0x11000, 0x2000);
    shmb_mooncake_submitted_t done = {0};
    assert_int_equal(shmb_mooncake_engine_submit(e, &whole, NULL, &done), 0);
    assert_int_equal(done.buffer_addr, 0x11000);
    assert_int_equal(done.transferred_bytes, 0x2000);
    shmb_mooncake_request_t across = request(SHMB_MOONCAKE_READ, 77, 0x10ff0, 0x20);
    assert_int_equal(shmb_mooncake_engine_submit(e, &across, NULL, &done), -EINVAL);
    shmb_mooncake_engine_destroy(e);
}

/* With the system's translation and a copy: the bytes land in the mapping of the right buffer, both ways. */
static void test_engine_translates_and_copies(void **state)
{
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    assert_int_equal(shmb_mooncake_create(plain, NPLAIN, 77, 5, &ops, &m), 0);
    shmb_mooncake_engine_t *e = make_engine();
    const shmb_mooncake_hooks_t hooks = {shmb_mooncake_translate, copy_bytes, m};
    for (size_t i = 0; i < sizeof(source); i++)
        source[i] = (unsigned char)(i * 7 + 1);
    shmb_mooncake_request_t w = request(SHMB_MOONCAKE_WRITE, 77, 0x50000 + 100, 0x2000);
    shmb_mooncake_submitted_t done = {0};
    assert_int_equal(shmb_mooncake_engine_submit(e, &w, &hooks, &done), 0);
    unsigned char *g = fake_local(&fake, 4, plain[4].shm_path);
    assert_non_null(g);
    assert_ptr_equal(done.target, g + 100);
    assert_int_equal(done.buffer_addr, 0x50000);
    assert_memory_equal(g + 100, source, 0x2000);
    memset(g, 0xa5, 0x3000);
    shmb_mooncake_request_t rd = request(SHMB_MOONCAKE_READ, 77, 0x50000 + 0x2fff, 1);
    assert_int_equal(shmb_mooncake_engine_submit(e, &rd, &hooks, &done), 0);
    assert_int_equal(source[0], 0xa5);
    assert_int_equal(source[1], (unsigned char)(1 * 7 + 1));
    /* the translation's error is the request's; the next try maps it */
    fake.fail_next = -EACCES;
    shmb_mooncake_request_t a = request(SHMB_MOONCAKE_WRITE, 77, 0x10000, 16);
    assert_int_equal(shmb_mooncake_engine_submit(e, &a, &hooks, &done), -EACCES);
    assert_int_equal(shmb_mooncake_engine_submit(e, &a, &hooks, &done), 0);
    assert_ptr_equal(done.target, fake_local(&fake, 1, plain[1].shm_path));
    shmb_mooncake_engine_destroy(e);
    shmb_mooncake_destroy(m);
}

/* The hooks' calls, counted, around the model's translation and the copy. */
static size_t translations, copies;

static int counting_translate(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local)
{
    translations++;
    return shmb_mooncake_translate(ctx, target_id, addr, len, local);
}

static void counting_copy(void *ctx, void *dst, const void *src, uint64_t len)
{
    copies++;
    copy_bytes(ctx, dst, src, len);
}

/* n descriptors in one submit: each copied once into place, runs merged into tasks; n = 0 or a bad one refused. */
static void test_engine_submit_n(void **state)
{
    enum { N = 32, LEN = 64 };
    shmb_mooncake_ops_t ops = fake_ops();
    shmb_mooncake_t *m = NULL;
    assert_int_equal(shmb_mooncake_create(plain, NPLAIN, 77, 5, &ops, &m), 0);
    shmb_mooncake_engine_t *e = make_engine();
    const shmb_mooncake_hooks_t hooks = {counting_translate, counting_copy, m};
    shmb_mooncake_request_t req[N];
    shmb_mooncake_submitted_t out[N];
    for (size_t i = 0; i < LEN; i++)
        source[i] = (unsigned char)(i * 3 + 5);
    for (int i = 0; i < N; i++)
        req[i] = request(SHMB_MOONCAKE_WRITE, 77, 0x50000 + (uint64_t)i * LEN, LEN);
    translations = copies = 0;
    assert_int_equal(shmb_mooncake_engine_submit_n(e, req, N, &hooks, out), 0);
    assert_int_equal(translations, N);
    assert_int_equal(copies, N);
    unsigned char *g = fake_local(&fake, 4, plain[4].shm_path);
    assert_non_null(g);
    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        const ptrdiff_t off = (unsigned char *)out[i].target - g;
        assert_true(off >= 0 && off % LEN == 0 && off / LEN < N);
        seen[off / LEN]++;
        assert_int_equal(out[i].buffer_addr, 0x50000);
        assert_int_equal(out[i].transferred_bytes, LEN);
        assert_memory_equal(g + i * LEN, source, LEN);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
    for (int i = 0; i < N; i++)
        req[i].source = source + i * LEN; /* contiguous both sides: merged */
    translations = copies = 0;
    assert_int_equal(shmb_mooncake_engine_submit_n(e, req, N, &hooks, NULL), 0);
    assert_true(translations < N);
    assert_int_equal(copies, translations);
    assert_int_equal(shmb_mooncake_engine_submit_n(e, req, 0, &hooks, out), -EINVAL);
    req[7].length = 0;
    assert_int_equal(shmb_mooncake_engine_submit_n(e, req, N, &hooks, out), -EINVAL);
    req[7].length = LEN;
    req[9].target_id = 999;
    assert_int_equal(shmb_mooncake_engine_submit_n(e, req, N, NULL, out), -ENOENT);
    shmb_mooncake_engine_destroy(e);
    shmb_mooncake_destroy(m);
}

static void test_engine_refuses(void **state)
{
    shmb_mooncake_engine_t *e = make_engine();
    shmb_mooncake_submitted_t done = {(void *)&fake, 1, 2};
    shmb_mooncake_request_t r = request(SHMB_MOONCAKE_WRITE, 999, 0x10000, 16);
    assert_int_equal(shmb_mooncake_engine_submit(e, &r, NULL, &done), -ENOENT); /* unknown segment */
    r.target_id = 3; /* another segment; its one buffer is elsewhere */
    assert_int_equal(shmb_mooncake_engine_submit(e, &r, NULL, &done), -EINVAL);
    r.target_id = 77;
    r.target_offset = 0x30000; /* a gap */
    assert_int_equal(shmb_mooncake_engine_submit(e, &r, NULL, &done), -EINVAL);
    r.target_offset = 0x10000;
    r.length = 0;
    assert_int_equal(shmb_mooncake_engine_submit(e, &r, NULL, &done), -EINVAL);
    r.length = 16;
    r.opcode = (shmb_mooncake_opcode_t)2;
    assert_int_equal(shmb_mooncake_engine_submit(e, &r, NULL, &done), -EINVAL);
    assert_int_equal(shmb_mooncake_engine_submit(NULL, &r, NULL, &done), -EINVAL);
    assert_int_equal(shmb_mooncake_engine_submit(e, NULL, NULL, &done), -EINVAL);
    assert_ptr_equal(done.target, (void *)&fake); /* untouched on error */
    assert_int_equal(done.buffer_addr, 1);
    r.opcode = SHMB_MOONCAKE_READ;
    assert_int_equal(shmb_mooncake_engine_submit(e, &r, NULL, NULL), 0); /* out may be NULL */
    shmb_mooncake_engine_destroy(e);
    shmb_mooncake_engine_destroy(NULL);
    shmb_mooncake_engine_t *bad = NULL;
    assert_int_equal(shmb_mooncake_engine_create(plain, 0, 77, 0, NULL, 0, &bad), -EINVAL);
    assert_int_equal(shmb_mooncake_engine_create(plain, NPLAIN, 0, 0, NULL, 0, &bad), -EINVAL);
    assert_int_equal(shmb_mooncake_engine_create(plain, NPLAIN, 77, 0, NULL, 16, &bad), -EINVAL);
    assert_int_equal(shmb_mooncake_engine_create(NULL, 1, 77, 0, NULL, 0, &bad), -EINVAL);
    assert_null(bad);
}

/* Deterministic: the same answers twice and in a second engine, past the Slab ring's 128 entries. */
static void test_engine_deterministic(void **state)
{
    enum { N = 3000 };
    static shmb_mooncake_request_t req[N];
    shmb_rng_t rng;
    shmb_rng_seed(&rng, 7);
    static const size_t shm_index[] = {0, 1, 2, 4};
    uint64_t want = 0, each[N];
    for (int k = 0; k < N; k++) {
        const shmb_mooncake_buffer_t *b = &plain[shm_index[shmb_rng_below(&rng, 4)]];
        uint64_t len = 1 + shmb_rng_below(&rng, b->length);
        uint64_t addr = b->addr + shmb_rng_below(&rng, b->length - len + 1);
        req[k] = request(k % 2 ? SHMB_MOONCAKE_READ : SHMB_MOONCAKE_WRITE, 77, addr, len);
        each[k] = addr + b->addr;
        want += each[k];
    }
    shmb_mooncake_engine_t *e = make_engine(), *e2 = make_engine();
    assert_true(shmb_mooncake_engine_submit_batch(e, req, N, NULL) == want);
    assert_true(shmb_mooncake_engine_submit_batch(e, req, N, NULL) == want);
    assert_true(shmb_mooncake_engine_submit_batch(e2, req, N, NULL) == want);
    assert_true(shmb_mooncake_engine_submit_batch(e, req, 0, NULL) == 0);
    req[5].target_id = 999; /* a failed request counts 0 */
    assert_true(shmb_mooncake_engine_submit_batch(e, req, N, NULL) == want - each[5]);
    shmb_mooncake_engine_destroy(e2);
    shmb_mooncake_engine_destroy(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_translates_and_copies),
        cmocka_unit_test(test_engine_buffers),
        cmocka_unit_test(test_engine_finds_buffer),
        cmocka_unit_test(test_engine_refuses),
        cmocka_unit_test(test_engine_submit_n),
        cmocka_unit_test(test_engine_deterministic),
    };
    return shmb_test_run(tests, NULL, NULL);
}
