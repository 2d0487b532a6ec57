/* peer (library-internal): what the command loop (peer.c) asks of the
 * owner's watch (peer_end.c). */
#ifndef SHMBENCH_PEER_INTERNAL_H
#define SHMBENCH_PEER_INTERNAL_H

/* In a peer that shmb_peer_watch_owner set up: cleans up and exits
 * SHMB_PEER_EXIT_ORPHANED once the owner is gone; else returns. */
void shmb_peer_exit_if_orphaned(void);

#endif
