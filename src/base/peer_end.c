/* peer_end: how a second process ends, for every kind of peer
 * (shmbench/peer.h): its watch on its owner, which cleans up and exits once
 * the owner is gone, and the owner's record of how a reaped peer ended. */
#include "shmbench/peer.h"

#include "peer_internal.h"

#include "shmbench/error.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t orphan_owner; /* set in the peer only */

/* The owner is gone: nothing of it or of ours may stay, and nothing else
 * goes (the names the owner registered, still naming the files it created:
 * never another run's whose prefix extends ours). Async-signal-safe. */
static _Noreturn void orphan_exit(void)
{
    shmb_segment_unlink_inherited();
    shmb_segment_unlink_all();
    _exit(SHMB_PEER_EXIT_ORPHANED);
}

void shmb_peer_exit_if_orphaned(void)
{
    if (getppid() != orphan_owner)
        orphan_exit();
}

static void on_owner_death(int sig)
{
    (void)sig;
    /* PR_SET_PDEATHSIG also fires when the forking thread ends while the
     * owner lives on (its other threads); the owner is then still our
     * parent. */
    shmb_peer_exit_if_orphaned();
}

int shmb_peer_watch_owner(pid_t owner)
{
    orphan_owner = owner;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_owner_death;
    sigfillset(&sa.sa_mask);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SHMB_PEER_DEATH_SIGNAL);
    if (sigaction(SHMB_PEER_DEATH_SIGNAL, &sa, NULL) != 0 ||
        sigprocmask(SIG_UNBLOCK, &set, NULL) != 0 ||
        prctl(PR_SET_PDEATHSIG, SHMB_PEER_DEATH_SIGNAL) != 0)
        return -errno;
    shmb_peer_exit_if_orphaned();
    return 0;
}

int shmb_peer_record_end(pid_t pid, int status)
{
    char what[SHMB_ERROR_OBJECT_MAX];
    int err = EPIPE;
    if (status == -1) {
        snprintf(what, sizeof(what), "pid %ld reaped elsewhere", (long)pid);
    } else if (WIFSIGNALED(status)) {
        snprintf(what, sizeof(what), "pid %ld killed by signal %d (%s)", (long)pid, WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) == SHMB_SEGMENT_FAULT_EXIT) {
        snprintf(what, sizeof(what), "pid %ld: a write into shared memory failed (SIGBUS), said on stderr", (long)pid);
        err = ENOSPC;
    } else {
        snprintf(what, sizeof(what), "pid %ld exited with status %d", (long)pid, WEXITSTATUS(status));
    }
    shmb_error_record("peer process", err, what);
    return -EPIPE;
}
