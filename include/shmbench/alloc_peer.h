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
 * pools (bipc: one boost.interprocess pool; jemalloc: the SHM pools its
 * arena grew): the owner tells the peer which pools exist (id, bytes, name)
 * and sends one handle per live block (shmb_lookup_request_t: bipc
 * pool_offset; jemalloc id + offset; len). The peer walks the handles once:
 * a handle naming a pool it has not attached yet attaches it (timed, one
 * sample per pool: bipc shmb_fipc_classic_attach, shm_open(O_RDWR) + fstat
 * + mmap + close; jemalloc shmb_fipc_pool_attach, shm_open(O_RDONLY) + mmap,
 * the pool entered in the peer's own repository), then translates it and
 * checks the tag at the block's first byte. Only then are the translations
 * timed: `rounds` batches over every handle (bipc base + offset, jemalloc
 * the repository's to_address under its mutex), ns per translation = batch
 * time / handles, each batch's sum of addresses compared with the checking
 * walk's.
 *
 * The tag of block i (or posix allocation i) is shmb_alloc_peer_tag(seed,
 * i), a u64 the owner writes and the peer recomputes.
 *
 * Functions return 0 or -errno; an error of the peer comes back recorded as
 * shmbench/peer.h says (-EPIPE: the peer died). -EPROTO with a reason in
 * why: the peer read a wrong tag, or a translation missed.
 */
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

/* pools: one pass as described at the top. attach_ns receives one sample
 * per pool the peer attached (at most attach_cap; their count into
 * *nattach), translate_ns `rounds` samples (ns per translation). The peer
 * detaches every pool before returning. Returns 0, -EPROTO (a wrong tag or
 * a missed translation: why says which block), -EINVAL (bad input, or a
 * handle naming no pool told), -ENOBUFS (more pools than attach_cap or the
 * data area holds) or the peer's error. */
int shmb_alloc_peer_pools(shmb_peer_t *peer, const shmb_alloc_peer_pools_t *in, double *attach_ns,
                          size_t attach_cap, size_t *nattach, double *translate_ns, char *why,
                          size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
