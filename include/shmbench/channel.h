/*
 * channel: whole messages between two processes (or two ends in one
 * process) over a connected Unix domain stream socket pair.
 *
 * Why a stream socket: Flow-IPC's native socket stream (Flow-IPC/ipc_core,
 * src/ipc/transport/native_socket_stream.hpp), which carries its session
 * and structured channels, is a Unix domain stream socket, and its
 * Channel builds pre-connected ones with a socket-pair call
 * (asio_local_stream_socket::connect_pair). A stream has no message
 * boundaries, so each message goes out behind its length (4 bytes, this
 * host's byte order: both ends are on one host) and is read back whole.
 *
 * In one process the same functions run with both ends held by one thread
 * (send on one, receive on the other: the message crosses the kernel but no
 * process boundary). Messages up to SHMB_CHANNEL_MSG_MAX bytes; the socket
 * buffer holds several, so a send never waits for a receive for the sizes
 * the hand-off uses.
 *
 * Functions return 0 or -errno; a peer that closed its end (or died) is
 * -EPIPE, never a SIGPIPE.
 */
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

/* Two connected ends: socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC).
 * After a fork, each process keeps one end and closes the other. Returns 0
 * or -errno (recorded with shmbench/error.h). */
int shmb_channel_pair(shmb_channel_t *a, shmb_channel_t *b);

/* Sends one message of len bytes (1..SHMB_CHANNEL_MSG_MAX): its length and
 * its bytes, written whole (retrying after EINTR and short writes).
 * Returns 0, -EINVAL (len 0 or too large, or a closed end), -EPIPE (the peer
 * closed) or another -errno (recorded). */
int shmb_channel_send(shmb_channel_t *ch, const void *msg, size_t len);

/* Receives one whole message into buf (cap bytes) and its length into
 * *len, waiting for it (retrying after EINTR and short reads). Returns 0,
 * -EPIPE (the peer closed before or in the middle of a message), -EMSGSIZE
 * (the message is longer than cap, or its length is 0 or above
 * SHMB_CHANNEL_MSG_MAX: the stream is out of step, close it), -EINVAL (a
 * closed end) or another -errno (recorded). */
int shmb_channel_recv(shmb_channel_t *ch, void *buf, size_t cap, size_t *len);

/* shmb_channel_send, with one descriptor attached to the message
 * (SCM_RIGHTS): the peer receives its own descriptor of the same open file
 * with shmb_channel_recv_fd. fd stays open here. The descriptor travels
 * with the message's first byte, so it is never separated from its
 * message. Returns as shmb_channel_send, and -EINVAL for fd < 0. */
int shmb_channel_send_fd(shmb_channel_t *ch, const void *msg, size_t len, int fd);

/* shmb_channel_recv, also taking the descriptor that came with the message
 * (close-on-exec) into *fd, or -1 when it came without one. A descriptor
 * is never leaked: on any failure, and when more than one came (the extra
 * ones are closed, the message is then -EPROTO), nothing received stays
 * open. Every read is a recvmsg, so a descriptor is never dropped by a plain
 * read. Returns as shmb_channel_recv, and -EPROTO (more than one descriptor,
 * or the control data was truncated). */
int shmb_channel_recv_fd(shmb_channel_t *ch, void *buf, size_t cap, size_t *len, int *fd);

/* Closes this end (the peer then gets -EPIPE). A closed end is a no-op.
 * Returns 0 or -errno. */
int shmb_channel_close(shmb_channel_t *ch);

#ifdef __cplusplus
}
#endif

#endif
