/*
 * lookup: translating a peer's address into this process's mapping.
 *
 * A table holds the segments a peer registered: each has a base in the
 * peer's address space, a size, and a base in ours. A request names either a
 * peer address and length (today's path) or a segment id and offset
 * (Flow-IPC's handle). Strategies:
 *   linear       scan in registration order (Mooncake's
 *                relocateSharedMemoryAddress)                      O(n)
 *   lower_bound  binary search over the segments sorted by base
 *                (std::lower_bound over a vector)                  O(log n)
 *   tree         red-black tree keyed by base, lower-bound search
 *                (std::map::lower_bound): pointer chasing          O(log n)
 *   arithmetic   local_base[id] + offset, with a bounds check      O(1)
 * A translation succeeds only if [addr, addr + len) lies inside one segment.
 * Sizes in bytes. Functions return 0 or -errno.
 */
#ifndef SHMBENCH_LOOKUP_H
#define SHMBENCH_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum shmb_lookup_strategy {
    SHMB_LOOKUP_LINEAR,
    SHMB_LOOKUP_LOWER_BOUND,
    SHMB_LOOKUP_TREE,
    SHMB_LOOKUP_ARITHMETIC,
    SHMB_LOOKUP_STRATEGIES /* how many there are */
} shmb_lookup_strategy_t;

typedef struct shmb_lookup_segment {
    uint64_t peer_base;        /* where the peer mapped it */
    uint64_t size;             /* bytes, > 0 */
    unsigned char *local_base; /* where we mapped it */
} shmb_lookup_segment_t;

typedef struct shmb_lookup_request {
    uint64_t addr;   /* peer address (linear, lower_bound, tree) */
    uint64_t len;    /* bytes, > 0 */
    uint32_t id;     /* segment id = registration index (arithmetic) */
    uint64_t offset; /* from the segment's base (arithmetic, flowipc_jemalloc) */
    uint64_t pool_offset; /* from the base of one pool holding every segment
                           * back to back in id order (flowipc_classic) */
} shmb_lookup_request_t;

struct shmb_lookup_tree;

typedef struct shmb_lookup_table {
    size_t n;
    shmb_lookup_segment_t *entries; /* registration order; index = id */
    shmb_lookup_segment_t *sorted;  /* by peer_base */
    struct shmb_lookup_tree *tree;  /* nodes allocated one by one, as a std::map's */
} shmb_lookup_table_t;

/* "linear", "lower_bound", "tree", "arithmetic". */
const char *shmb_lookup_strategy_name(shmb_lookup_strategy_t s);

/* Name -> strategy. Returns 0 or -EINVAL. */
int shmb_lookup_parse_strategy(const char *name, shmb_lookup_strategy_t *out);

/* Builds a table of n segments given in registration order (copied).
 * Returns 0, -EINVAL (n = 0 or above UINT32_MAX, a zero size, a segment
 * that wraps around or overlaps another in the peer's space) or -ENOMEM. */
int shmb_lookup_init(shmb_lookup_table_t *table, const shmb_lookup_segment_t *segments, size_t n);

/* Frees what init allocated. */
void shmb_lookup_fini(shmb_lookup_table_t *table);

/* Translates one request with a strategy: our address of its first byte, or
 * NULL when no single segment holds all of it. */
void *shmb_lookup_translate(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                            const shmb_lookup_request_t *req);

/* The timed loop: translates requests[0..n) with one strategy and returns
 * the sum of the translated addresses (NULL counts 0), so that no
 * translation can be optimised away. */
uint64_t shmb_lookup_batch(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                           const shmb_lookup_request_t *requests, size_t n);

/* The latency loop: translates requests[0..n) as a dependent chain, so that
 * no two translations overlap. Each request's keys (addr, id, offset) are
 * shifted by how far the previous translation landed from expected[] (the
 * address it should give, read from memory: a zero the compiler cannot
 * know), which costs one subtraction and one addition per request and no
 * memory access. Returns the sum of the translated addresses (NULL counts
 * 0): the sum of expected[0..n) when every translation is right; a wrong one
 * shifts every request after it, and the sum shows it. */
uint64_t shmb_lookup_chain(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                           const shmb_lookup_request_t *requests, const uint64_t *expected,
                           size_t n);

#ifdef __cplusplus
}
#endif

#endif
