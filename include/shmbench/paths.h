/* paths: the translation paths' names and the system enum, from the one
 * table that names them (src/models/path_names.c): the systems first, in
 * shmb_system_t order, then the kernels, in shmb_lookup_strategy_t order. */
#ifndef SHMBENCH_PATHS_H
#define SHMBENCH_PATHS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The systems, in the paths table's order. */
typedef enum shmb_system {
    SHMB_SYSTEM_MOONCAKE,
    SHMB_SYSTEM_FLOWIPC_CLASSIC,
    SHMB_SYSTEM_FLOWIPC_JEMALLOC,
    SHMB_SYSTEMS /* how many there are */
} shmb_system_t;

/* Mooncake's own code built against the user's checkout (shmbench/upstream.h):
 * no path, only a paired allocation run's alloc_bare / free_bare rows. */
#define SHMB_SYSTEM_MOONCAKE_UPSTREAM ((shmb_system_t)SHMB_SYSTEMS)
#define SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME "mooncake_upstream"
/* Flow-IPC's own Pool_arena built against the user's source
 * (shmbench/upstream_flowipc.h): a paired allocation run's alloc_bare /
 * free_bare rows, beside flowipc_classic as the baseline. */
#define SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM ((shmb_system_t)(SHMB_SYSTEMS + 1))
#define SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM_NAME "flowipc_classic_upstream"
/* Flow-IPC's own borrower pool repository (shmbench/upstream_flowipc.h): a
 * paired transfer run's translate row (to_address), beside flowipc_jemalloc. */
#define SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM ((shmb_system_t)(SHMB_SYSTEMS + 2))
#define SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM_NAME "flowipc_jemalloc_upstream"

/* 1 for a system that runs upstream's own code rather than a model. */
static inline int shmb_system_is_upstream(int system)
{
    return system == (int)SHMB_SYSTEM_MOONCAKE_UPSTREAM || system == (int)SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM ||
           system == (int)SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM;
}

/* The system's name in the table ("unknown" for any other value). */
const char *shmb_system_name(shmb_system_t system);

/* Mooncake's metadata as the paths table builds it (also for a transfer's
 * translation): the peer's segment id, and how many further ids beside it. */
#define SHMB_PATH_MOONCAKE_TARGET_ID 1
#define SHMB_PATH_MOONCAKE_OTHER_SEGMENTS 8
#define SHMB_PATH_PEER_START (1ull << 44) /* where the peer's registered buffers begin */

/* A path's kind; the values are bits, so that a list may ask for both. */
typedef enum shmb_path_kind {
    SHMB_PATH_SYSTEM = 1,
    SHMB_PATH_KERNEL = 2,
} shmb_path_kind_t;

/* The comma-separated names of the paths of `kinds` (or'ed) into buf; their
 * length, -EINVAL (no known kind) or -ENOSPC (buf untouched). */
int shmb_path_names(unsigned kinds, char *buf, size_t cap);

/* The kind of the path called `name`, or -EINVAL. */
int shmb_path_kind_of(const char *name);

/* The system called `name`, or -EINVAL (a kernel's name, or none). */
int shmb_path_system(const char *name);

#ifdef __cplusplus
}
#endif

#endif
