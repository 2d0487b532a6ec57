/* alloc_bench: what one SHM allocation costs, createSharedMemory per buffer against Flow-IPC's
 * pools and a reference arena (docs/allocation.md). Functions return 0 or -errno. */
#ifndef SHMBENCH_ALLOC_BENCH_H
#define SHMBENCH_ALLOC_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/notes.h"
#include "shmbench/paired.h"
#include "shmbench/peer.h"
#include "shmbench/progress.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_MAX_SIZES 64
#define SHMB_ALLOC_ARENA_MIN_BATCH 2048   /* working set, at least: > 100 timer overheads a batch */
#define SHMB_ALLOC_MIN_OPS 100000         /* default of min_ops */
#define SHMB_ALLOC_MAX_MIN_OPS (SHMB_ALLOC_ARENA_MIN_BATCH * 4096ull) /* SHMB_ALLOC_PEER_MAX_ROUNDS */
#define SHMB_ALLOC_MAX_ITERATIONS 100000000
#define SHMB_ALLOC_MAX_SIZE_KB (1ull << 30) /* 1 TiB */
#define SHMB_ALLOC_MAX_THREADS 256

typedef enum shmb_alloc_kind {
    SHMB_ALLOC_POSIX,
    SHMB_ALLOC_OFFSET,
    SHMB_ALLOC_ARENA,
    SHMB_ALLOC_BIPC,
    SHMB_ALLOC_JEMALLOC,
    SHMB_ALLOC_JEMALLOC_TCACHE,
    SHMB_ALLOC_OFFSET_BARE,        /* OffsetAllocator alone (Mooncake's bare layer) */
    SHMB_ALLOC_BIPC_OBJECT,     /* Pool_arena::construct (SHM-classic's object layer) */
    SHMB_ALLOC_JEMALLOC_OBJECT, /* Ipc_arena::construct (SHM-jemalloc's object layer) */
    SHMB_ALLOC_KINDS /* how many there are */
} shmb_alloc_kind_t;

typedef struct shmb_alloc_config {
    uint64_t num_iterations; /* allocations per size (=1000) */
    uint64_t min_size_kb;    /* first size (=4) */
    uint64_t max_size_kb;    /* last size, included (=1024) */
    uint64_t min_ops;        /* pools: operations timed per step, at least, in whole rounds
                              * (1..SHMB_ALLOC_MAX_MIN_OPS, =SHMB_ALLOC_MIN_OPS) */
    int count_given;         /* 1: --num_iterations given: paired rounds go down to SHMB_PAIRED_MIN_ROUNDS */
    uint64_t working_set;    /* pools: live blocks per round, ..SHMB_ALLOC_MAX_ITERATIONS; 0: arena_blocks */
    int measure_mmap_only;   /* posix: time mmap and munmap of one segment per size (=0) */
    int cleanup;             /* unlink segments after use (=1) */
    int touch;               /* time first touch of every page (=0) */
    int run[SHMB_ALLOC_KINDS]; /* 1: run this allocator */
    int system_rows;         /* 1: exactly one allocator runs; rows named by step only */
    int upstream;            /* system_rows, no run[]: upstream's OffsetAllocator's bare rows alone */
    uint64_t seed;           /* random free order */
    const char *shm_prefix;  /* "/mooncake_bench_" */
    int repetition;          /* stamped into the rows */
    int threads;             /* threads running each allocator at once; 0 or 1: this one (=1) */
    shmb_progress_t *progress; /* NULL, or told each step between timed phases */
    int cpu;                 /* threads > 1: the plan's first CPU (shmb_sysinfo_plan_cpus); -1: the first allowed */
    shmb_peer_t *peer;       /* NULL, or shmb_alloc_peer_start's peer (threads 1, no measure_mmap_only) */
    /* Paired (--systems): nsystems > 0 measures these instead of run[], baseline first, control last. */
    size_t nsystems;         /* 0: not paired; else 3..SHMB_PAIRED_MAX_SYSTEMS */
    int systems[SHMB_PAIRED_MAX_SYSTEMS];              /* shmb_system_t; an upstream one: bare rows only */
    const char *system_names[SHMB_PAIRED_MAX_SYSTEMS]; /* "mooncake", ..., "mooncake_control" */
} shmb_alloc_config_t;

/* The rows' variant of kind: "posix", "offset", ...; "unknown" out of range. */
const char *shmb_alloc_kind_name(shmb_alloc_kind_t kind);

/* --system's allocators as kind names ("posix,offset,offset_bare"); NULL for no system. */
const char *shmb_alloc_system_allocators(const char *system);

/* A run's sizes in KB: min, doubling, then max if skipped. How many, or -EINVAL (bad range, > cap). */
int shmb_alloc_bench_sizes(uint64_t min_kb, uint64_t max_kb, uint64_t *sizes, size_t cap);

/* max(num_iterations, SHMB_ALLOC_ARENA_MIN_BATCH) blocks. */
uint64_t shmb_alloc_bench_arena_blocks(uint64_t num_iterations);

/* A pool's working set: cfg->working_set, or when 0 arena_blocks(num_iterations). */
uint64_t shmb_alloc_bench_working_set(const shmb_alloc_config_t *cfg);

/* The most /dev/shm the run holds at once over `repetitions` (what it writes; with cleanup = 0
 * all it keeps). 0, -EINVAL (bad config, arena too small) or -EOVERFLOW. */
int shmb_alloc_bench_shm_bytes(const shmb_alloc_config_t *cfg, int repetitions, uint64_t *bytes);

/* Runs the benchmark, appending its rows; *kept_segments: left on purpose (cleanup = 0).
 * 0, -errno, -EINVAL (bad config; paired: threads <= 1, no peer, touch, measure_mmap_only or
 * system_rows, cleanup 1), -EPROTO (a bad block or tag: why says which), -EPIPE (peer died). */
int shmb_alloc_bench_run(const shmb_alloc_config_t *cfg, shmb_rows_t *rows,
                         uint64_t *kept_segments, char *why, size_t why_cap);

/* A paired run's rounds (nsystems 0: a --system run's register rows'): *block the block steps',
 * reg[i] register's with 10^(i+1) buffers (ceil(num_iterations / buffers), >= REGISTER_MIN_ROUNDS);
 * each >= PAIRED_MIN_ROUNDS (SHMB_PAIRED_MIN_ROUNDS with count_given), whole 2 x nsystems blocks. */
#define SHMB_ALLOC_PAIRED_MIN_ROUNDS 20
#define SHMB_ALLOC_REGISTER_MIN_ROUNDS 9 /* samples of a register row, at least */
#define SHMB_ALLOC_REGISTER_COUNTS 3     /* the N of the register rows: 10, 100, 1000 */
void shmb_alloc_bench_paired_rounds(const shmb_alloc_config_t *cfg, uint64_t *block,
                                    uint64_t reg[SHMB_ALLOC_REGISTER_COUNTS]);

/* ---- space (--allocator=space, docs/allocation.md "Space") ---- */

typedef struct shmb_alloc_space_class {
    uint64_t bytes;
    uint32_t percent;
} shmb_alloc_space_class_t;

/* Mooncake Store's KV mix: 4 KiB 70%, 256 KiB 20%, 3,274,752 B 10%. */
#define SHMB_ALLOC_KV_MIX_CLASSES 3
extern const shmb_alloc_space_class_t shmb_alloc_kv_mix[SHMB_ALLOC_KV_MIX_CLASSES];
#define SHMB_ALLOC_SPACE_ROUNDS 20       /* churn rounds (=) */
#define SHMB_ALLOC_SPACE_FREE_PERCENT 50 /* share of the live blocks each round frees (=) */

typedef struct shmb_alloc_space_config {
    uint64_t pool_bytes;   /* the pool (jemalloc: the SHM its arena may map) */
    uint64_t rounds;       /* churn rounds */
    uint32_t free_percent; /* 1..100 */
    const shmb_alloc_space_class_t *mix; /* NULL: shmb_alloc_kv_mix */
    size_t nmix;           /* classes of mix; percents sum to 100 */
    uint64_t seed;
    const char *shm_prefix;
    int repetition;
} shmb_alloc_space_config_t;

typedef struct shmb_alloc_space {
    uint64_t fill_blocks, fill_bytes; /* live when an allocation first failed */
    double utilization;               /* fill_bytes / pool_bytes */
    int has_free;                     /* 0: the allocator cannot say its free space ('-') */
    uint64_t total_free, largest_free; /* after the churn */
    double fragmentation;             /* 1 - largest_free / total_free (0 when nothing is free) */
    uint64_t allocs, frees, checks;   /* timed calls; live-set checks passed */
} shmb_alloc_space_t;

/* 1 - largest / total; 0 when total is 0. */
double shmb_alloc_space_fragmentation(uint64_t largest, uint64_t total);

/* The next block's size of mix (cumulative percents against rnd % 100); NULL: the KV mix. */
uint64_t shmb_alloc_space_draw(const shmb_alloc_space_class_t *mix, size_t nmix, uint64_t rnd);

/* Fills a pool of kind (offset, bipc, jemalloc) from the mix until an allocation fails, then
 * churns (each round frees free_percent, refills); every live set checked. Rows space_alloc,
 * space_free into rows (may be NULL). 0, -EINVAL, -errno, -EPROTO (why). */
int shmb_alloc_space_run(const shmb_alloc_space_config_t *cfg, shmb_alloc_kind_t kind, shmb_alloc_space_t *out,
                         shmb_rows_t *rows, char *why, size_t why_cap);

/* The notes of shm_allocation_bench's table for cfg's run. */
int shmb_notes_alloc(shmb_report_t *report, shmb_notes_t *store, const shmb_alloc_config_t *cfg);

/* The notes of --allocator=space. */
int shmb_notes_alloc_space(shmb_report_t *report, shmb_notes_t *store);

/* The notes of --allocator=ready: the pool row, the caller's limits lines, then with
 * grow_block_kb > 0 the grow row. */
int shmb_notes_alloc_ready(shmb_report_t *report, shmb_notes_t *store, uint64_t grow_block_kb,
                           const char *const *limits, size_t nlimits);

#ifdef __cplusplus
}
#endif

#endif
