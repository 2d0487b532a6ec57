/* paths (library-internal): the one table of translation paths every driver
 * that translates walks or indexes (as perf bench's mem-functions.c its
 * memcpy table): setup over a view of the peer's registrations, translate
 * (the reference, verified before timing), the timed loops batch and chain
 * (in the model, so one indirect call per batch), teardown. translate,
 * batch and chain may run on several threads over one state; setup and
 * teardown overlap no other call. */
#ifndef SHMBENCH_PATHS_INTERNAL_H
#define SHMBENCH_PATHS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/fipc_jemalloc.h"
#include "shmbench/lookup.h"
#include "shmbench/mooncake.h"
#include "shmbench/paths.h"

/* Systems first (index = shmb_system_t), then kernels (index =
 * SHMB_SYSTEMS + shmb_lookup_strategy_t). */
#define SHMB_PATHS (SHMB_SYSTEMS + SHMB_LOOKUP_STRATEGIES)

/* The peer's registrations as this process sees them: what a path's setup
 * builds its objects over. Only what the paths being set up read must be
 * filled; setup copies what it keeps, so the view may go afterwards. */
typedef struct shmb_path_view {
    const shmb_lookup_segment_t *segments; /* n, registration order (index = id): peer_base, size,
                                            * local_base (where it is mapped, or will be on first use) */
    size_t n;
    const char *const *shm_names;     /* mooncake: segment id's SHM name, opened on its first request */
    shmb_mooncake_ops_t mooncake_ops; /* mooncake: how a buffer is attached on first use */
    const uint32_t *pool_ids;         /* flowipc_jemalloc: segment i is pool pool_ids[i] (NULL: pool i) */
    unsigned char *pool_base;         /* flowipc_classic: the one pool (handle = offset from here) */
    size_t pool_bytes;
} shmb_path_view_t;

/* What the paths' setups made. Zeroed: nothing set up. */
typedef struct shmb_path_state {
    shmb_lookup_table_t table; /* the kernels': one table, shared */
    int kernels;               /* kernels set up over table */
    shmb_mooncake_t *mooncake; /* peer segment SHMB_PATH_MOONCAKE_TARGET_ID holds the view's buffers */
    shmb_fipc_repo_t *repo;    /* flowipc_jemalloc: one pool per segment of the view */
    unsigned char *pool_base;  /* flowipc_classic */
    size_t pool_bytes;
} shmb_path_state_t;

typedef struct shmb_path shmb_path_t;

/* One row of the table. Every function gets its own row (kernels share
 * their functions and differ by `kernel`). */
struct shmb_path {
    int kernel;            /* kernels: their shmb_lookup_strategy_t; systems: -1 */
    /* Builds the path's objects over view. Returns 0, -EINVAL (the view
     * lacks what the path needs; for the address kernels also segments that
     * overlap, for flowipc_jemalloc a pool id twice or pools that overlap),
     * -EEXIST (flowipc_jemalloc: a pool id twice) or -ENOMEM (recorded). */
    int (*setup)(const shmb_path_t *path, shmb_path_state_t *state, const shmb_path_view_t *view);
    /* One request: our address of its first byte, or NULL when it lies in
     * no registration (mooncake: also when the first use's attach fails). */
    void *(*translate)(const shmb_path_t *path, const shmb_path_state_t *state,
                       const shmb_lookup_request_t *request);
    /* The timed loops: the sum of the translated addresses (NULL counts 0). */
    uint64_t (*batch)(const shmb_path_t *path, const shmb_path_state_t *state,
                      const shmb_lookup_request_t *requests, size_t n);
    uint64_t (*chain)(const shmb_path_t *path, const shmb_path_state_t *state,
                      const shmb_lookup_request_t *requests, const uint64_t *expected, size_t n);
    /* Undoes one successful setup (mooncake: detaches what it attached). */
    void (*teardown)(const shmb_path_t *path, shmb_path_state_t *state);
};

extern const shmb_path_t shmb_path_table[SHMB_PATHS];

/* Path `path`'s (an index of the table) name, as in flags and rows, and kind. */
const char *shmb_path_name(int path);
shmb_path_kind_t shmb_path_kind(int path);

#endif
