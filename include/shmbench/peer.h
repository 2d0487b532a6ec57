/*
 * peer: a second process that runs commands for this one (the owner), for
 * paths that span two processes (--peer_process=true).
 *
 * shmb_peer_start() first gives the process back what reaping the peer needs
 * (a SIGCHLD inherited ignored becomes SIG_DFL, SA_NOCLDWAIT is cleared; a
 * SIGCHLD handler stays), then creates a control segment through the segment module (so
 * it is named "<prefix><owner pid>_...", registered, and unlinked by the
 * owner's signal cleanup) and forks. The child, the peer, never returns from
 * shmb_peer_start(): it waits for commands and runs the handler the caller
 * gave for each, then _exit()s. The owner posts one command at a time with
 * shmb_peer_call() and waits for its reply; shmb_peer_stop() sends QUIT,
 * reaps the peer and unlinks the control segment.
 *
 * The protocol, all in the control segment (no pipe, no sleep, no signal):
 * - a command is an opcode chosen by the caller, SHMB_PEER_ARGS u64
 *   arguments and a name (a segment name, say); a reply is the handler's
 *   status (0 or -errno, with the peer's recorded error) and SHMB_PEER_RESULTS
 *   u64 results (such as times the peer measured itself; CLOCK_MONOTONIC is
 *   the same clock in both processes). A data area of a size chosen at start
 *   is shared as well, for what does not fit in the arguments.
 * - two sequence numbers are the futex words (FUTEX_WAIT / FUTEX_WAKE, not
 *   private: the words are in a MAP_SHARED mapping): the owner writes the
 *   command, then stores the command number n (release) and wakes the peer;
 *   the peer runs the handler, writes the reply, then stores the reply
 *   number n (release) and wakes the owner. A waiter compares the number with
 *   the one it waits for before sleeping and FUTEX_WAIT sleeps only while
 *   the word still holds the value it read, so a wake-up is never lost.
 *   Everything written before a number is stored is visible to the side that
 *   has read that number: the command and the data area to the handler, the
 *   reply and the data area to the owner once shmb_peer_call() returns.
 * - The round trip is a few microseconds of futex wake-ups; it is never
 *   part of a timed region: the peer times its own operations and returns
 *   the times as results.
 *
 * Death of either side. Every wait sleeps at most SHMB_PEER_SLICE_NS at a
 * time, then checks the other side:
 * - the owner checks its child with waitpid(WNOHANG): a peer that died,
 *   was killed or exited makes shmb_peer_call() return -EPIPE within about
 *   SHMB_PEER_SLICE_NS, the peer reaped and its end recorded as the call
 *   "peer process" with an object such as "pid 1234 killed by signal 9
 *   (Killed)", so that the caller prints one line, calls shmb_peer_stop()
 *   and exits 1;
 * - the peer has prctl(PR_SET_PDEATHSIG, SHMB_PEER_DEATH_SIGNAL), which
 *   reaches it even inside a handler, and checks getppid() at every slice.
 *   When the owner is gone (a SIGKILL, which no cleanup survives), the peer
 *   unlinks the names the owner had registered, those still naming the files
 *   the owner created (shmb_segment_unlink_inherited(): never another
 *   program's file, nor another run's whose prefix happens to extend ours),
 *   and its own registered names, and _exit()s with SHMB_PEER_EXIT_ORPHANED.
 *   Nothing of either is left behind.
 *
 * The registry. The peer, a fork, registers into a registry of its own (see
 * segment.h), so that a signal that kills the peer, or
 * shmb_segment_unlink_all() in a handler, unlinks only what the peer itself
 * created, never the owner's segments. The peer inherits the owner's signal
 * dispositions (with shmb_segment_install_signal_cleanup() in place, a fatal
 * signal unlinks the peer's own segments and kills it; the owner then sees
 * -EPIPE). The peer
 * must not destroy or release the owner's shmb_segment_t objects it
 * inherited (their registry slots mean nothing in the child); it attaches
 * segments by name like an unrelated process would.
 *
 * Threads: none here. Call shmb_peer_start() while the process is
 * single-threaded (fork copies only the calling thread) and from a thread
 * that lives as long as the peer (PR_SET_PDEATHSIG fires when the thread
 * that forked ends): the main thread, before any worker starts. One thread
 * at a time calls shmb_peer_call() and shmb_peer_stop() on a peer.
 *
 * Functions return 0 or -errno; a failed system call is also recorded with
 * shmb_error_record().
 */
#ifndef SHMBENCH_PEER_H
#define SHMBENCH_PEER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shmbench/channel.h"
#include "shmbench/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_PEER_ARGS 4                         /* u64 arguments of a command */
#define SHMB_PEER_RESULTS 4                      /* u64 results of a reply */
#define SHMB_PEER_NAME_MAX SHMB_SEGMENT_NAME_MAX /* bytes of a command's name, without the NUL */
#define SHMB_PEER_OP_QUIT 0u                     /* reserved: sent by shmb_peer_stop() only */
#define SHMB_PEER_SLICE_NS 100000000L            /* longest sleep between checks of the other side (100 ms) */
/* What the peer receives when the owner's thread ends (not SIGRTMAX, which
 * valgrind keeps for itself). */
#define SHMB_PEER_DEATH_SIGNAL (SIGRTMAX - 1)
#define SHMB_PEER_EXIT_ORPHANED 3                /* the peer's exit status once its owner died */
#define SHMB_PEER_EXIT_FAILED 4                  /* the peer's own protocol failed (futex) */

typedef struct shmb_peer_cmd {
    uint32_t op;                       /* the caller's opcode, != SHMB_PEER_OP_QUIT */
    uint64_t arg[SHMB_PEER_ARGS];      /* the caller's arguments */
    char name[SHMB_PEER_NAME_MAX + 1]; /* NUL-terminated, "" if unused */
} shmb_peer_cmd_t;

/* What the peer runs for each command, in the peer process. ctx is the
 * pointer given to shmb_peer_start(), as copied by fork (the peer sees the
 * owner's memory as it was at the fork, and later owner writes only through
 * the control segment, the data area or other shared mappings). data is the
 * shared data area (data_bytes long; NULL when 0). result starts zeroed.
 * Returns 0 or -errno; on failure the error recorded in the peer (if any)
 * travels back with the status. A handler must not print through the
 * owner's stdio buffers and must return (it may _exit, which the owner sees
 * as the peer's death). */
typedef int (*shmb_peer_handler_t)(void *ctx, const shmb_peer_cmd_t *cmd, void *data,
                                   size_t data_bytes, uint64_t result[SHMB_PEER_RESULTS]);

typedef struct shmb_peer {
    shmb_segment_t control; /* the control segment (mapped, fd closed); name "" once stopped */
    void *data;             /* the shared data area, inside control; NULL if data_bytes is 0 */
    size_t data_bytes;      /* bytes */
    pid_t pid;              /* the peer process; 0 after shmb_peer_stop() */
    int reaped;             /* 1 once the owner waited for it (it ended) */
    int wait_status;        /* its waitpid(2) status once reaped; -1: reaped elsewhere */
    shmb_channel_t channel; /* a channel to the other side, for what the control segment cannot
                             * carry (a descriptor, SCM_RIGHTS): the owner's end in the owner, the
                             * peer's end in the peer (its copy of this struct); fd -1 once stopped */
} shmb_peer_t;

/* Creates the control segment (with prefix, see segment.h; pages reserved so
 * a full /dev/shm is -ENOSPC here, not a SIGBUS later) with a shared data
 * area of data_bytes (zeroed) and peer->channel (each side keeps its end),
 * and forks the peer, which runs
 * handler(ctx, ...) for each command. In the owner, returns 0 with peer
 * filled in; on failure nothing is left behind (no segment, no child).
 * In the peer, it does not return: the peer _exit()s with 0 after QUIT,
 * SHMB_PEER_EXIT_ORPHANED when the owner died, SHMB_PEER_EXIT_FAILED when a
 * futex call failed. Returns 0, -EINVAL (no handler, bad prefix), -ENOSPC,
 * -EAGAIN (fork: process limit) or -errno. */
int shmb_peer_start(shmb_peer_t *peer, const char *prefix, size_t data_bytes,
                    shmb_peer_handler_t handler, void *ctx);

/* Posts cmd to the peer and waits for its reply. On success, result (may be
 * NULL) receives the handler's SHMB_PEER_RESULTS results. Returns 0, the
 * handler's -errno (with the peer's recorded error recorded again on this
 * thread: the same call, errno and object, or the call "peer command" and
 * the object "op N" when the handler recorded none), -EINVAL (op is
 * SHMB_PEER_OP_QUIT), -ENAMETOOLONG (name not NUL-terminated), -EPIPE (the
 * peer died, was killed or exited, before or while running cmd: recorded as
 * described at the top; also every later call) or -errno (futex). */
int shmb_peer_call(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS]);

/* shmb_peer_call() in two halves, for an owner that talks to the peer on
 * peer->channel while the peer runs the command (the handler reads and
 * writes its end): post returns once cmd is posted, await waits for its
 * reply. Post one command, then await it, before posting another. They
 * return as shmb_peer_call() does (post: its argument errors, -EPIPE for a
 * peer reaped before, or -errno of the futex; await: the rest). */
int shmb_peer_post(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd);
int shmb_peer_await(shmb_peer_t *peer, uint64_t result[SHMB_PEER_RESULTS]);

/* shmb_peer_call() of a command built from its parts: op, the arguments
 * (unused ones 0) and name (NULL: ""; longer than SHMB_PEER_NAME_MAX:
 * -ENAMETOOLONG). Returns what shmb_peer_call() returns. */
int shmb_peer_command(shmb_peer_t *peer, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                      const char *name, uint64_t result[SHMB_PEER_RESULTS]);

/* Ends the peer and frees what start created; the one teardown, whatever
 * happened before (call it once after a successful start, also after
 * -EPIPE). A live peer gets QUIT, unlinks what it registered itself, exits 0
 * and is reaped; then the control segment is unmapped and unlinked. Returns
 * 0 when the peer exited 0 on QUIT, -EPIPE (recorded) when it had died or
 * exited otherwise, or the first other error met after trying every step.
 * Afterwards peer->pid is 0 and nothing of the peer is left: no process,
 * no zombie, no descriptor, no segment. */
int shmb_peer_stop(shmb_peer_t *peer);

/* In a child forked by `owner` that must not outlive it (the peer, or another
 * helper process such as the hand-off's borrower): arms the owner-death
 * signal (SHMB_PEER_DEATH_SIGNAL through PR_SET_PDEATHSIG); from then on, or
 * at once if the owner is gone already, the child unlinks the names the owner
 * registered that still name the files it created, and its own, and exits
 * with SHMB_PEER_EXIT_ORPHANED. Returns 0, or -errno (sigaction, prctl). */
int shmb_peer_watch_owner(pid_t owner);

/* Records how a reaped peer ended (status: waitpid's; -1: reaped elsewhere)
 * as the call "peer process", what ended it as its object ("pid N killed by
 * signal 9 (Killed)"), and returns -EPIPE. The recorded errno is EPIPE, or
 * ENOSPC when the peer exited with SHMB_SEGMENT_FAULT_EXIT: it ran out of
 * shared memory outside a guarded write and its fault line said so on
 * stderr already (shmb_segment_set_fault_line), so the caller need not. */
int shmb_peer_record_end(pid_t pid, int status);

#ifdef __cplusplus
}
#endif

#endif
