/* peer: a forked second process that runs the owner's commands, one at a
 * time, through a control segment (a command, a reply, a shared data area;
 * two sequence numbers as shared futex words, so what one side wrote before
 * its number is visible to the other, and no wake-up is lost). Each wait
 * sleeps at most SHMB_PEER_SLICE_NS, then checks the other side: a dead peer
 * is -EPIPE; a peer whose owner died unlinks the owner's names and its own
 * and exits SHMB_PEER_EXIT_ORPHANED. The peer registers into its own registry
 * and must not destroy the owner's segments it inherited. Start it from the
 * main thread while single-threaded; one thread at a time calls and stops.
 * Functions return 0 or -errno, a failed system call recorded. */
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
/* What the peer gets when the owner's thread ends (SIGRTMAX is valgrind's). */
#define SHMB_PEER_DEATH_SIGNAL (SIGRTMAX - 1)
#define SHMB_PEER_EXIT_ORPHANED 3                /* the peer's exit status once its owner died */
#define SHMB_PEER_EXIT_FAILED 4                  /* the peer's own protocol failed (futex) */

typedef struct shmb_peer_cmd {
    uint32_t op;                       /* the caller's opcode, != SHMB_PEER_OP_QUIT */
    uint64_t arg[SHMB_PEER_ARGS];      /* the caller's arguments */
    char name[SHMB_PEER_NAME_MAX + 1]; /* NUL-terminated, "" if unused */
} shmb_peer_cmd_t;

/* A command, in the peer: ctx as at the fork, data the shared area (NULL
 * when 0 bytes), result zeroed. 0 or -errno (its recorded error travels
 * back). It must not print through the owner's stdio buffers. */
typedef int (*shmb_peer_handler_t)(void *ctx, const shmb_peer_cmd_t *cmd, void *data,
                                   size_t data_bytes, uint64_t result[SHMB_PEER_RESULTS]);

/* Defines a command: `static SHMB_PEER_COMMAND(on_copy) { ... }`, every
 * parameter named as shmb_peer_handler_t's, unused ones allowed. */
#define SHMB_PEER_COMMAND(name)                                                                          \
    int name(void *ctx __attribute__((unused)), const shmb_peer_cmd_t *cmd __attribute__((unused)),     \
             void *data __attribute__((unused)), size_t data_bytes __attribute__((unused)),              \
             uint64_t result[SHMB_PEER_RESULTS] __attribute__((unused)))

/* What a benchmark's peer serves: run[op] for each opcode below n (a NULL
 * entry, or an op past n: -ENOSYS), each after `before` (NULL: none; its
 * -errno is the command's). */
typedef struct shmb_peer_commands {
    const shmb_peer_handler_t *run;
    uint32_t n;
    int (*before)(void *ctx);
} shmb_peer_commands_t;

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

/* Creates the control segment (reserved) with data_bytes of zeroed data area
 * and the channel, and forks the peer, which serves `commands` and never
 * returns from here (it exits 0 after QUIT, or ORPHANED, or FAILED). On
 * failure nothing is left. 0, -EINVAL (no commands, bad prefix), -ENOSPC,
 * -EAGAIN (fork) or -errno. */
int shmb_peer_start(shmb_peer_t *peer, const char *prefix, size_t data_bytes,
                    const shmb_peer_commands_t *commands, void *ctx);

/* Posts cmd and waits for its reply; result (may be NULL) gets the handler's.
 * 0, the handler's -errno (its record recorded here too, else "peer command",
 * "op N"), -EINVAL (QUIT), -ENAMETOOLONG, -EPIPE (the peer ended: recorded as
 * shmb_peer_record_end; also every later call) or -errno (futex). */
int shmb_peer_call(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS]);

/* shmb_peer_call() in two halves, for an owner that uses the channel while the
 * command runs; await each post before the next. Return as shmb_peer_call(). */
int shmb_peer_post(shmb_peer_t *peer, const shmb_peer_cmd_t *cmd);
int shmb_peer_await(shmb_peer_t *peer, uint64_t result[SHMB_PEER_RESULTS]);

/* shmb_peer_call() of a command from its parts (name NULL: ""; too long: -ENAMETOOLONG). */
int shmb_peer_command(shmb_peer_t *peer, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                      const char *name, uint64_t result[SHMB_PEER_RESULTS]);

/* The one teardown after a successful start (also after -EPIPE): QUIT, reap,
 * unlink the control segment; nothing of the peer is left, pid 0. 0 (exited 0
 * on QUIT), -EPIPE (recorded: it had ended) or the first other error. */
int shmb_peer_stop(shmb_peer_t *peer);

/* In a child of owner that must not outlive it: once the owner is gone (now
 * or later, PR_SET_PDEATHSIG), unlinks the owner's names and its own and exits
 * SHMB_PEER_EXIT_ORPHANED. 0 or -errno (sigaction, prctl). */
int shmb_peer_watch_owner(pid_t owner);

/* Records how a reaped peer ended (status: waitpid's; -1: reaped elsewhere) as
 * "peer process", object "pid N killed by signal 9 (Killed)", errno EPIPE, or
 * ENOSPC after SHMB_SEGMENT_FAULT_EXIT (its fault line said why). Returns -EPIPE. */
int shmb_peer_record_end(pid_t pid, int status);

#ifdef __cplusplus
}
#endif

#endif
