/* handoff_peer: the borrower's side of Flow-IPC's object hand-off (borrow,
 * check the tags, release) and the borrower process that runs it, a peer
 * (base/peer.c) serving one command: the hand-off's messages. */
#include "handoff_internal.h"

#include "shmbench/copy.h"
#include "shmbench/error.h"
#include "shmbench/peer.h"
#include "shmbench/segment.h"

#include "base/peer_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

uint64_t shmb_handoff_bench_peer_dies_at;

#define WHY_MAX 200

/* Hand-off k's object, read through the borrower's pointer: its tags, and
 * its payload when the head names one. */
static int check_object(const void *addr, const shmb_handoff_head_t *head, uint64_t tag, int flavour, uint64_t k,
                        char *why, size_t cap)
{
    uint64_t first, last;
    const size_t bytes = (size_t)head->bytes;
    memcpy(&first, addr, sizeof(first));
    memcpy(&last, (const char *)addr + bytes - sizeof(last), sizeof(last));
    if (first != tag || last != tag) {
        snprintf(why, cap,
                 "%s: hand-off %llu: the borrowed object at %p reads 0x%llx / 0x%llx, not the lender's tag 0x%llx",
                 handoff_flavour_name(flavour), (unsigned long long)k, addr, (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)tag);
        return -EPROTO;
    }
    size_t bad = 0;
    if (head->payload == 0 ||
        !shmb_copy_verify_from((const char *)addr + SHMB_HANDOFF_PAYLOAD_AT, (size_t)head->payload,
                               (size_t)head->from, &bad))
        return 0;
    snprintf(why, cap, "%s: hand-off %llu: the borrowed object's payload of %llu bytes differs at offset %zu",
             handoff_flavour_name(flavour), (unsigned long long)k, (unsigned long long)head->payload, bad);
    return -EPROTO;
}

/* A head the object can hold: its tags, and its payload inside it. */
static int head_fits(const shmb_handoff_head_t *head)
{
    return head->bytes >= 2 * sizeof(uint64_t) &&
           (head->payload == 0 || head->payload <= head->bytes - SHMB_HANDOFF_PAYLOAD_SLACK);
}

int shmb_handoff_refused(int ret, int flavour, const char *call, uint64_t k, char *why, size_t cap)
{
    if (ret == -ENOMEM)
        return ret;
    snprintf(why, cap, "%s: hand-off %llu: %s failed: %s", handoff_flavour_name(flavour), (unsigned long long)k,
             call, strerror(-ret));
    return -EPROTO;
}

/* ---- the borrower's side (the lender's process or the peer) ---- */

int shmb_handoff_borrow_jemalloc(shmb_handoff_borrower_t *b, const void *blob, size_t len,
                                 const shmb_handoff_head_t *head, void *msg, size_t cap, size_t *msg_len, char *why,
                                 size_t wcap)
{
    const uint64_t k = b->next[HANDOFF_JEMALLOC]++;
    shmb_fipc_object_t obj = {0};
    int ret = head_fits(head) ? shmb_fipc_borrower_borrow(b->jemalloc, blob, len, &obj) : -EBADMSG;
    if (ret < 0)
        return shmb_handoff_refused(ret, HANDOFF_JEMALLOC, "borrow", k, why, wcap);
    int checked = check_object(obj.addr, head, handoff_tag(b->seed, HANDOFF_JEMALLOC, k), HANDOFF_JEMALLOC, k,
                               why, wcap);
    ret = shmb_fipc_object_release(&obj, msg, cap, msg_len);
    if (ret < 0 || checked < 0)
        return checked < 0 ? checked : ret;
    if (*msg_len == 0) {
        snprintf(why, wcap, "flowipc_jemalloc: hand-off %llu: the borrower's release wrote no return message",
                 (unsigned long long)k);
        return -EPROTO;
    }
    return 0;
}

int shmb_handoff_borrow_classic(shmb_handoff_borrower_t *b, const void *blob, size_t len,
                                const shmb_handoff_head_t *head, char *why, size_t wcap)
{
    const uint64_t k = b->next[HANDOFF_CLASSIC]++;
    shmb_fipc_classic_object_t obj = {0};
    int ret = head_fits(head) ? shmb_fipc_classic_borrow(b->classic, blob, len, &obj) : -EBADMSG;
    if (ret < 0)
        return shmb_handoff_refused(ret, HANDOFF_CLASSIC, "borrow", k, why, wcap);
    ret = check_object(obj.addr, head, handoff_tag(b->seed, HANDOFF_CLASSIC, k), HANDOFF_CLASSIC, k, why, wcap);
    shmb_fipc_classic_release(&obj);
    return ret;
}

void shmb_handoff_borrower_close(shmb_handoff_borrower_t *b)
{
    shmb_fipc_classic_arena_destroy(b->classic);
    shmb_fipc_borrower_destroy(b->jemalloc);
    b->classic = NULL;
    b->jemalloc = NULL;
}

/* ---- the borrower process ---- */

/* The test hook: this process dies on the handle of hand-off next. */
static void maybe_die(uint64_t next)
{
    if (shmb_handoff_bench_peer_dies_at && next + 1 == shmb_handoff_bench_peer_dies_at)
        raise(SIGKILL);
}

/* One message to the borrower: its reply's kind and payload into out. */
static int serve_one(shmb_handoff_borrower_t *b, const unsigned char *msg, size_t len, unsigned char *kind,
                     unsigned char *out, size_t cap, size_t *out_len, char *why, size_t wcap)
{
    *kind = HANDOFF_DONE;
    *out_len = 0;
    shmb_handoff_head_t head = {0, 0, 0};
    const size_t at = 1 + sizeof(head); /* a handle message's blob */
    if ((msg[0] == HANDOFF_JBLOB || msg[0] == HANDOFF_CBLOB) && len > at)
        memcpy(&head, msg + 1, sizeof(head));
    switch (msg[0]) {
    case HANDOFF_OPEN: {
        char name[SHMB_SEGMENT_NAME_MAX + 1];
        snprintf(name, sizeof(name), "%.*s", (int)(len - 1), (const char *)msg + 1);
        return b->classic ? -EEXIST : shmb_fipc_classic_arena_open(name, &b->classic);
    }
    case HANDOFF_SESSION: {
        int ret = b->jemalloc ? 0 : shmb_fipc_borrower_create(&b->jemalloc);
        return ret < 0 ? ret : shmb_fipc_borrower_receive(b->jemalloc, msg + 1, len - 1, out, cap, out_len);
    }
    case HANDOFF_JBLOB:
        maybe_die(b->next[HANDOFF_JEMALLOC]);
        *kind = HANDOFF_RETURN;
        return b->jemalloc && len > at
                   ? shmb_handoff_borrow_jemalloc(b, msg + at, len - at, &head, out, cap, out_len, why, wcap)
                   : -EPROTO;
    case HANDOFF_CBLOB: {
        maybe_die(b->next[HANDOFF_CLASSIC]);
        int ret = b->classic && len > at ? shmb_handoff_borrow_classic(b, msg + at, len - at, &head, why, wcap)
                                         : -EPROTO;
        const uint64_t frees = ret == 0 ? shmb_fipc_classic_frees(b->classic) : 0;
        memcpy(out, &frees, sizeof(frees));
        *out_len = sizeof(frees);
        return ret;
    }
    default:
        snprintf(why, wcap, "the borrower process got a message of unknown kind 0x%02x", msg[0]);
        return -EPROTO;
    }
}

/* The borrower process's one command: answers each message on its channel
 * until QUIT or the owner's end closes; arg[0] is the seed of the tags. */
static SHMB_PEER_COMMAND(serve)
{
    shmb_channel_t *ch = &((shmb_peer_t *)ctx)->channel; /* the peer's end, in the peer */
    shmb_handoff_borrower_t b = {.seed = cmd->arg[0]};
    unsigned char msg[SHMB_CHANNEL_MSG_MAX], reply[SHMB_CHANNEL_MSG_MAX];
    for (;;) {
        size_t len = 0, n = 0;
        int ret = shmb_channel_recv(ch, msg, sizeof(msg), &len);
        if (ret < 0)
            shmb_peer_exit_if_orphaned(); /* the owner is gone (its end closed first): clean up, exit */
        if (ret < 0 || msg[0] == HANDOFF_QUIT)
            break;
        char why[WHY_MAX] = "";
        ret = serve_one(&b, msg, len, &reply[0], reply + 1, sizeof(reply) - 1, &n, why, sizeof(why));
        if (ret < 0) {
            const int32_t err = -ret;
            reply[0] = HANDOFF_FAIL;
            memcpy(reply + 1, &err, sizeof(err));
            n = sizeof(err) + (size_t)snprintf((char *)reply + 1 + sizeof(err), sizeof(reply) - 1 - sizeof(err),
                                               "%s", why[0] ? why : strerror(err));
        }
        if (shmb_channel_send(ch, reply, n + 1) < 0)
            break;
    }
    shmb_handoff_borrower_close(&b);
    return 0;
}

enum { HANDOFF_OP_SERVE = 1 };
static const shmb_peer_handler_t handoff_run[] = {[HANDOFF_OP_SERVE] = serve};
static const shmb_peer_commands_t handoff_commands = {handoff_run, sizeof(handoff_run) / sizeof(*handoff_run), NULL};

int shmb_handoff_peer_start(uint64_t seed, const char *prefix, shmb_peer_t *peer)
{
    int ret = shmb_peer_start(peer, prefix, 0, &handoff_commands, peer);
    if (ret < 0)
        return ret;
    const shmb_peer_cmd_t cmd = {.op = HANDOFF_OP_SERVE, .arg = {seed}};
    if ((ret = shmb_peer_post(peer, &cmd)) < 0)
        shmb_peer_stop(peer);
    return ret;
}

int shmb_handoff_peer_stop(shmb_peer_t *peer, int run_ret)
{
    if (peer->pid <= 0)
        return 0;
    const unsigned char quit = HANDOFF_QUIT;
    if (run_ret == -EPIPE || shmb_channel_send(&peer->channel, &quit, 1) < 0) {
        run_ret = -EPIPE;
        shmb_channel_close(&peer->channel); /* its serve ends on the closed channel */
    }
    int ret = shmb_peer_await(peer, NULL);
    const int stopped = shmb_peer_stop(peer);
    if (ret == 0)
        ret = stopped;
    return ret < 0 ? ret : run_ret == -EPIPE ? -EPIPE : 0;
}
