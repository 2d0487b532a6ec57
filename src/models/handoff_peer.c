/* handoff_peer: the borrower process of Flow-IPC's object hand-off, a peer
 * (base/peer.c) serving one command: the hand-off's messages over its
 * channel, each answered by the borrower's side (handoff_borrow.c); and the
 * lender's start, pinning and stop of it. */
#include "handoff_internal.h"

#include "shmbench/error.h"
#include "shmbench/peer.h"
#include "shmbench/segment.h"

#include "base/peer_internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

uint64_t shmb_handoff_bench_peer_dies_at;

#define WHY_MAX 200

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
 * until QUIT or the owner's end closes; arg[0] is the seed of the tags.
 * Whatever ends it, its end of the channel closes, so an owner waiting on
 * a reply learns at once (-EPIPE); a failure other than the owner's close
 * is the command's error. */
static SHMB_PEER_COMMAND(serve_handoffs)
{
    shmb_channel_t *ch = &((shmb_peer_t *)ctx)->channel; /* the peer's end, in the peer */
    shmb_handoff_borrower_t b = {.seed = cmd->arg[0]};
    unsigned char msg[SHMB_CHANNEL_MSG_MAX], reply[SHMB_CHANNEL_MSG_MAX];
    int ret;
    for (;;) {
        size_t len = 0, n = 0;
        ret = shmb_channel_recv(ch, msg, sizeof(msg), &len);
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
        if ((ret = shmb_channel_send(ch, reply, n + 1)) < 0)
            break;
    }
    shmb_handoff_borrower_close(&b);
    shmb_channel_close(ch);
    return ret == -EPIPE ? 0 : ret;
}

enum { HANDOFF_OP_SERVE = 1 };
static const shmb_peer_handler_t handoff_run[] = {[HANDOFF_OP_SERVE] = serve_handoffs};
static const shmb_peer_commands_t handoff_commands = {handoff_run, sizeof(handoff_run) / sizeof(*handoff_run), NULL};

/* ---- the lender's hold on it ---- */

int shmb_handoff_link_start_peer(shmb_handoff_link_t *l, const char *prefix)
{
    int ret = shmb_peer_start(&l->peer, prefix, 0, &handoff_commands, &l->peer);
    if (ret < 0)
        return ret;
    const shmb_peer_cmd_t cmd = {.op = HANDOFF_OP_SERVE, .arg = {l->seed}};
    if ((ret = shmb_peer_post(&l->peer, &cmd)) < 0)
        shmb_peer_stop(&l->peer);
    return ret;
}

int shmb_handoff_link_pin_peer(shmb_handoff_link_t *l, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(l->peer.pid, sizeof(set), &set) != 0)
        return shmb_error_record("sched_setaffinity", errno, "the borrower process");
    return 0;
}

/* QUIT (unless run_ret is -EPIPE: the run found it dead or its channel
 * broken), the peer stopped; 0, -EPIPE when run_ret was, or the stop's
 * -errno (a dead borrower recorded as "peer process" with how it ended). */
static int stop(shmb_peer_t *peer, int run_ret)
{
    const unsigned char quit = HANDOFF_QUIT;
    if (run_ret == -EPIPE || shmb_channel_send(&peer->channel, &quit, 1) < 0) {
        run_ret = -EPIPE;
        /* its serve_handoffs ends on the closed channel: shut down, as a borrower forked later holds a copy */
        shutdown(peer->channel.fd, SHUT_RDWR);
        shmb_channel_close(&peer->channel);
    }
    int ret = shmb_peer_await(peer, NULL);
    const int stopped = shmb_peer_stop(peer);
    if (ret == 0)
        ret = stopped;
    return ret < 0 ? ret : run_ret == -EPIPE ? -EPIPE : 0;
}

int shmb_handoff_link_stop_peer(shmb_handoff_link_t *l, int run_ret)
{
    if (l->peer.pid <= 0)
        return run_ret;
    const shmb_error_t saved = *shmb_error_last();
    int stopped = stop(&l->peer, run_ret);
    if (run_ret == 0 || run_ret == -EPIPE)
        return stopped < 0 ? stopped : run_ret;
    shmb_error_clear();
    if (saved.call)
        shmb_error_record(saved.call, saved.err, saved.object);
    return run_ret;
}
