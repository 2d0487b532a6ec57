/*
 * alloc_grow: what it takes to reach N bytes of live blocks, one design
 * against the other (issue: Flow-IPC's jemalloc pools grow extent by
 * extent, Mooncake registers one segment).
 *
 * - mooncake: one segment of `bytes`, made as createSharedMemory makes it
 *   (shm_open + ftruncate + mmap, nothing reserved), then one write per
 *   4 KiB page (the user's first writes into the registered buffer);
 * - flowipc_jemalloc: the SHM-jemalloc model (shmbench/fipc_jemalloc.h)
 *   allocates blocks of block_bytes until `bytes` are live, each block
 *   written once per 4 KiB page as it comes (the same first writes); every
 *   extent jemalloc asks for is a new SHM pool.
 *
 * Both count, from before the first step to after the last write: the SHM
 * pools made (the model's own count; 1 for mooncake), the mappings of
 * them (lines of /proc/self/maps naming /dev/shm<prefix>...), the page faults (getrusage, minor + major)
 * and the time. The first writes are guarded (shmb_segment_first_write):
 * a /dev/shm that fills up is -ENOSPC, never a SIGBUS. Everything is
 * undone before return (blocks freed, pools and segment unlinked).
 *
 * Sizes in bytes, times in nanoseconds; 0 or -errno (recorded with
 * shmbench/error.h for a failed system call).
 */
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

/* Grows `system` until `bytes` are live (mooncake: one segment of bytes
 * rounded up to 4 KiB; flowipc_jemalloc: blocks of block_bytes, bytes /
 * block_bytes of them rounded up), names under prefix. Returns 0 with *out,
 * -EINVAL (a bad system, bytes or block_bytes 0, more than
 * SHMB_ALLOC_GROW_MAX_BLOCKS blocks), -ENOSPC (/dev/shm full), -ENOMEM, or
 * -errno. Leaves nothing in /dev/shm. */
int shmb_alloc_grow_run(shmb_alloc_grow_system_t system, uint64_t bytes, uint64_t block_bytes, const char *prefix,
                        shmb_alloc_grow_t *out);

/* Runs both systems to `bytes` (as shmb_alloc_grow_run) and appends a row
 * each: variant the system's name, step "grow", arg pool_mb = bytes >> 20,
 * one iteration whose ns is the time to reach it, bytes_per_second live
 * bytes / that time, note "<pools> pools <mappings> maps <faults> faults".
 * Returns 0 or the first run's error (no row then). */
int shmb_alloc_grow_rows(uint64_t bytes, uint64_t block_bytes, const char *prefix, int repetition,
                         shmb_rows_t *rows);

#ifdef __cplusplus
}
#endif

#endif
