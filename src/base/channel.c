/* channel: length-prefixed messages over a Unix domain stream socket pair
 * (as Flow-IPC's native socket stream: shmbench/channel.h). */
#include "shmbench/channel.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int shmb_channel_pair(shmb_channel_t *a, shmb_channel_t *b)
{
    int fds[2];
    if (!a || !b)
        return -EINVAL;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
        return shmb_error_record("socketpair", errno, "AF_UNIX, SOCK_STREAM");
    a->fd = fds[0];
    b->fd = fds[1];
    return 0;
}

/* A peer that went away: EPIPE on send (MSG_NOSIGNAL keeps SIGPIPE away),
 * ECONNRESET when it died with unread data. */
static int peer_gone(int err)
{
    return err == EPIPE || err == ECONNRESET;
}

/* Room for one descriptor's control message, aligned as cmsghdr wants. */
typedef union one_fd_cmsg {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
} one_fd_cmsg_t;

/* sendmsg of the length and the bytes together (with fd, if >= 0, as
 * SCM_RIGHTS on the first call: once some bytes are out, the descriptor is
 * too), then of what a short write left, until all is out. */
static int send_whole(shmb_channel_t *ch, const void *msg, size_t len, int fd)
{
    if (!ch || ch->fd < 0 || !msg || len == 0 || len > SHMB_CHANNEL_MSG_MAX)
        return -EINVAL;
    uint32_t prefix = (uint32_t)len;
    struct iovec iov[2] = {{&prefix, sizeof(prefix)}, {(void *)msg, len}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    one_fd_cmsg_t control;
    if (fd >= 0) {
        memset(&control, 0, sizeof(control));
        mh.msg_control = control.buf;
        mh.msg_controllen = sizeof(control.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    size_t left = sizeof(prefix) + len;
    while (left > 0) {
        ssize_t n = sendmsg(ch->fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (peer_gone(errno))
                return -EPIPE;
            return shmb_error_record("sendmsg", errno, "a channel");
        }
        mh.msg_control = NULL;
        mh.msg_controllen = 0;
        left -= (size_t)n;
        while (mh.msg_iovlen > 0 && (size_t)n >= mh.msg_iov[0].iov_len) {
            n -= (ssize_t)mh.msg_iov[0].iov_len;
            mh.msg_iov++;
            mh.msg_iovlen--;
        }
        if (mh.msg_iovlen > 0) {
            mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
            mh.msg_iov[0].iov_len -= (size_t)n;
        }
    }
    return 0;
}

int shmb_channel_send(shmb_channel_t *ch, const void *msg, size_t len)
{
    return send_whole(ch, msg, len, -1);
}

int shmb_channel_send_fd(shmb_channel_t *ch, const void *msg, size_t len, int fd)
{
    if (fd < 0)
        return -EINVAL;
    return send_whole(ch, msg, len, fd);
}

/* Descriptors received with a message: the first kept, a count of all of
 * them (extras closed at once), and whether control data was cut short. */
typedef struct fd_catch {
    int fd;
    int count;
    int truncated;
} fd_catch_t;

static void catch_fds(struct msghdr *mh, fd_catch_t *got)
{
    got->truncated |= (mh->msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < n; k++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
            if (got->count++ == 0)
                got->fd = fd;
            else
                close(fd);
        }
    }
}

/* Reads exactly len bytes with recvmsg, catching descriptors into got (NULL:
 * none asked for; the kernel then closes any that came). Returns 0, -EPIPE
 * (end of stream first) or -errno. */
static int read_full(int fd, void *buf, size_t len, fd_catch_t *got)
{
    char *p = buf;
    while (len > 0) {
        struct iovec iov = {p, len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        one_fd_cmsg_t control;
        if (got) {
            mh.msg_control = control.buf;
            mh.msg_controllen = sizeof(control.buf);
        }
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (n == 0)
            return -EPIPE;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (peer_gone(errno))
                return -EPIPE;
            return shmb_error_record("recvmsg", errno, "a channel");
        }
        if (got)
            catch_fds(&mh, got);
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int recv_whole(shmb_channel_t *ch, void *buf, size_t cap, size_t *len, fd_catch_t *got)
{
    if (!ch || ch->fd < 0 || !buf || !len)
        return -EINVAL;
    uint32_t prefix;
    int rc = read_full(ch->fd, &prefix, sizeof(prefix), got);
    if (rc < 0)
        return rc;
    if (prefix == 0 || prefix > SHMB_CHANNEL_MSG_MAX || prefix > cap)
        return -EMSGSIZE;
    rc = read_full(ch->fd, buf, prefix, got);
    if (rc < 0)
        return rc;
    *len = prefix;
    return 0;
}

int shmb_channel_recv(shmb_channel_t *ch, void *buf, size_t cap, size_t *len)
{
    return recv_whole(ch, buf, cap, len, NULL);
}

int shmb_channel_recv_fd(shmb_channel_t *ch, void *buf, size_t cap, size_t *len, int *fd)
{
    if (!fd)
        return -EINVAL;
    fd_catch_t got = {-1, 0, 0};
    size_t n = 0;
    int rc = recv_whole(ch, buf, cap, &n, &got);
    if (rc == 0 && (got.count > 1 || got.truncated))
        rc = -EPROTO;
    if (rc < 0) {
        if (got.count > 0)
            close(got.fd);
        return rc;
    }
    *len = n;
    *fd = got.fd;
    return 0;
}

int shmb_channel_close(shmb_channel_t *ch)
{
    if (!ch || ch->fd < 0)
        return 0;
    int fd = ch->fd;
    ch->fd = -1;
    if (close(fd) != 0)
        return shmb_error_record("close", errno, "a channel");
    return 0;
}
