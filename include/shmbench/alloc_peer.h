/*
 * alloc_peer: the receiver's side of shm_allocation_bench --peer_process:
 * a second process (shmbench/peer.h) that takes what the allocation
 * benchmark hands out, as the process a buffer is lent to would.
 *
 * posix (Mooncake's receiver, which opens a buffer by name on the first
 * request naming it): for each new segment the owner sends its name and
 * size; the peer times attach = shm_open(O_RDWR) + fstat + a size check +
 * mmap (read-write, MAP_SHARED), reads the tag the owner wrote at the
 * segment's first byte (untimed), then times detach = munmap + close (the
 * receiver keeps nothing else). A size that differs is an error.
 *
 * The tag of allocation i is shmb_alloc_peer_tag(seed,
 * i), a u64 the owner writes and the peer recomputes.
 *
 * Functions return 0 or -errno; an error of the peer comes back recorded as
 * shmbench/peer.h says (-EPIPE: the peer died). -EPROTO with a reason in
 * why: the peer read a wrong tag.
 */
#ifndef SHMBENCH_ALLOC_PEER_H
#define SHMBENCH_ALLOC_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/peer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_PEER_DATA_BYTES (256u << 10) /* the peer's data area */

/* The tag of allocation `index`: a mix of seed and index, never 0. */
uint64_t shmb_alloc_peer_tag(uint64_t seed, uint64_t index);

/* Starts the peer with this module's handler and a data area of
 * SHMB_ALLOC_PEER_DATA_BYTES (shmb_peer_start: call it from the main thread
 * while the process is single-threaded; end it with shmb_peer_stop()).
 * Returns 0 or shmb_peer_start's error. */
int shmb_alloc_peer_start(shmb_peer_t *peer, const char *prefix);

/* posix: the peer attaches segment `name` of `bytes` and detaches it, timing
 * both (ns into *attach_ns, *detach_ns), and must read `tag` at its first
 * byte. Returns 0, -EPROTO (another tag: why says which), or the peer's
 * error (-EPROTO recorded as "fstat size check" when the size differs,
 * shm_open's -ENOENT, ...). */
int shmb_alloc_peer_posix(shmb_peer_t *peer, const char *name, uint64_t bytes, uint64_t tag,
                          uint64_t *attach_ns, uint64_t *detach_ns, char *why, size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
