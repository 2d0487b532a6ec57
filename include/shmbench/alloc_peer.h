/* alloc_peer: the receiver's side of shm_allocation_bench --peer_process, a
 * second process (shmbench/peer.h) that attaches what the benchmark hands
 * out: posix segments by name, or a pool's blocks by handle, each checked by
 * the tag (shmb_alloc_peer_tag) the owner wrote at its first byte; what it
 * times is docs/allocation.md's. 0 or -errno (the peer's error comes back
 * recorded, -EPIPE: it died); -EPROTO with why: a wrong tag, or a
 * translation that missed. */
#ifndef SHMBENCH_ALLOC_PEER_H
#define SHMBENCH_ALLOC_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/fipc_jemalloc.h"
#include "shmbench/lookup.h"
#include "shmbench/peer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_PEER_DATA_BYTES (256u << 10) /* the peer's data area: handles go in chunks of it */

typedef enum shmb_alloc_peer_pool_kind {
    SHMB_ALLOC_PEER_CLASSIC,  /* bipc: handles are pool_offset in pool 0 */
    SHMB_ALLOC_PEER_JEMALLOC, /* jemalloc: handles are (id, offset) */
} shmb_alloc_peer_pool_kind_t;

/* What the peer is given for one pass over live pool blocks. */
typedef struct shmb_alloc_peer_pools {
    shmb_alloc_peer_pool_kind_t kind;
    const shmb_fipc_pool_t *pools;         /* the lender's pools (bipc: one, id 0) */
    size_t npools;
    const shmb_lookup_request_t *handles;  /* one per live block, len = its bytes */
    uint64_t n;                            /* handles, > 0 */
    uint64_t seed;                         /* block i's tag: shmb_alloc_peer_tag(seed, i) */
    uint64_t rounds;                       /* timed batches, 1..SHMB_ALLOC_PEER_MAX_ROUNDS */
} shmb_alloc_peer_pools_t;

#define SHMB_ALLOC_PEER_MAX_ROUNDS 4096

/* The tag of allocation `index`: a mix of seed and index, never 0. */
uint64_t shmb_alloc_peer_tag(uint64_t seed, uint64_t index);

/* shmb_peer_start with this module's handler (from the main thread while it
 * is the only one; end it with shmb_peer_stop). 0 or its error. */
int shmb_alloc_peer_start(shmb_peer_t *peer, const char *prefix);

/* posix: the peer attaches segment `name` of `bytes` and detaches it, both
 * timed, and must read `tag` at its first byte. 0, -EPROTO (another tag, or
 * recorded as "fstat size check": another size) or the peer's error. */
int shmb_alloc_peer_posix(shmb_peer_t *peer, const char *name, uint64_t bytes, uint64_t tag,
                          uint64_t *attach_ns, uint64_t *detach_ns, char *why, size_t why_cap);

/* pools: the peer attaches each pool on the first handle naming it (a
 * sample each into attach_ns, at most attach_cap, their count into
 * *nattach), checks every tag, then times `rounds` batches of every handle's
 * translation (translate_ns: ns per translation), and detaches. 0, -EPROTO,
 * -EINVAL (bad input, a handle naming no pool told), -ENOBUFS (more pools
 * than attach_cap or the data area holds) or the peer's error. */
int shmb_alloc_peer_pools(shmb_peer_t *peer, const shmb_alloc_peer_pools_t *in, double *attach_ns,
                          size_t attach_cap, size_t *nattach, double *translate_ns, char *why,
                          size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
