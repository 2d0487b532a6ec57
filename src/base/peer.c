/* peer: the forked second process that runs the owner's commands over a
 * shared control block with futex waits, and its start, calls and stop
 * (shmbench/peer.h); how any peer ends is peer_end.c. */
#include "shmbench/peer.h"

#include "peer_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CALL_MAX 32       /* bytes of a call name carried back from the peer */

/* The control segment's head; the data area starts at the next page. The two
 * sequence numbers are the futex words, each on its own cache line. */
typedef struct control {
    _Alignas(64) atomic_uint cmd_seq;   /* number of the last command posted (owner) */
    _Alignas(64) atomic_uint reply_seq; /* number of the last command answered (peer) */
    int32_t status;                     /* the command's 0 or -errno */
    int32_t err;                        /* errno the peer recorded with it, 0: none */
    char err_call[CALL_MAX];            /* the call the peer recorded, "" if none */
    char err_object[SHMB_ERROR_OBJECT_MAX];
    uint64_t result[SHMB_PEER_RESULTS];
    shmb_peer_cmd_t cmd;
} control_t;

_Static_assert(sizeof(atomic_uint) == sizeof(uint32_t) && ATOMIC_INT_LOCK_FREE == 2,
               "a futex word is a lock-free 32-bit atomic");

/* ---- futex: shared (not private) words in a MAP_SHARED mapping ---- */

/* Sleeps while *word == expected, at most SHMB_PEER_SLICE_NS. Returns 0 (woken,
 * maybe spuriously), -EAGAIN (the word differed), -ETIMEDOUT, -EINTR or
 * another -errno. */
static int futex_wait(atomic_uint *word, unsigned expected)
{
    struct timespec slice = {0, SHMB_PEER_SLICE_NS};
    if (syscall(SYS_futex, (void *)word, FUTEX_WAIT, expected, &slice, NULL, 0) == 0)
        return 0;
    return -errno;
}

static int futex_wake(atomic_uint *word)
{
    return syscall(SYS_futex, (void *)word, FUTEX_WAKE, 1, NULL, NULL, 0) < 0 ? -errno : 0;
}

/* ---- the peer process ---- */

/* Waits until the command number differs from seen; returns it. */
static unsigned wait_command(control_t *c, unsigned seen)
{
    for (;;) {
        unsigned n = atomic_load_explicit(&c->cmd_seq, memory_order_acquire);
        if (n != seen)
            return n;
        int ret = futex_wait(&c->cmd_seq, seen);
        if (ret == -ETIMEDOUT || ret == -EINTR) {
            shmb_peer_exit_if_orphaned();
        } else if (ret != 0 && ret != -EAGAIN) {
            _exit(SHMB_PEER_EXIT_FAILED);
        }
    }
}

static void post_reply(control_t *c, unsigned n)
{
    atomic_store_explicit(&c->reply_seq, n, memory_order_release);
    if (futex_wake(&c->reply_seq) < 0)
        _exit(SHMB_PEER_EXIT_FAILED);
}

/* The command's status and, on failure, what the peer recorded with it. */
static void fill_reply(control_t *c, int status, const uint64_t *result)
{
    c->status = status < 0 ? status : 0;
    memcpy(c->result, result, sizeof(c->result));
    c->err = 0;
    c->err_call[0] = '\0';
    c->err_object[0] = '\0';
    const shmb_error_t *e = shmb_error_last();
    if (status < 0 && e->call && e->err == -status) {
        c->err = e->err;
        snprintf(c->err_call, sizeof(c->err_call), "%s", e->call);
        snprintf(c->err_object, sizeof(c->err_object), "%s", e->object);
    }
}

static int run_command(const shmb_peer_commands_t *commands, void *ctx, const shmb_peer_cmd_t *cmd, void *data,
                       size_t data_bytes, uint64_t result[SHMB_PEER_RESULTS])
{
    if (cmd->op >= commands->n || !commands->run[cmd->op])
        return -ENOSYS;
    int ret = commands->before ? commands->before(ctx) : 0;
    return ret < 0 ? ret : commands->run[cmd->op](ctx, cmd, data, data_bytes, result);
}

static _Noreturn void serve(control_t *c, void *data, size_t data_bytes, const shmb_peer_commands_t *commands,
                            void *ctx)
{
    /* The owner may have posted a command before this process got here: the
     * last number answered is where to start, not the last posted. */
    unsigned seen = atomic_load_explicit(&c->reply_seq, memory_order_acquire);
    for (;;) {
        unsigned n = wait_command(c, seen);
        seen = n;
        shmb_peer_cmd_t cmd;
        memcpy(&cmd, &c->cmd, sizeof(cmd));
        cmd.name[SHMB_PEER_NAME_MAX] = '\0';
        uint64_t result[SHMB_PEER_RESULTS] = {0};
        if (cmd.op == SHMB_PEER_OP_QUIT) {
            shmb_segment_unlink_all();
            fill_reply(c, 0, result);
            post_reply(c, n);
            _exit(0);
        }
        shmb_error_clear();
        int status = run_command(commands, ctx, &cmd, data, data_bytes, result);
        fill_reply(c, status, result);
        post_reply(c, n);
    }
}

static _Noreturn void run_peer(shmb_peer_t *peer, shmb_channel_t mine, pid_t owner,
                               const shmb_peer_commands_t *commands, void *ctx)
{
    shmb_channel_close(&peer->channel); /* the owner's end */
    peer->channel = mine;
    if (shmb_peer_watch_owner(owner) < 0)
        _exit(SHMB_PEER_EXIT_FAILED);
    serve(peer->control.addr, peer->data, peer->data_bytes, commands, ctx);
}

/* ---- the owner ---- */

static size_t data_offset(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (sizeof(control_t) + page - 1) / page * page;
}

/* The owner reaps its peer to learn how it ended: with SIGCHLD ignored or
 * SA_NOCLDWAIT (as some supervisors leave them to their children) the kernel
 * would reap it instead, and every end would look like a death. The handler
 * a caller installed stays; only those two go. */
static int own_children(void)
{
    struct sigaction sa;
    if (sigaction(SIGCHLD, NULL, &sa) != 0)
        return shmb_error_record("sigaction", errno, "SIGCHLD");
    const int ignored = !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN;
    if (!ignored && !(sa.sa_flags & SA_NOCLDWAIT))
        return 0;
    if (ignored)
        sa.sa_handler = SIG_DFL;
    sa.sa_flags &= ~SA_NOCLDWAIT;
    if (sigaction(SIGCHLD, &sa, NULL) != 0)
        return shmb_error_record("sigaction", errno, "SIGCHLD");
    return 0;
}

int shmb_peer_start(shmb_peer_t *peer, const char *prefix, size_t data_bytes,
                    const shmb_peer_commands_t *commands, void *ctx)
{
    if (!commands || !commands->run)
        return -EINVAL;
    int ret = shmb_segment_check_prefix(prefix);
    if (ret < 0 || (ret = own_children()) < 0)
        return ret;
    size_t head = data_offset();
    if (data_bytes > (size_t)INT64_MAX - head)
        return -EINVAL;
    memset(peer, 0, sizeof(*peer));
    shmb_channel_t theirs;
    if ((ret = shmb_channel_pair(&peer->channel, &theirs)) < 0)
        return ret;
    ret = shmb_segment_create(&peer->control, prefix, head + data_bytes, NULL, NULL);
    if (ret < 0) {
        shmb_channel_close(&theirs);
        shmb_channel_close(&peer->channel);
        return ret;
    }
    if ((ret = shmb_segment_reserve(&peer->control)) < 0 || (ret = shmb_segment_map(&peer->control, NULL)) < 0 ||
        (ret = shmb_segment_close(&peer->control, NULL)) < 0)
        goto err;
    peer->data = data_bytes ? (char *)peer->control.addr + head : NULL;
    peer->data_bytes = data_bytes;
    pid_t owner = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        ret = shmb_error_record("fork", errno, NULL);
        goto err;
    }
    if (pid == 0)
        run_peer(peer, theirs, owner, commands, ctx);
    shmb_channel_close(&theirs);
    peer->pid = pid;
    return 0;
err:
    shmb_channel_close(&theirs);
    shmb_channel_close(&peer->channel);
    shmb_segment_destroy(&peer->control, NULL);
    peer->data = NULL;
    peer->data_bytes = 0;
    return ret;
}

/* waitpid for the peer (flags 0 or WNOHANG). Returns 1 once reaped (also when
 * someone else reaped it: SIGCHLD ignored), 0 while it runs, or -errno. */
static int reap(shmb_peer_t *peer, int flags)
{
    int status = 0;
    pid_t r;
    do
        r = waitpid(peer->pid, &status, flags);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return 0;
    if (r < 0) {
        if (errno != ECHILD)
            return shmb_error_record("waitpid", errno, NULL);
        status = -1;
    }
    peer->reaped = 1;
    peer->wait_status = status;
    return 1;
}

/* Records how the reaped peer ended, as -EPIPE. */
static int gone(const shmb_peer_t *peer)
{
    return shmb_peer_record_end(peer->pid, peer->wait_status);
}

/* Waits for reply number n, checking the peer between slices. */
static int wait_reply(shmb_peer_t *peer, control_t *c, unsigned n)
{
    for (;;) {
        unsigned v = atomic_load_explicit(&c->reply_seq, memory_order_acquire);
        if (v == n)
            return 0;
        int ret = futex_wait(&c->reply_seq, v);
        if (ret == 0 || ret == -EAGAIN)
            continue;
        if (ret != -ETIMEDOUT && ret != -EINTR)
            return shmb_error_record("futex", -ret, peer->control.name);
        ret = reap(peer, WNOHANG);
        if (ret < 0)
            return ret;
        /* A reply posted just before the peer ended still counts. */
        if (atomic_load_explicit(&c->reply_seq, memory_order_acquire) == n)
            return 0;
        if (ret == 1)
            return gone(peer);
    }
}

static int post(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd)
{
    control_t *c = peer->control.addr;
    memcpy(&c->cmd, cmd, sizeof(*cmd));
    unsigned n = atomic_load_explicit(&c->cmd_seq, memory_order_relaxed) + 1;
    atomic_store_explicit(&c->cmd_seq, n, memory_order_release);
    int ret = futex_wake(&c->cmd_seq);
    return ret < 0 ? shmb_error_record("futex", -ret, peer->control.name) : 0;
}

/* Waits for the reply to the last command posted (only the owner writes
 * cmd_seq). */
static int wait_last(shmb_peer_t *peer)
{
    control_t *c = peer->control.addr;
    return wait_reply(peer, c, atomic_load_explicit(&c->cmd_seq, memory_order_relaxed));
}

static int post_and_wait(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd)
{
    int ret = post(peer, cmd);
    return ret < 0 ? ret : wait_last(peer);
}

/* Records the peer's failure on this thread; the call name is kept here,
 * since a record holds only a pointer to it. */
static int peer_error(const control_t *c, uint32_t op)
{
    static _Thread_local char call[CALL_MAX];
    if (c->err_call[0]) {
        memcpy(call, c->err_call, sizeof(call));
        call[CALL_MAX - 1] = '\0';
        return shmb_error_record(call, -c->status, c->err_object);
    }
    char what[32];
    snprintf(what, sizeof(what), "op %u", (unsigned)op);
    return shmb_error_record("peer command", -c->status, what);
}

int shmb_peer_command(shmb_peer_t *peer, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                      const char *name, uint64_t result[SHMB_PEER_RESULTS])
{
    shmb_peer_cmd_t cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.op = op;
    cmd.arg[0] = a0;
    cmd.arg[1] = a1;
    cmd.arg[2] = a2;
    cmd.arg[3] = a3;
    if (name && snprintf(cmd.name, sizeof(cmd.name), "%s", name) >= (int)sizeof(cmd.name))
        return -ENAMETOOLONG;
    return shmb_peer_call(peer, &cmd, result);
}

int shmb_peer_post(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd)
{
    if (cmd->op == SHMB_PEER_OP_QUIT)
        return -EINVAL;
    if (!memchr(cmd->name, '\0', sizeof(cmd->name)))
        return -ENAMETOOLONG;
    if (peer->reaped)
        return gone(peer);
    return post(peer, cmd);
}

int shmb_peer_await(shmb_peer_t *peer, uint64_t result[SHMB_PEER_RESULTS])
{
    if (peer->reaped)
        return gone(peer);
    int ret = wait_last(peer);
    if (ret < 0)
        return ret;
    const control_t *c = peer->control.addr;
    if (c->status < 0)
        return peer_error(c, c->cmd.op);
    if (result)
        memcpy(result, c->result, sizeof(c->result));
    return 0;
}

int shmb_peer_call(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS])
{
    int ret = shmb_peer_post(peer, cmd);
    return ret < 0 ? ret : shmb_peer_await(peer, result);
}

/* Sends QUIT to a live peer and reaps it; a peer that does not answer (a
 * futex failure here) is killed and reaped, so that none outlives stop. */
static int quit(shmb_peer_t *peer)
{
    shmb_peer_cmd_t cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.op = SHMB_PEER_OP_QUIT;
    int ret = post_and_wait(peer, &cmd);
    if (!peer->reaped) {
        if (ret < 0)
            kill(peer->pid, SIGKILL);
        int rc = reap(peer, 0);
        if (rc < 0 && ret == 0)
            ret = rc;
    }
    return ret;
}

int shmb_peer_stop(shmb_peer_t *peer)
{
    int ret = 0;
    if (peer->pid > 0 && peer->reaped) {
        ret = gone(peer);
    } else if (peer->pid > 0) {
        ret = quit(peer);
        int st = peer->wait_status;
        if (ret == 0 && !(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0))
            ret = gone(peer);
    }
    int rc = shmb_segment_destroy(&peer->control, NULL);
    if (rc < 0 && ret == 0)
        ret = rc;
    shmb_channel_close(&peer->channel);
    peer->control.name[0] = '\0';
    peer->pid = 0;
    peer->reaped = 0;
    peer->data = NULL;
    peer->data_bytes = 0;
    return ret;
}
