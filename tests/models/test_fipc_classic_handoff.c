/* SHM-classic's object hand-off: lend, borrow and the last owner's free, in
 * one process and across a fork, its planted faults and bad input. */

#include "helpers.h"

#include "shmbench/channel.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"

#include "models/fipc_internal.h"

static const char *prefix; /* "/shmb_test_bipc_<pid>_" (helpers.h) */

#define HANDOFF_POOL (8u << 20)

static void test_handoff_verify(void **state)
{
    shmb_fipc_classic_t *pool;
    assert_int_equal(shmb_fipc_classic_create(prefix, HANDOFF_POOL, &pool), 0);
    assert_int_equal(shmb_fipc_classic_handoff_verify(pool, 4096), 0);
    assert_int_equal(shmb_fipc_classic_handoff_verify(pool, 1), 0);
    assert_int_equal(shmb_fipc_classic_handoff_verify(pool, 1 << 20), 0);
    assert_int_equal(shmb_fipc_classic_handoff_verify(pool, 0), -EINVAL);
    assert_int_equal(shmb_fipc_classic_handoff_verify(pool, HANDOFF_POOL), -ENOMEM);
    assert_int_equal(shmb_fipc_classic_handoff_verify(NULL, 64), -EINVAL);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* Each planted fault fails the verification with its own error; the next clean run passes (pool whole). */
static void test_handoff_faults(void **state)
{
    static const struct {
        int fault, err;
    } cases[] = {
        {SHMB_FIPC_FAULT_BORROW_ADDR, -EFAULT},
        {SHMB_FIPC_FAULT_BLOB, -EBADMSG},
        {SHMB_FIPC_FAULT_EARLY_FREE, -ESTALE},
        {SHMB_FIPC_FAULT_DOUBLE_FREE, -ESTALE},
    };
    shmb_fipc_classic_t *pool;
    assert_int_equal(shmb_fipc_classic_create(prefix, HANDOFF_POOL, &pool), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_fipc_fault = cases[i].fault;
        int rc = shmb_fipc_classic_handoff_verify(pool, 256);
        shmb_fipc_fault = SHMB_FIPC_FAULT_NONE;
        assert_int_equal(rc, cases[i].err);
        assert_int_equal(shmb_fipc_classic_handoff_verify(pool, 256), 0);
    }
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* The lender's handle outlives the borrower's: the lender frees; lent twice and borrowed twice, the count follows. */
static void test_handoff_orders(void **state)
{
    shmb_fipc_classic_t *pool;
    shmb_fipc_classic_arena_t *lender, *borrower;
    assert_int_equal(shmb_fipc_classic_create(prefix, HANDOFF_POOL, &pool), 0);
    assert_int_equal(shmb_fipc_classic_arena_create(pool, &lender), 0);
    assert_int_equal(shmb_fipc_classic_arena_open(shmb_fipc_classic_name(pool), &borrower), 0);
    shmb_fipc_classic_object_t obj = {0}, got[2] = {{0}, {0}};
    assert_int_equal(shmb_fipc_classic_construct(lender, 100, &obj), 0);
    assert_int_equal(shmb_fipc_classic_owners(&obj), 1);
    unsigned char blob[SHMB_FIPC_CLASSIC_BLOB_BYTES];
    size_t len;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(shmb_fipc_classic_lend(lender, &obj, blob, sizeof(blob), &len), 0);
        assert_int_equal(len, SHMB_FIPC_CLASSIC_BLOB_BYTES);
        assert_int_equal(shmb_fipc_classic_borrow(borrower, blob, len, &got[i]), 0);
    }
    assert_int_equal(shmb_fipc_classic_owners(&got[0]), 3);
    assert_ptr_not_equal(got[0].addr, obj.addr); /* another mapping */
    assert_ptr_equal(got[0].addr, got[1].addr);
    for (int i = 0; i < 2; i++)
        shmb_fipc_classic_release(&got[i]);
    assert_null(got[0].addr);
    assert_int_equal(shmb_fipc_classic_owners(&obj), 1);
    assert_int_equal(shmb_fipc_classic_frees(borrower), 0);
    shmb_fipc_classic_release(&obj);
    assert_int_equal(shmb_fipc_classic_frees(lender), 1);
    shmb_fipc_classic_release(&obj); /* empty: a no-op */
    shmb_fipc_classic_arena_destroy(borrower);
    shmb_fipc_classic_arena_destroy(lender);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

static void test_handoff_bad_input(void **state)
{
    shmb_fipc_classic_t *pool;
    shmb_fipc_classic_arena_t *lender, *out = NULL;
    assert_int_equal(shmb_fipc_classic_create(prefix, HANDOFF_POOL, &pool), 0);
    assert_int_equal(shmb_fipc_classic_arena_create(pool, &lender), 0);
    assert_int_equal(shmb_fipc_classic_arena_open("/shmb_test_bipc_none", &out), -ENOENT);
    assert_null(out);
    shmb_fipc_classic_object_t obj = {0}, got = {0};
    assert_int_equal(shmb_fipc_classic_construct(lender, 0, &obj), -EINVAL);
    assert_int_equal(shmb_fipc_classic_construct(lender, HANDOFF_POOL - 16, &obj), -ENOMEM);
    assert_int_equal(shmb_fipc_classic_construct(lender, 64, &obj), 0);
    unsigned char blob[SHMB_FIPC_CLASSIC_BLOB_BYTES];
    size_t len;
    assert_int_equal(shmb_fipc_classic_lend(lender, &obj, blob, sizeof(blob) - 1, &len), -EINVAL);
    shmb_fipc_classic_object_t stranger = {blob, {0, 0}}; /* not in the pool */
    assert_int_equal(shmb_fipc_classic_lend(lender, &stranger, blob, sizeof(blob), &len), -EINVAL);
    assert_int_equal(shmb_fipc_classic_owners(&obj), 1);
    uint64_t bad[2] = {64, 2}; /* another scope */
    assert_int_equal(shmb_fipc_classic_borrow(lender, bad, sizeof(bad), &got), -EBADMSG);
    bad[1] = 1;
    assert_int_equal(shmb_fipc_classic_borrow(lender, bad, sizeof(bad) - 1, &got), -EBADMSG);
    bad[0] = HANDOFF_POOL; /* outside the pool */
    assert_int_equal(shmb_fipc_classic_borrow(lender, bad, sizeof(bad), &got), -EBADMSG);
    bad[0] = (uint64_t)-8; /* negative */
    assert_int_equal(shmb_fipc_classic_borrow(lender, bad, sizeof(bad), &got), -EBADMSG);
    assert_null(got.addr);
    uint64_t offset;
    assert_int_equal(shmb_fipc_classic_blob_decode(bad, sizeof(bad), &offset), -EBADMSG);
    shmb_fipc_classic_release(&obj);
    assert_int_equal(shmb_fipc_classic_frees(lender), 1);
    shmb_fipc_classic_arena_destroy(lender);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* A forked borrower: opens the pool, borrows (pattern checked), releases, acks; die_midway: exits holding it. */
static int borrower_child(shmb_channel_t *ch, const char *name, int die_midway)
{
    shmb_fipc_classic_arena_t *a;
    unsigned char blob[SHMB_CHANNEL_MSG_MAX];
    size_t len;
    if (shmb_fipc_classic_arena_open(name, &a) != 0)
        return 1;
    if (shmb_channel_recv(ch, blob, sizeof(blob), &len) != 0)
        return 2;
    shmb_fipc_classic_object_t obj = {0};
    if (shmb_fipc_classic_borrow(a, blob, len, &obj) != 0)
        return 3;
    const unsigned char *p = obj.addr;
    for (size_t i = 0; i < 4096; i++)
        if (p[i] != 0x5a)
            return 4;
    if (die_midway)
        _exit(0);
    shmb_fipc_classic_release(&obj);
    if (shmb_fipc_classic_frees(a) != 1 || shmb_channel_send(ch, "k", 1) != 0)
        return 5;
    shmb_fipc_classic_arena_destroy(a);
    return 0;
}

static void test_handoff_across_fork(void **state)
{
    const int die_midway = shmb_test_arg(state);
    shmb_fipc_classic_t *pool;
    shmb_fipc_classic_arena_t *lender;
    assert_int_equal(shmb_fipc_classic_create(prefix, HANDOFF_POOL, &pool), 0);
    assert_int_equal(shmb_fipc_classic_arena_create(pool, &lender), 0);
    void *probe;
    assert_int_equal(shmb_fipc_classic_alloc(pool, 1, &probe), 0);
    assert_int_equal(shmb_fipc_classic_free(pool, probe), 0);
    shmb_fipc_classic_object_t obj = {0};
    assert_int_equal(shmb_fipc_classic_construct(lender, 4096, &obj), 0);
    memset(obj.addr, 0x5a, 4096);
    shmb_channel_t here, there;
    pid_t pid = shmb_test_fork_pair(&there, &here);
    if (pid == 0)
        _exit(borrower_child(&there, shmb_fipc_classic_name(pool), die_midway));
    unsigned char blob[SHMB_FIPC_CLASSIC_BLOB_BYTES];
    size_t len;
    assert_int_equal(shmb_fipc_classic_lend(lender, &obj, blob, sizeof(blob), &len), 0);
    const unsigned char *count_at = (const unsigned char *)obj.addr;
    shmb_fipc_classic_object_t view = obj; /* to read the count after our release */
    /* ours dropped first: the lent reference keeps it, the borrower its last owner whatever the schedule */
    shmb_fipc_classic_release(&obj);
    assert_int_equal(shmb_channel_send(&here, blob, len), 0);
    char ack;
    int rc = shmb_channel_recv(&here, &ack, 1, &len);
    if (die_midway) {
        assert_int_equal(rc, -EPIPE);
        assert_int_equal(shmb_fipc_classic_owners(&view), 1); /* the dead borrower's, for good */
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(shmb_fipc_classic_frees(lender), 0); /* the child freed it */
        /* freed in the pool: the same block serves the next request */
        shmb_fipc_classic_object_t again = {0};
        assert_int_equal(shmb_fipc_classic_construct(lender, 4096, &again), 0);
        assert_ptr_equal(again.addr, count_at);
        shmb_fipc_classic_release(&again);
    }
    shmb_test_reap_ok(pid);
    shmb_channel_close(&here);
    shmb_fipc_classic_arena_destroy(lender);
    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

int main(void)
{
    prefix = shmb_test_prefix_init("/shmb_test_bipc_");
    static const int survives = 0, dies = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handoff_verify),
        cmocka_unit_test(test_handoff_faults),
        cmocka_unit_test(test_handoff_orders),
        cmocka_unit_test(test_handoff_bad_input),
        shmb_test_case_with("test_handoff_across_fork", test_handoff_across_fork, &survives, NULL),
        shmb_test_case_with("test_handoff_borrower_dies", test_handoff_across_fork, &dies, NULL),
    };
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "/dev/shm is not writable: skipping the pool tests\n");
        return 77;
    }
    int failed = shmb_test_group("shm", tests, NULL, NULL);
    if (failed)
        shmb_test_remove_ours();
    return shmb_test_exit(failed);
}
