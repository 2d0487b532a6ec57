/* segment_internal: what the segment life cycle (segment.c), the registry
 * (segment_registry.c) and the signal cleanup (segment_signals.c) share. */
#ifndef SHMB_SEGMENT_INTERNAL_H
#define SHMB_SEGMENT_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>

#define SHM_DIR "/dev/shm"

/* A creation's signal-free stretch: the cleanup signals blocked and the
 * creation counted, so that a handler waits for it before it unlinks. When
 * the process is already dying, begin never returns. end restores *old. */
void shmb_segment_creation_begin(sigset_t *old);
void shmb_segment_creation_end(const sigset_t *old);

/* A cleanup handler's unlinking: no creation starts from now on, those in
 * flight on other threads are waited for, then every name is unlinked. */
size_t shmb_segment_unlink_dying(void);

/* Blocks the cleanup signals on this thread, the old mask into *old (faults
 * stay deliverable: blocking them would turn a fault into a silent kill). */
void shmb_segment_block_signals(sigset_t *old);

/* The signals whose default action ends the process, which the cleanup catches. */
const sigset_t *shmb_segment_fatal_signals(void);


/* One write per *stride bytes (a uint64_t; NULL: the system's page) of
 * [addr, addr + bytes): a shmb_segment_write_fn for shmb_segment_first_write_copy. */
void shmb_segment_touch_stride(void *addr, const void *stride, size_t bytes);

/* A registry slot (take: call with signals blocked): taken (its index, or -errno:
 * -ENOBUFS when all are in use), pending while shm_open is about to create
 * name (a SIGKILL between the creation and publish, which no blocked signal
 * prevents, must not leave the file where an orphaned peer cannot see it),
 * unpended when that name was not ours (EEXIST, or a failure), published
 * once the file named name exists (st: its fstat), given back once it is
 * gone or forgotten. */
int shmb_segment_slot_take(void);
void shmb_segment_slot_give(int i);
void shmb_segment_slot_pending(int i, const char *name);
void shmb_segment_slot_unpend(int i);
void shmb_segment_slot_publish(int i, const char *name, const struct stat *st);

#endif
