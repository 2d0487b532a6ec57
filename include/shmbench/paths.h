/*
 * paths: the names of the translation paths, from the one table that
 * defines them (src/paths.c), so that a flag's help, its check and a row's
 * name all come from the same place.
 *
 * A path turns a peer's request (an address, or a handle) into this
 * process's address. Two kinds:
 *   systems  what a request really costs in each design: mooncake,
 *            flowipc_classic, flowipc_jemalloc (shmbench/mooncake.h,
 *            shmbench/fipc_classic.h, shmbench/fipc_jemalloc.h);
 *   kernels  the minimal C operation, a reference point (not a bound):
 *            linear, lower_bound, tree, arithmetic (shmbench/lookup.h).
 * The table lists the systems first, in shmb_system_t order, then
 * the kernels, in shmb_lookup_strategy_t order.
 */
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

/* mooncake_upstream: Mooncake's own code, in a library built against the
 * user's Mooncake (shmbench/upstream.h, docs/upstream.md). Not a path of the
 * paths table, so outside SHMB_SYSTEMS; only a paired allocation run
 * takes it (its alloc_bare / free_bare rows). */
#define SHMB_SYSTEM_MOONCAKE_UPSTREAM ((shmb_system_t)SHMB_SYSTEMS)
#define SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME "mooncake_upstream"

/* "mooncake", "flowipc_classic", "flowipc_jemalloc" (the paths table's
 * names; "unknown" for any other value). */
const char *shmb_system_name(shmb_system_t system);

/* A path's kind; the values are bits, so that a list may ask for both. */
typedef enum shmb_path_kind {
    SHMB_PATH_SYSTEM = 1,
    SHMB_PATH_KERNEL = 2,
} shmb_path_kind_t;

/* The names of the paths of the kinds in `kinds` (SHMB_PATH_SYSTEM,
 * SHMB_PATH_KERNEL or both or'ed), in the table's order, comma-separated,
 * e.g. "mooncake,flowipc_classic,flowipc_jemalloc", into buf (cap bytes,
 * NUL included). Returns the length without the NUL, -EINVAL (no known kind
 * in kinds, or buf NULL) or -ENOSPC (cap too small: buf untouched). */
int shmb_path_names(unsigned kinds, char *buf, size_t cap);

/* The kind of the path called `name`: SHMB_PATH_SYSTEM or SHMB_PATH_KERNEL,
 * or -EINVAL when no path has that name (or name is NULL). */
int shmb_path_kind_of(const char *name);

/* The system called `name` (a shmb_system_t value: its index in the
 * table), or -EINVAL when no system has that name (a kernel's, or NULL). */
int shmb_path_system(const char *name);

#ifdef __cplusplus
}
#endif

#endif
