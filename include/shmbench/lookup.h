/* lookup: the reference kernels that translate a peer's request into this
 * process's mapping (docs/models.md): linear (a scan in registration order),
 * lower_bound (a binary search by base), tree (a red-black tree) and
 * arithmetic (local_base[id] + offset). A translation succeeds only if the
 * whole request lies inside one segment. Functions return 0 or -errno. */
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

/* A table of n segments in registration order (copied). -EINVAL: n = 0 or
 * above UINT32_MAX, a zero size, or a segment that wraps or overlaps. */
int shmb_lookup_init(shmb_lookup_table_t *table, const shmb_lookup_segment_t *segments, size_t n);

/* Frees what init allocated. */
void shmb_lookup_fini(shmb_lookup_table_t *table);

/* Our address of the request's first byte, or NULL when no one segment holds
 * all of it. */
void *shmb_lookup_translate(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                            const shmb_lookup_request_t *req);

/* The timed loop: the sum of the translations of requests[0..n) (NULL counts
 * 0), so that none is optimised away. */
uint64_t shmb_lookup_batch(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                           const shmb_lookup_request_t *requests, size_t n);

/* The latency loop: the same as a dependent chain, each request's keys
 * shifted by how far the previous translation landed from expected[] (a
 * zero the compiler cannot know); the sum of expected[] when all are right. */
uint64_t shmb_lookup_chain(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                           const shmb_lookup_request_t *requests, const uint64_t *expected,
                           size_t n);

#ifdef __cplusplus
}
#endif

#endif
