/* channel: length-prefixed messages over a Unix domain stream socket pair
 * (see shmbench/channel.h for why a stream socket). */
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

/* sendmsg of the length and the bytes together, then of what a short write
 * left, until all is out. */
int shmb_channel_send(shmb_channel_t *ch, const void *msg, size_t len)
{
    if (!ch || ch->fd < 0 || !msg || len == 0 || len > SHMB_CHANNEL_MSG_MAX)
        return -EINVAL;
    uint32_t prefix = (uint32_t)len;
    struct iovec iov[2] = {{&prefix, sizeof(prefix)}, {(void *)msg, len}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
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

/* Reads exactly len bytes. Returns 0, -EPIPE (end of stream first) or
 * -errno. */
static int read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n == 0)
            return -EPIPE;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (peer_gone(errno))
                return -EPIPE;
            return shmb_error_record("read", errno, "a channel");
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int shmb_channel_recv(shmb_channel_t *ch, void *buf, size_t cap, size_t *len)
{
    if (!ch || ch->fd < 0 || !buf || !len)
        return -EINVAL;
    uint32_t prefix;
    int rc = read_full(ch->fd, &prefix, sizeof(prefix));
    if (rc < 0)
        return rc;
    if (prefix == 0 || prefix > SHMB_CHANNEL_MSG_MAX || prefix > cap)
        return -EMSGSIZE;
    rc = read_full(ch->fd, buf, prefix);
    if (rc < 0)
        return rc;
    *len = prefix;
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
