/* channel: whole messages over a Unix domain stream socket pair (as
 * Flow-IPC's native socket stream), each behind its 4-byte length, with an
 * optional descriptor (SCM_RIGHTS). A closed peer is -EPIPE, never SIGPIPE;
 * functions return 0 or -errno, a failed system call recorded. */
#ifndef SHMBENCH_CHANNEL_H
#define SHMBENCH_CHANNEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_CHANNEL_MSG_MAX 4096u /* bytes: the largest message */

/* One end of a channel. fd is -1 once closed. */
typedef struct shmb_channel {
    int fd;
} shmb_channel_t;

/* Two connected ends (socketpair, SOCK_CLOEXEC); after a fork each side keeps one. */
int shmb_channel_pair(shmb_channel_t *a, shmb_channel_t *b);

/* Sends one message of 1..SHMB_CHANNEL_MSG_MAX bytes, whole. 0, -EINVAL (bad
 * len, closed end), -EPIPE or -errno. */
int shmb_channel_send(shmb_channel_t *ch, const void *msg, size_t len);

/* Waits for one whole message into buf (cap bytes), its length into *len. 0,
 * -EPIPE, -EMSGSIZE (longer than cap or a bad length: the stream is out of
 * step, close it), -EINVAL (closed end) or -errno. */
int shmb_channel_recv(shmb_channel_t *ch, void *buf, size_t cap, size_t *len);

/* send with fd attached to the message's first byte (fd stays open here).
 * As send, and -EINVAL for fd < 0. */
int shmb_channel_send_fd(shmb_channel_t *ch, const void *msg, size_t len, int fd);

/* recv, with the descriptor that came (close-on-exec) into *fd, or -1. On
 * any failure nothing received stays open. As recv, and -EPROTO (more than
 * one descriptor, or truncated control data). */
int shmb_channel_recv_fd(shmb_channel_t *ch, void *buf, size_t cap, size_t *len, int *fd);

/* Closes this end (the peer then gets -EPIPE); a closed end is a no-op. 0 or -errno. */
int shmb_channel_close(shmb_channel_t *ch);

#ifdef __cplusplus
}
#endif

#endif
