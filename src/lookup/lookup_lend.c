/* SHM-jemalloc's first attach across the lookup's two processes, as its
 * session makes it (shm_session.cpp: lend_arena, lend_shm_pool,
 * receive_shm_pool): the owner lends the arena and each pool on the peer's
 * channel, each a synchronous round trip the borrower answers once it has
 * mapped the pool, then sends a handle and tag per block for the borrower
 * to read back. A message's first byte is its kind. */
#include "lookup_internal.h"

#include "shmbench/channel.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int shmb_lookup_lend_fault;

enum {
    LEND_READY = 1, /* peer -> owner: serving */
    LEND_SESSION,   /* owner -> peer: a session request (LendArena, LendPool) */
    LEND_REPLY,     /* peer -> owner: its Response */
    LEND_CHECK,     /* owner -> peer: u32 count, then count x (handle blob, u64 tag) */
    LEND_END,       /* owner -> peer: nothing more */
    LEND_FAIL,      /* peer -> owner: the peer failed; the why follows */
};

#define CHECK_ENTRY (SHMB_FIPC_HANDLE_BYTES + sizeof(uint64_t))
#define CHECK_MAX ((SHMB_CHANNEL_MSG_MAX - 1 - sizeof(uint32_t)) / CHECK_ENTRY)

/* ---- the owner: the lender ---- */

typedef struct lender_run {
    shmb_channel_t *ch;
    shmb_fipc_lender_t *l;
    int peer_failed; /* the peer said LEND_FAIL: it serves no more */
    char *why;
    size_t cap;
} lender_run_t;

/* The peer's next message, of kind want, its payload into out. */
static int receive(lender_run_t *r, unsigned char want, unsigned char *out, size_t cap, size_t *n)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX];
    size_t len = 0;
    int ret = shmb_channel_recv(r->ch, msg, sizeof(msg), &len);
    if (ret < 0)
        return ret;
    if (msg[0] == LEND_FAIL) {
        r->peer_failed = 1;
        snprintf(r->why, r->cap, "%.*s", (int)(len - 1), (const char *)msg + 1);
        return -EPROTO;
    }
    if (msg[0] != want || len - 1 > cap) {
        snprintf(r->why, r->cap, "flowipc_jemalloc: the borrower sent kind %u (%zu bytes), not %u", msg[0], len,
                 want);
        return -EPROTO;
    }
    memcpy(out, msg + 1, len - 1);
    *n = len - 1;
    return 0;
}

/* One session request to the borrower and its Response back: a round trip
 * of send_sync_request. */
static int round_trip(lender_run_t *r, const unsigned char *request, size_t len, const char *what)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX], reply[SHMB_CHANNEL_MSG_MAX];
    msg[0] = LEND_SESSION;
    memcpy(msg + 1, request, len);
    size_t n = 0;
    int ret = shmb_channel_send(r->ch, msg, len + 1);
    if (ret == 0)
        ret = receive(r, LEND_REPLY, reply, sizeof(reply), &n);
    if (ret == 0 && (ret = shmb_fipc_lender_on_response(r->l, reply, n)) < 0) {
        snprintf(r->why, r->cap, "flowipc_jemalloc: the borrower refused the %s lent to it", what);
        ret = -EPROTO;
    }
    return ret;
}

/* LendArena, then LendPool per pool, each a timed round trip. */
static int lend_all(lender_run_t *r, const shmb_fipc_pool_t *pools, size_t npools, shmb_samples_t *per_pool,
                    double *total_ns)
{
    unsigned char msg[SHMB_FIPC_MSG_MAX];
    size_t len = 0;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_fipc_lender_lend_arena(r->l, msg, sizeof(msg), &len);
    if (ret == 0)
        ret = round_trip(r, msg, len, "arena");
    /* the planted fault: the last pool is never lent */
    const size_t lent = npools - (shmb_lookup_lend_fault == SHMB_LOOKUP_LEND_FAULT_POOL && npools > 0);
    for (size_t i = 0; i < lent && ret == 0; i++) {
        const uint64_t t1 = shmb_clock_now_ns();
        if ((ret = shmb_fipc_lender_lend_pool(r->l, pools[i].id, msg, sizeof(msg), &len)) == 0)
            ret = round_trip(r, msg, len, "pool");
        const uint64_t t2 = shmb_clock_now_ns();
        if (ret == 0 && per_pool && shmb_stats_append(per_pool, (double)(t2 - t1)) < 0)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    *total_ns = (double)(shmb_clock_now_ns() - t0);
    return ret;
}

/* A handle and the tag the owner wrote there, per block, in chunks. */
static int send_checks(lender_run_t *r, const shmb_lookup_block_t *blocks, const uint64_t *tags, uint64_t n)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX];
    int ret = 0;
    for (uint64_t first = 0; first < n && ret == 0; first += CHECK_MAX) {
        const uint32_t count = (uint32_t)(n - first < CHECK_MAX ? n - first : CHECK_MAX);
        unsigned char *at = msg + 1 + sizeof(count);
        msg[0] = LEND_CHECK;
        memcpy(msg + 1, &count, sizeof(count));
        for (uint32_t i = 0; i < count && ret == 0; i++, at += CHECK_ENTRY) {
            const uint64_t id = first + i;
            const uint64_t tag = tags[id] + (shmb_lookup_lend_fault == SHMB_LOOKUP_LEND_FAULT_TAG && id + 1 == n);
            size_t len = 0;
            ret = shmb_fipc_lender_handle(r->l, (uint32_t)blocks[id].key, blocks[id].offset, at,
                                          SHMB_FIPC_HANDLE_BYTES, &len);
            memcpy(at + SHMB_FIPC_HANDLE_BYTES, &tag, sizeof(tag));
        }
        if (ret == 0)
            ret = shmb_channel_send(r->ch, msg, (size_t)(at - msg));
    }
    return ret;
}

int shmb_lookup_lend_owner(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd, shmb_fipc_jemalloc_t *j,
                           const shmb_lookup_block_t *blocks, const uint64_t *tags, uint64_t n,
                           shmb_samples_t *per_pool, double *total_ns, char *why, size_t cap)
{
    lender_run_t r = {.ch = &peer->channel, .why = why, .cap = cap};
    size_t npools = shmb_fipc_jemalloc_pool_list(j, NULL, 0);
    shmb_fipc_pool_t *pools = malloc((npools ? npools : 1) * sizeof(*pools));
    if (!pools)
        return shmb_error_record("malloc", ENOMEM, NULL);
    npools = shmb_fipc_jemalloc_pool_list(j, pools, npools);
    int ret = shmb_fipc_lender_create(j, &r.l);
    if (ret == 0 && (ret = shmb_peer_post(peer, cmd)) < 0)
        shmb_fipc_lender_destroy(r.l);
    if (ret < 0) { /* nothing posted: nothing to end or await */
        free(pools);
        return ret;
    }
    unsigned char none[8];
    size_t got = 0;
    ret = receive(&r, LEND_READY, none, sizeof(none), &got);
    if (ret == 0)
        ret = lend_all(&r, pools, npools, per_pool, total_ns);
    if (ret == 0)
        ret = send_checks(&r, blocks, tags, n);
    const unsigned char end = LEND_END;
    if (!r.peer_failed && ret != -EPIPE)
        shmb_channel_send(r.ch, &end, 1);
    uint64_t result[SHMB_PEER_RESULTS] = {0};
    int served = shmb_peer_await(peer, result);
    if (served == -EPROTO && !r.peer_failed)
        snprintf(why, cap, "%s", (const char *)peer->data);
    ret = ret < 0 ? ret : served;
    if (ret == 0 && (result[0] != npools + 1 || result[1] != n)) {
        snprintf(why, cap, "flowipc_jemalloc: the borrower answered %llu of %zu session requests (LendArena and "
                 "a LendPool per pool) and read %llu of %llu blocks", (unsigned long long)result[0], npools + 1,
                 (unsigned long long)result[1], (unsigned long long)n);
        ret = -EPROTO;
    }
    shmb_fipc_lender_destroy(r.l);
    free(pools);
    return ret;
}

/* ---- the peer: the borrower ---- */

/* Borrows each block of a LEND_CHECK message and reads its tag. */
static int check_blocks(shmb_fipc_borrower_t *b, const unsigned char *msg, size_t len, uint64_t *checked,
                        char *why, size_t cap)
{
    uint32_t count = 0;
    if (len >= sizeof(count))
        memcpy(&count, msg, sizeof(count));
    if (len < sizeof(count) || len != sizeof(count) + count * CHECK_ENTRY) {
        snprintf(why, cap, "flowipc_jemalloc: a check message of %zu bytes", len);
        return -EPROTO;
    }
    const unsigned char *at = msg + sizeof(count);
    for (uint32_t i = 0; i < count; i++, at += CHECK_ENTRY) {
        shmb_fipc_object_t obj = {0};
        uint64_t tag, word;
        memcpy(&tag, at + SHMB_FIPC_HANDLE_BYTES, sizeof(tag));
        int ret = shmb_fipc_borrower_borrow(b, at, SHMB_FIPC_HANDLE_BYTES, &obj);
        if (ret < 0) {
            snprintf(why, cap, "flowipc_jemalloc: block %llu: borrow failed (%s): its pool was not lent",
                     (unsigned long long)*checked, strerror(-ret));
            return -EPROTO;
        }
        memcpy(&word, obj.addr, sizeof(word));
        unsigned char ret_msg[SHMB_FIPC_MSG_MAX];
        size_t ret_len = 0;
        shmb_fipc_object_release(&obj, ret_msg, sizeof(ret_msg), &ret_len);
        if (word != tag) {
            snprintf(why, cap, "flowipc_jemalloc: block %llu reads 0x%llx through the lent pool, not the owner's "
                     "tag 0x%llx", (unsigned long long)*checked, (unsigned long long)word, (unsigned long long)tag);
            return -EPROTO;
        }
        ++*checked;
    }
    return 0;
}

/* One message from the lender; *end once it said LEND_END. */
static int serve_one(shmb_channel_t *ch, shmb_fipc_borrower_t *b, uint64_t result[SHMB_PEER_RESULTS], int *end,
                     char *why, size_t cap)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX], reply[SHMB_CHANNEL_MSG_MAX];
    size_t len = 0, n = 0;
    int ret = shmb_channel_recv(ch, msg, sizeof(msg), &len);
    if (ret < 0)
        return ret;
    switch (msg[0]) {
    case LEND_SESSION:
        reply[0] = LEND_REPLY;
        if ((ret = shmb_fipc_borrower_receive(b, msg + 1, len - 1, reply + 1, sizeof(reply) - 1, &n)) == 0)
            ret = shmb_channel_send(ch, reply, n + 1);
        result[0] += ret == 0;
        return ret;
    case LEND_CHECK:
        return check_blocks(b, msg + 1, len - 1, &result[1], why, cap);
    case LEND_END:
        *end = 1;
        return 0;
    default:
        snprintf(why, cap, "flowipc_jemalloc: the lender sent kind %u", msg[0]);
        return -EPROTO;
    }
}

int shmb_lookup_lend_serve(shmb_channel_t *ch, char *why, size_t cap, uint64_t result[SHMB_PEER_RESULTS])
{
    shmb_fipc_borrower_t *b = NULL;
    const unsigned char ready = LEND_READY;
    int ret = shmb_fipc_borrower_create(&b);
    if (ret == 0)
        ret = shmb_channel_send(ch, &ready, 1);
    for (int end = 0; ret == 0 && !end;)
        ret = serve_one(ch, b, result, &end, why, cap);
    if (ret < 0 && ret != -EPIPE) {
        unsigned char msg[SHMB_CHANNEL_MSG_MAX];
        const int len = snprintf((char *)msg + 1, sizeof(msg) - 1, "%s",
                                 why[0] ? why : "flowipc_jemalloc: the borrower failed");
        msg[0] = LEND_FAIL;
        shmb_channel_send(ch, msg, (size_t)len + 1);
        if (!why[0])
            snprintf(why, cap, "flowipc_jemalloc: the borrower failed: %s", strerror(-ret));
        ret = ret == -ENOMEM ? ret : -EPROTO;
    }
    shmb_fipc_borrower_destroy(b);
    return ret;
}
