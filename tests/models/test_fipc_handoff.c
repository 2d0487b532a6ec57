/* SHM-jemalloc's object hand-off: lend, borrow, return, in process and across a fork; faults, bad messages. */

#include "helpers.h"

#include "shmbench/channel.h"
#include "shmbench/error.h"
#include "shmbench/fipc_jemalloc.h"

#include "models/fipc_internal.h"

static const char *prefix; /* "/shmb_test_jem_<pid>_" (helpers.h) */

static void test_handoff_verify(void **state)
{
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 4096), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 1), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 1 << 20), 0);
    assert_int_equal(shmb_fipc_handoff_verify(j, 0), -EINVAL);
    assert_int_equal(shmb_fipc_handoff_verify(NULL, 64), -EINVAL);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(shmb_test_ours(), 0);
}

/* Each planted fault fails the verification with its own error, and the next clean run passes again. */
static void test_handoff_faults(void **state)
{
    static const struct {
        int fault, err;
    } cases[] = {
        {SHMB_FIPC_FAULT_BORROW_ADDR, -EFAULT}, {SHMB_FIPC_FAULT_BLOB, -EBADMSG},
        {SHMB_FIPC_FAULT_RETURN, -EBADMSG},     {SHMB_FIPC_FAULT_EARLY_FREE, -ESTALE},
        {SHMB_FIPC_FAULT_DOUBLE_FREE, -ESTALE},
    };
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_fipc_fault = cases[i].fault;
        int rc = shmb_fipc_handoff_verify(j, 256);
        shmb_fipc_fault = SHMB_FIPC_FAULT_NONE;
        assert_int_equal(rc, cases[i].err);
        assert_int_equal(shmb_fipc_handoff_verify(j, 256), 0);
    }
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(shmb_test_ours(), 0);
}

/* Carries every request of the lender to the borrower and the reply back. */
static void lend_pools_in_process(shmb_fipc_jemalloc_t *j, shmb_fipc_lender_t *l, shmb_fipc_borrower_t *b)
{
    unsigned char msg[SHMB_FIPC_MSG_MAX], reply[SHMB_FIPC_MSG_MAX];
    size_t len, reply_len;
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), -EEXIST);
    assert_int_equal(shmb_fipc_borrower_receive(b, msg, len, reply, sizeof(reply), &reply_len), 0);
    assert_int_equal(shmb_fipc_lender_on_response(l, reply, reply_len), 0);
    shmb_fipc_pool_t pools[8];
    size_t n = shmb_fipc_jemalloc_pool_list(j, pools, 8);
    assert_true(n >= 1 && n <= 8);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(shmb_fipc_lender_lend_pool(l, pools[i].id, msg, sizeof(msg), &len), 0);
        assert_int_equal(shmb_fipc_borrower_receive(b, msg, len, reply, sizeof(reply), &reply_len), 0);
        assert_int_equal(shmb_fipc_lender_on_response(l, reply, reply_len), 0);
    }
    assert_int_equal(shmb_fipc_lender_lend_pool(l, pools[0].id, msg, sizeof(msg), &len), -EEXIST);
    assert_int_equal(shmb_fipc_lender_lend_pool(l, 999999, msg, sizeof(msg), &len), -ENOENT);
}

/* An object lent and borrowed twice is kept until both returns, freed once; then a disconnected session. */
static void test_handoff_lent_twice(void **state)
{
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *l;
    shmb_fipc_borrower_t *b;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_lender_create(j, &l), 0);
    assert_int_equal(shmb_fipc_borrower_create(&b), 0);
    shmb_fipc_object_t obj = {0}, got[2] = {{0}, {0}};
    assert_int_equal(shmb_fipc_lender_construct(l, 100, &obj), 0);
    unsigned char blob[2][SHMB_FIPC_HANDLE_BYTES], msg[SHMB_FIPC_MSG_MAX], ret[2][SHMB_FIPC_MSG_MAX];
    size_t len, ret_len[2];
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[0], sizeof(blob[0]), &len), -EINVAL); /* no arena lent */
    lend_pools_in_process(j, l, b);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[i], sizeof(blob[i]), &len), 0);
        assert_int_equal(len, SHMB_FIPC_HANDLE_BYTES);
    }
    assert_memory_equal(blob[0], blob[1], SHMB_FIPC_HANDLE_BYTES);
    assert_int_equal(shmb_fipc_lender_lent(l), 1);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(len, 0);
    assert_null(obj.addr);
    for (int i = 0; i < 2; i++)
        assert_int_equal(shmb_fipc_borrower_borrow(b, blob[i], SHMB_FIPC_HANDLE_BYTES, &got[i]), 0);
    assert_ptr_equal(got[0].addr, got[1].addr);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(shmb_fipc_object_release(&got[i], ret[i], sizeof(ret[i]), &ret_len[i]), 0);
        shmb_fipc_handle_t h, want;
        assert_int_equal(shmb_fipc_handle_decode(blob[i], SHMB_FIPC_HANDLE_BYTES, &want), 0);
        assert_int_equal(shmb_fipc_return_decode(ret[i], ret_len[i], &h), 0);
        assert_memory_equal(&h, &want, sizeof(h));
    }
    assert_int_equal(shmb_fipc_lender_on_return(l, ret[0], ret_len[0]), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 0);
    assert_int_equal(shmb_fipc_lender_lent(l), 1);
    assert_int_equal(shmb_fipc_lender_on_return(l, ret[1], ret_len[1]), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 1);
    assert_int_equal(shmb_fipc_lender_lent(l), 0);
    assert_int_equal(shmb_fipc_lender_on_return(l, ret[1], ret_len[1]), -ENOENT); /* returned already */

    /* an object borrowed when the borrower goes (its deleter keeps the session); both sides disconnected:
     * no more lending, the release returns nothing, the object stays lent */
    assert_int_equal(shmb_fipc_lender_construct(l, 100, &obj), 0);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[0], sizeof(blob[0]), &len), 0);
    assert_int_equal(shmb_fipc_borrower_borrow(b, blob[0], SHMB_FIPC_HANDLE_BYTES, &got[0]), 0);
    shmb_fipc_lender_disconnect(l);
    shmb_fipc_borrower_disconnect(b);
    shmb_fipc_borrower_destroy(b);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, blob[1], sizeof(blob[1]), &len), -EPIPE);
    assert_int_equal(*(volatile unsigned char *)got[0].addr, *(volatile unsigned char *)obj.addr);
    assert_int_equal(shmb_fipc_object_release(&got[0], ret[0], sizeof(ret[0]), &ret_len[0]), 0);
    assert_int_equal(ret_len[0], 0);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 1);
    assert_int_equal(shmb_fipc_lender_lent(l), 1);
    shmb_fipc_lender_destroy(l); /* the session's reference goes: freed */
    assert_int_equal(shmb_fipc_lender_frees(NULL), 0);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(shmb_test_ours(), 0);
}

static void test_handoff_bad_messages(void **state)
{
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *l;
    shmb_fipc_borrower_t *b;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_lender_create(j, &l), 0);
    assert_int_equal(shmb_fipc_borrower_create(&b), 0);
    unsigned char msg[SHMB_FIPC_MSG_MAX] = {0}, reply[SHMB_FIPC_MSG_MAX];
    size_t len = 99;
    shmb_fipc_object_t obj = {0}, got = {0};
    assert_int_equal(shmb_fipc_lender_construct(l, 0, &obj), -EINVAL);
    assert_int_equal(shmb_fipc_lender_construct(l, 64, &obj), 0);
    /* pool not lent yet: the arena is, the object's pool is not */
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, msg, sizeof(msg), &len), -ENOENT);
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, msg, SHMB_FIPC_HANDLE_BYTES - 1, &len), -EINVAL);
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, SHMB_FIPC_MSG_MAX - 1, &len), -EINVAL);
    /* messages of the wrong kind or size */
    memset(msg, 0, sizeof(msg));
    assert_int_equal(shmb_fipc_borrower_receive(b, msg, 8, reply, sizeof(reply), &len), -EBADMSG);
    assert_int_equal(shmb_fipc_borrower_receive(b, msg, 0, reply, sizeof(reply), &len), -EBADMSG);
    assert_int_equal(shmb_fipc_lender_on_response(l, msg, 8), -EBADMSG);
    assert_int_equal(shmb_fipc_lender_on_return(l, msg, 16), -EBADMSG);
    assert_int_equal(shmb_fipc_borrower_borrow(b, msg, SHMB_FIPC_HANDLE_BYTES + 1, &got), -EBADMSG);
    assert_int_equal(shmb_fipc_borrower_borrow(b, msg, SHMB_FIPC_HANDLE_BYTES, &got), -ENOENT);
    assert_null(got.addr);
    shmb_fipc_handle_t h;
    assert_int_equal(shmb_fipc_handle_decode(msg, 3, &h), -EBADMSG);
    assert_int_equal(shmb_fipc_return_decode(msg, 16, &h), -EBADMSG);
    /* a pool the borrower cannot open: its Response says so */
    unsigned char lend_pool[64] = {0};
    uint32_t head[2] = {2, 1};
    memcpy(lend_pool, head, sizeof(head));
    uint64_t size = 4096;
    memcpy(lend_pool + 16, &size, sizeof(size));
    memcpy(lend_pool + 24, "/shmb_test_jem_none", 19);
    assert_int_equal(shmb_fipc_borrower_receive(b, lend_pool, 43, reply, sizeof(reply), &len), 0);
    assert_int_equal(shmb_fipc_lender_on_response(l, reply, len), -EREMOTEIO);
    /* releases: an empty object, a buffer too small */
    assert_int_equal(shmb_fipc_object_release(&got, msg, sizeof(msg), &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, SHMB_FIPC_MSG_MAX - 1, &len), -EINVAL);
    assert_non_null(obj.addr);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 1); /* never lent: freed at its last release */
    shmb_fipc_borrower_destroy(b);
    shmb_fipc_lender_destroy(l);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(shmb_test_ours(), 0);
}

/* A forked borrower: answers, borrows (pattern checked), releases and returns; die_midway: exits holding it. */
static int borrower_child(shmb_channel_t *ch, int die_midway)
{
    shmb_fipc_borrower_t *b;
    if (shmb_fipc_borrower_create(&b) != 0)
        return 1;
    unsigned char msg[SHMB_FIPC_MSG_MAX], reply[SHMB_FIPC_MSG_MAX];
    size_t len, reply_len;
    for (;;) {
        if (shmb_channel_recv(ch, msg, sizeof(msg), &len) != 0)
            return 2;
        if (len != SHMB_FIPC_HANDLE_BYTES) {
            if (shmb_fipc_borrower_receive(b, msg, len, reply, sizeof(reply), &reply_len) != 0 ||
                shmb_channel_send(ch, reply, reply_len) != 0)
                return 3;
            continue;
        }
        shmb_fipc_object_t obj = {0};
        if (shmb_fipc_borrower_borrow(b, msg, len, &obj) != 0)
            return 4;
        const unsigned char *p = obj.addr;
        for (size_t i = 0; i < 4096; i++)
            if (p[i] != 0x5a)
                return 5;
        if (die_midway)
            _exit(0);
        if (shmb_fipc_object_release(&obj, reply, sizeof(reply), &reply_len) != 0 ||
            shmb_channel_send(ch, reply, reply_len) != 0)
            return 6;
        shmb_fipc_borrower_destroy(b);
        return 0;
    }
}

/* The lender's side of a hand-off to a forked borrower: pools and object lent, then the return or -EPIPE. */
static void test_handoff_across_fork(void **state)
{
    const int die_midway = shmb_test_arg(state);
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *l;
    assert_int_equal(shmb_fipc_jemalloc_create(prefix, 0, &j), 0);
    assert_int_equal(shmb_fipc_lender_create(j, &l), 0);
    shmb_fipc_object_t obj = {0};
    assert_int_equal(shmb_fipc_lender_construct(l, 4096, &obj), 0);
    memset(obj.addr, 0x5a, 4096);
    shmb_channel_t here, there;
    pid_t pid = shmb_test_fork_pair(&there, &here);
    if (pid == 0)
        _exit(borrower_child(&there, die_midway));
    unsigned char msg[SHMB_FIPC_MSG_MAX];
    size_t len;
    shmb_fipc_pool_t pools[8];
    size_t n = shmb_fipc_jemalloc_pool_list(j, pools, 8);
    assert_int_equal(shmb_fipc_lender_lend_arena(l, msg, sizeof(msg), &len), 0);
    for (size_t i = 0; i <= n; i++) {
        if (i > 0)
            assert_int_equal(shmb_fipc_lender_lend_pool(l, pools[i - 1].id, msg, sizeof(msg), &len), 0);
        assert_int_equal(shmb_channel_send(&here, msg, len), 0);
        assert_int_equal(shmb_channel_recv(&here, msg, sizeof(msg), &len), 0);
        assert_int_equal(shmb_fipc_lender_on_response(l, msg, len), 0);
    }
    assert_int_equal(shmb_fipc_lender_lend(l, &obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_channel_send(&here, msg, len), 0);
    assert_int_equal(shmb_fipc_object_release(&obj, msg, sizeof(msg), &len), 0);
    assert_int_equal(shmb_fipc_lender_frees(l), 0);
    int rc = shmb_channel_recv(&here, msg, sizeof(msg), &len);
    if (die_midway) {
        assert_int_equal(rc, -EPIPE);
        assert_int_equal(shmb_fipc_lender_frees(l), 0);
        assert_int_equal(shmb_fipc_lender_lent(l), 1);
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(shmb_fipc_lender_on_return(l, msg, len), 0);
        assert_int_equal(shmb_fipc_lender_frees(l), 1);
        assert_int_equal(shmb_fipc_lender_lent(l), 0);
    }
    shmb_test_reap_ok(pid);
    shmb_channel_close(&here);
    shmb_fipc_lender_destroy(l); /* a dead borrower's object goes with the session */
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    assert_int_equal(shmb_test_ours(), 0);
}

int main(void)
{
    prefix = shmb_test_prefix_init("/shmb_test_jem_");
    static const int survives = 0, dies = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_handoff_verify, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_faults, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_lent_twice, shmb_test_remove_leftovers),
        cmocka_unit_test_teardown(test_handoff_bad_messages, shmb_test_remove_leftovers),
        shmb_test_case_with("test_handoff_across_fork", test_handoff_across_fork, &survives, shmb_test_remove_leftovers),
        shmb_test_case_with("test_handoff_borrower_dies", test_handoff_across_fork, &dies, shmb_test_remove_leftovers),
    };
    if (!shmb_test_shm_writable())
        return 77;
    return shmb_test_run(tests, NULL, NULL);
}
