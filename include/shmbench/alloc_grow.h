/* alloc_grow: what reaching N live bytes takes, one Mooncake segment against
 * SHM-jemalloc's pools grown extent by extent, every page written once
 * (guarded: a full /dev/shm is -ENOSPC): pools, mappings, page faults and
 * time (docs/backing.md). Nothing is left in /dev/shm. 0 or -errno
 * (recorded). */
#ifndef SHMBENCH_ALLOC_GROW_H
#define SHMBENCH_ALLOC_GROW_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_GROW_MAX_BLOCKS (1u << 24) /* blocks live at once, at most */

typedef enum shmb_alloc_grow_system {
    SHMB_ALLOC_GROW_MOONCAKE,         /* "mooncake": one segment */
    SHMB_ALLOC_GROW_FLOWIPC_JEMALLOC, /* "flowipc_jemalloc": pools as jemalloc asks */
    SHMB_ALLOC_GROW_SYSTEMS
} shmb_alloc_grow_system_t;

typedef struct shmb_alloc_grow {
    uint64_t live_bytes;  /* bytes of blocks live at the end (>= the target) */
    uint64_t pools;       /* SHM pools (segments) made */
    uint64_t pool_bytes;  /* their total size */
    int64_t mappings;     /* mappings of those pools in /proc/self/maps (-1: unknown) */
    uint64_t faults;      /* page faults taken (minor + major) */
    uint64_t ns;          /* from before the first step to after the last write */
} shmb_alloc_grow_t;

/* "mooncake", "flowipc_jemalloc"; NULL out of range. */
const char *shmb_alloc_grow_system_name(shmb_alloc_grow_system_t s);

/* Grows `system` until `bytes` are live (mooncake: one segment, rounded up
 * to 4 KiB; flowipc_jemalloc: blocks of block_bytes, rounded up), names under
 * prefix. 0 with *out, -EINVAL (a bad system, 0 bytes, more than
 * SHMB_ALLOC_GROW_MAX_BLOCKS blocks), -ENOSPC (/dev/shm full) or -errno. */
int shmb_alloc_grow_run(shmb_alloc_grow_system_t system, uint64_t bytes, uint64_t block_bytes, const char *prefix,
                        shmb_alloc_grow_t *out);

/* Both systems to `bytes`, a row each: variant its name, step "grow", arg
 * pool_mb, one iteration of the time to reach it, note "<pools> pools
 * <mappings> maps <faults> faults". 0 or the first run's error (no row). */
int shmb_alloc_grow_rows(uint64_t bytes, uint64_t block_bytes, const char *prefix, int repetition,
                         shmb_rows_t *rows);

#ifdef __cplusplus
}
#endif

#endif
