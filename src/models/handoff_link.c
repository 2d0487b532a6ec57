/* handoff_link: the lender's end of Flow-IPC's object hand-off, for the
 * hand-off benchmark and the transfer benchmark's SHM-jemalloc and zero-copy
 * rows; handoff_internal.h has the messages and the contract. */
#include "handoff_internal.h"

#include "shmbench/clock.h"
#include "shmbench/copy.h"
#include "shmbench/error.h"
#include "shmbench/stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t shmb_handoff_bench_wrong_tag;
uint64_t shmb_handoff_bench_wrong_byte;
uint64_t shmb_handoff_bench_lost_return;
uint64_t shmb_handoff_bench_wrong_return;

typedef shmb_handoff_link_t link_t;

void shmb_handoff_link_init(link_t *l, uint64_t seed, char *why, size_t why_cap)
{
    memset(l, 0, sizeof(*l));
    l->peer.channel.fd = -1;
    l->seed = seed;
    l->local.seed = seed;
    l->why = why;
    l->why_cap = why_cap;
}

/* ---- messages from the lender ---- */

static int post(link_t *l, unsigned char kind, const void *head, size_t hn, const void *payload, size_t n)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX];
    msg[0] = kind;
    memcpy(msg + 1, head, hn);
    memcpy(msg + 1 + hn, payload, n);
    return shmb_channel_send(&l->peer.channel, msg, 1 + hn + n);
}

/* The borrower's reply, which must be of kind want; its payload into out. */
static int await(link_t *l, unsigned char want, void *out, size_t cap, size_t *out_len)
{
    unsigned char msg[SHMB_CHANNEL_MSG_MAX];
    size_t len = 0;
    int ret = shmb_channel_recv(&l->peer.channel, msg, sizeof(msg), &len);
    if (ret < 0)
        return ret;
    if (msg[0] == HANDOFF_FAIL && len > sizeof(int32_t)) {
        int32_t err;
        memcpy(&err, msg + 1, sizeof(err));
        snprintf(l->why, l->why_cap, "%.*s", (int)(len - 1 - sizeof(err)), (const char *)msg + 1 + sizeof(err));
        return err == EPROTO ? -EPROTO : shmb_error_record("the borrower process", err > 0 ? err : EIO, l->why);
    }
    if (msg[0] != want || len - 1 > cap) {
        snprintf(l->why, l->why_cap, "the borrower process replied with kind 0x%02x, %zu bytes, not 0x%02x", msg[0],
                 len, want);
        return -EPROTO;
    }
    memcpy(out, msg + 1, len - 1);
    *out_len = len - 1;
    return 0;
}

/* A session message (LendArena, LendPool) to the borrower and its Response
 * back to the lender: crossing with a peer, by call without. */
static int session_round_trip(link_t *l, const void *msg, size_t len)
{
    unsigned char reply[SHMB_CHANNEL_MSG_MAX];
    size_t n = 0;
    int ret;
    if (l->peer.pid > 0) {
        ret = post(l, HANDOFF_SESSION, msg, len, NULL, 0);
        if (ret == 0)
            ret = await(l, HANDOFF_DONE, reply, sizeof(reply), &n);
    } else {
        ret = shmb_fipc_borrower_receive(l->local.jemalloc, msg, len, reply, sizeof(reply), &n);
    }
    return ret < 0 ? ret : shmb_fipc_lender_on_response(l->lender, reply, n);
}

/* Lends every pool of the arena not lent yet, each round trip timed. */
static int lend_new_pools(link_t *l)
{
    size_t n = shmb_fipc_jemalloc_pools(l->j, NULL);
    if (n == l->pools_known)
        return 0;
    shmb_fipc_pool_t *list = malloc(n * sizeof(*list));
    if (!list)
        return shmb_error_record("malloc", ENOMEM, NULL);
    n = shmb_fipc_jemalloc_pool_list(l->j, list, n);
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        unsigned char msg[SHMB_FIPC_MSG_MAX];
        size_t len = 0;
        const uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_fipc_lender_lend_pool(l->lender, list[i].id, msg, sizeof(msg), &len);
        if (ret == -EEXIST) {
            ret = 0;
            continue;
        }
        if (ret == 0)
            ret = session_round_trip(l, msg, len);
        const uint64_t t1 = shmb_clock_now_ns();
        if (ret == 0 && shmb_stats_append(&l->pool_lends, (double)(t1 - t0)) < 0)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    free(list);
    if (ret == -EREMOTEIO)
        snprintf(l->why, l->why_cap, "flowipc_jemalloc: the borrower refused a pool lent to it");
    l->pools_known = n;
    return ret == -EREMOTEIO ? -EPROTO : ret;
}

/* ---- objects ---- */

void *shmb_handoff_object_addr(int f, const shmb_handoff_object_t *o)
{
    return f == HANDOFF_JEMALLOC ? o->j.addr : o->c.addr;
}

int shmb_handoff_link_construct(link_t *l, int f, size_t bytes, shmb_handoff_object_t *o)
{
    const uint64_t k = l->next[f]++;
    const int wrong = shmb_handoff_bench_wrong_tag == k + 1 || l->wrong_tag == k + 1;
    const uint64_t tag = handoff_tag(l->seed, f, k) + (uint64_t)wrong;
    int ret = f == HANDOFF_JEMALLOC ? shmb_fipc_lender_construct(l->lender, bytes, &o->j)
                                    : shmb_fipc_classic_construct(l->arena, bytes, &o->c);
    if (ret < 0)
        return ret;
    void *addr = shmb_handoff_object_addr(f, o);
    memcpy(addr, &tag, sizeof(tag));
    memcpy((char *)addr + bytes - sizeof(tag), &tag, sizeof(tag));
    return f == HANDOFF_JEMALLOC ? lend_new_pools(l) : 0;
}

void shmb_handoff_link_fill(link_t *l, int f, shmb_handoff_object_t *o, shmb_copy_fn fn, const void *src,
                            size_t payload)
{
    char *at = (char *)shmb_handoff_object_addr(f, o) + SHMB_HANDOFF_PAYLOAD_AT;
    fn(at, src, payload);
    if (shmb_handoff_bench_wrong_byte && shmb_handoff_bench_wrong_byte == l->next[f])
        at[payload / 2] ^= 1;
}

void shmb_handoff_link_drop(int f, shmb_handoff_object_t *o)
{
    unsigned char none[SHMB_FIPC_MSG_MAX];
    size_t len = 0;
    if (f == HANDOFF_JEMALLOC)
        shmb_fipc_object_release(&o->j, none, sizeof(none), &len);
    else
        shmb_fipc_classic_release(&o->c);
}

/* ---- hand-offs ---- */

/* The lender takes the return of hand-off k (the hooks lose it, or make it
 * name another object: its handle's last byte changed). */
static int take_return(link_t *l, uint64_t k, const void *msg, size_t n)
{
    if (shmb_handoff_bench_lost_return && shmb_handoff_bench_lost_return == k + 1)
        return 0;
    unsigned char other[SHMB_CHANNEL_MSG_MAX];
    if (shmb_handoff_bench_wrong_return && shmb_handoff_bench_wrong_return == k + 1 && n > 0 && n <= sizeof(other)) {
        memcpy(other, msg, n);
        other[n - 1] ^= 0x40;
        msg = other;
    }
    int ret = shmb_fipc_lender_on_return(l->lender, msg, n);
    return ret < 0 ? shmb_handoff_refused(ret, HANDOFF_JEMALLOC, "the return", k, l->why, l->why_cap) : 0;
}

/* Flavour f's lend of hand-off k's object: its handle blob into blob; a
 * refusal said with the hand-off's number. */
static int lend(link_t *l, int f, const shmb_handoff_object_t *o, uint64_t k, unsigned char *blob, size_t cap,
                size_t *len)
{
    int ret = f == HANDOFF_JEMALLOC ? shmb_fipc_lender_lend(l->lender, &o->j, blob, cap, len)
                                    : shmb_fipc_classic_lend(l->arena, &o->c, blob, cap, len);
    return ret < 0 ? shmb_handoff_refused(ret, f, "lend", k, l->why, l->why_cap) : 0;
}

/* With a peer: lend, the blob out (with the object's size and payload),
 * the lender's reference dropped, the reply back (SHM-jemalloc: the return,
 * then the lender's free; SHM-classic: this driver's acknowledgement with
 * the borrower's frees, as it has no return message). */
static int give_peer(link_t *l, int f, shmb_handoff_object_t *o, const shmb_handoff_head_t *head)
{
    const uint64_t k = l->next[f] - 1;
    unsigned char blob[SHMB_FIPC_MSG_MAX], msg[SHMB_CHANNEL_MSG_MAX];
    size_t len = 0, n = 0;
    int ret = lend(l, f, o, k, blob, sizeof(blob), &len);
    if (ret < 0)
        return ret;
    ret = post(l, f == HANDOFF_JEMALLOC ? HANDOFF_JBLOB : HANDOFF_CBLOB, head, sizeof(*head), blob, len);
    shmb_handoff_link_drop(f, o);
    if (f == HANDOFF_CLASSIC)
        return ret < 0 ? ret : await(l, HANDOFF_DONE, &l->peer_frees, sizeof(l->peer_frees), &n);
    if (ret == 0)
        ret = await(l, HANDOFF_RETURN, msg, sizeof(msg), &n);
    return ret < 0 ? ret : take_return(l, k, msg, n);
}

/* In this process: the same calls, no message crossing. */
static int give_local(link_t *l, int f, shmb_handoff_object_t *o, const shmb_handoff_head_t *head)
{
    const uint64_t k = l->next[f] - 1;
    unsigned char blob[SHMB_FIPC_MSG_MAX], msg[SHMB_FIPC_MSG_MAX];
    size_t len = 0, n = 0;
    int ret = lend(l, f, o, k, blob, sizeof(blob), &len);
    if (ret < 0)
        return ret;
    shmb_handoff_link_drop(f, o);
    if (f == HANDOFF_CLASSIC)
        return shmb_handoff_borrow_classic(&l->local, blob, len, head, l->why, l->why_cap);
    ret = shmb_handoff_borrow_jemalloc(&l->local, blob, len, head, msg, sizeof(msg), &n, l->why, l->why_cap);
    return ret < 0 ? ret : take_return(l, k, msg, n);
}

int shmb_handoff_link_give(link_t *l, int f, shmb_handoff_object_t *o, size_t bytes, size_t payload, size_t from)
{
    const shmb_handoff_head_t head = {bytes, payload, from};
    return l->peer.pid > 0 ? give_peer(l, f, o, &head) : give_local(l, f, o, &head);
}

int shmb_handoff_link_check_freed(link_t *l, int f)
{
    uint64_t freed;
    size_t lent = 0;
    if (f == HANDOFF_JEMALLOC) {
        freed = shmb_fipc_lender_frees(l->lender);
        lent = shmb_fipc_lender_lent(l->lender);
    } else {
        freed = shmb_fipc_classic_frees(l->arena) +
                (l->peer.pid > 0 ? l->peer_frees : shmb_fipc_classic_frees(l->local.classic));
    }
    if (freed == l->next[f] && lent == 0)
        return 0;
    snprintf(l->why, l->why_cap, "%s: after %llu hand-offs, %llu objects were freed and %zu are still lent",
             handoff_flavour_name(f), (unsigned long long)l->next[f], (unsigned long long)freed, lent);
    return -EPROTO;
}

/* ---- set-up and teardown ---- */

/* A model's own step-by-step check refused the hand-off. */
static int verified(link_t *l, int f, int ret)
{
    if (ret != -EFAULT && ret != -EBADMSG && ret != -ESTALE)
        return ret;
    snprintf(l->why, l->why_cap, "%s: the model's step-by-step hand-off check failed: %s", handoff_flavour_name(f),
             strerror(-ret));
    return -EPROTO;
}

/* SHM-classic: the pool, checked, the lender's arena, and the borrower's
 * opened by name. */
static int open_classic(link_t *l, const char *prefix, size_t pool_bytes, size_t check_bytes)
{
    int ret = shmb_fipc_classic_create(prefix, pool_bytes, &l->pool);
    if (ret == 0)
        ret = verified(l, HANDOFF_CLASSIC, shmb_fipc_classic_handoff_verify(l->pool, check_bytes));
    if (ret == 0)
        ret = shmb_fipc_classic_arena_create(l->pool, &l->arena);
    if (ret < 0)
        return ret;
    const char *name = shmb_fipc_classic_name(l->pool);
    if (l->peer.pid <= 0)
        return shmb_fipc_classic_arena_open(name, &l->local.classic);
    unsigned char none[8];
    size_t n = 0;
    ret = post(l, HANDOFF_OPEN, name, strlen(name), NULL, 0);
    return ret < 0 ? ret : await(l, HANDOFF_DONE, none, sizeof(none), &n);
}

/* SHM-jemalloc: the arena, checked, the lender's session, the arena lent
 * (untimed) and every pool lent (timed). */
static int open_jemalloc(link_t *l, const char *prefix, size_t check_bytes)
{
    int ret = shmb_fipc_jemalloc_create(prefix, 0, &l->j);
    if (ret == 0)
        ret = verified(l, HANDOFF_JEMALLOC, shmb_fipc_handoff_verify(l->j, check_bytes));
    if (ret == 0)
        ret = shmb_fipc_lender_create(l->j, &l->lender);
    if (ret == 0 && l->peer.pid <= 0)
        ret = shmb_fipc_borrower_create(&l->local.jemalloc);
    unsigned char msg[SHMB_FIPC_MSG_MAX];
    size_t len = 0;
    if (ret == 0)
        ret = shmb_fipc_lender_lend_arena(l->lender, msg, sizeof(msg), &len);
    if (ret == 0)
        ret = session_round_trip(l, msg, len);
    if (ret == -EREMOTEIO) {
        snprintf(l->why, l->why_cap, "flowipc_jemalloc: the borrower refused the arena lent to it");
        ret = -EPROTO;
    }
    return ret == 0 ? lend_new_pools(l) : ret;
}

int shmb_handoff_link_open(link_t *l, int f, const char *prefix, size_t pool_bytes, size_t check_bytes)
{
    return f == HANDOFF_JEMALLOC ? open_jemalloc(l, prefix, check_bytes)
                                 : open_classic(l, prefix, pool_bytes, check_bytes);
}

void shmb_handoff_link_close(link_t *l, int f, int failed)
{
    if (f == HANDOFF_JEMALLOC) {
        if (failed && l->lender)
            shmb_fipc_lender_disconnect(l->lender);
        shmb_fipc_borrower_destroy(l->local.jemalloc);
        shmb_fipc_lender_destroy(l->lender);
        shmb_fipc_jemalloc_destroy(l->j, 1, NULL);
        l->local.jemalloc = NULL;
        l->lender = NULL;
        l->j = NULL;
        l->pools_known = 0;
        shmb_stats_release(&l->pool_lends);
        return;
    }
    shmb_fipc_classic_arena_destroy(l->local.classic);
    shmb_fipc_classic_arena_destroy(l->arena);
    shmb_fipc_classic_destroy(l->pool, 1);
    l->local.classic = NULL;
    l->arena = NULL;
    l->pool = NULL;
}
