/*
 * alloc_internal: what the allocation benchmark's three files share, and
 * the test hook. Private to the library and its tests: not installed.
 *
 *   alloc_bench.c   the driver: configuration, sizes, space, rows, speedups,
 *                   system rows, and the helpers below
 *   alloc_posix.c   Mooncake's createSharedMemory per buffer, one thread and N
 *   alloc_rounds.c  the pools' timed rounds, one thread and N
 *   alloc_pool.c    the pools behind one table of operations, the check of
 *                   their blocks, their hand-off to a peer
 *   alloc_register.c  registration as a deployment total (--system, --systems)
 *   alloc_paired.c  a paired run (--systems)
 */
#ifndef SHMBENCH_ALLOC_INTERNAL_H
#define SHMBENCH_ALLOC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/crew_internal.h"
#include "shmbench/alloc_bench.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/lookup.h"

#define SHMB_ALLOC_PAGE 4096ull
/* Upstream's own OffsetAllocator (shmbench/upstream.h, docs/upstream.md),
 * the bare layer of the system mooncake_upstream: a pool of the table
 * outside shmb_alloc_kind_t, so that no allocator list (--allocator, the
 * loops over the kinds) holds code that only some builds have. Its name is
 * "upstream_offset_bare". */
#define SHMB_ALLOC_UPSTREAM_BARE ((shmb_alloc_kind_t)(SHMB_ALLOC_KINDS + 1))
#define SHMB_ALLOC_FIRST_POOL SHMB_ALLOC_OFFSET /* the pools are the kinds from here on */
#define SHMB_ALLOC_PAGES_BEFORE "pages in memory before" /* a touch row's note: "N/M " this; N > 0: no
                                                          * first touch */
#define SHMB_ALLOC_POOL_META_BYTES (8ull << 20) /* a pool maps at most its blocks' pages x 5/4
                                                 * and this much */

/* For tests: called after round 0's alloc and alloc_reuse of a pool,
 * before the blocks are checked, with every thread's blocks (thread t's are
 * blocks[t * per_thread ...]); a test plants a wrong one. */
typedef struct shmb_alloc_hook {
    void (*check)(void **blocks, uint64_t per_thread, int threads, void *arg);
    void *arg;
} shmb_alloc_hook_t;

/* shmb_alloc_bench_run with a test's hook (NULL: none). */
int shmb_alloc_bench_run_hooked(const shmb_alloc_config_t *cfg, const shmb_alloc_hook_t *hook,
                                shmb_rows_t *rows, uint64_t *kept_segments, char *why, size_t why_cap);

/* One run of the benchmark, as every allocator's code sees it. */
typedef struct shmb_alloc_run {
    const shmb_alloc_config_t *cfg;
    const shmb_alloc_hook_t *hook; /* NULL: none */
    shmb_rows_t *rows;             /* where rows go */
    uint64_t *kept;                /* segments left on purpose (cleanup = 0) */
    char *why;                     /* what -EPROTO means */
    size_t why_cap;
} shmb_alloc_run_t;

/* ---- the driver's helpers (alloc_bench.c) ---- */

/* A row of this run's repetition: variant, size_kb. */
shmb_row_t shmb_alloc_row(const shmb_alloc_config_t *cfg, const char *variant, uint64_t size_kb);

/* Pushes row under `step` with its samples (reordered) and iterations. */
int shmb_alloc_push_step(shmb_rows_t *rows, shmb_row_t row, const char *step, double *samples,
                         size_t n, uint64_t iterations);

/* Sets the aggregate rate of the row just pushed: ops over the wall time. */
void shmb_alloc_set_rate(shmb_rows_t *rows, uint64_t ops, double wall_ns);

/* The first write of a fresh block (one byte per page, guarded against a
 * full /dev/shm), timed into *ns. */
int shmb_alloc_touch(void *addr, size_t bytes, double *ns);

/* Writes tag at ptr, untimed: a first write when the page is fresh, guarded
 * as one (a full /dev/shm is -ENOSPC, not a SIGBUS). */
int shmb_alloc_write_tag(void *ptr, uint64_t tag);

/* A crew of cfg->threads new threads, each pinned to its own planned CPU
 * when there are enough, else running on every allowed CPU. */
int shmb_alloc_crew_start(const shmb_alloc_config_t *cfg, shmb_crew_t **crew);

/* ---- a paired run (alloc_paired.c) ---- */

/* Is cfg a paired run shmb_alloc_paired_run accepts (alloc_bench.h)? */
int shmb_alloc_paired_ok(const shmb_alloc_config_t *cfg);

/* Every size of a paired run (cfg->nsystems > 0), its rows into run->rows.
 * Returns 0, -EINVAL (shmb_alloc_paired_ok says no), -errno or -EPROTO. */
int shmb_alloc_paired_run(const shmb_alloc_run_t *run);

/* ---- posix (alloc_posix.c) ---- */

/* Every posix row of one size, on cfg->threads threads. */
int shmb_alloc_posix_size(const shmb_alloc_run_t *run, uint64_t size_kb);

/* createSharedMemory of `buffers` buffers of `bytes` as the posix rows time
 * it (shm_open + ftruncate + mmap + close), all live at once, the sum of
 * their totals into *total_ns; then unmapped and unlinked untimed. */
int shmb_alloc_posix_register(const shmb_alloc_config_t *cfg, size_t bytes, uint64_t buffers, double *total_ns);

/* ---- registration as a deployment total (alloc_register.c) ---- */

/* The N of the register rows: 10, 100, 1000 blocks of the row's size. */
extern const uint64_t shmb_alloc_register_buffers[SHMB_ALLOC_REGISTER_COUNTS];

/* One deployment registration of `buffers` blocks of `bytes` by `kind`
 * (SHMB_ALLOC_POSIX: that many createSharedMemory; SHMB_ALLOC_BIPC: one
 * pool holding them; SHMB_ALLOC_JEMALLOC: the arena and that many mallocx,
 * with the pools its hooks create), timed whole into *ns, then undone
 * untimed. Returns 0, -EINVAL (another kind, 0 buffers) or -errno. */
int shmb_alloc_register_total(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, size_t bytes,
                              uint64_t buffers, double *ns);

/* A register row's argument: "SIZE/buffers:N" (the name
 * shm_alloc/register/size_kb:SIZE/buffers:N). */
void shmb_alloc_register_name(shmb_row_t *row, uint64_t size_kb, uint64_t buffers);

/* ---- pools: rounds (alloc_rounds.c) ---- */

/* Every row of one pool allocator at one size, on cfg->threads threads. */
int shmb_alloc_pool_size(const shmb_alloc_run_t *run, shmb_alloc_kind_t kind, uint64_t size_kb);

enum { SHMB_ALLOC_BLOCK_STEPS = 3 }; /* alloc, free, alloc_reuse */

/* The per-block question of a paired run at one size (one thread): a pool
 * of kinds[s] for each of nsys systems, each its own, with the same working
 * set, block size and free order; each round every pool runs one round
 * (alloc, free, alloc_reuse: a batch each, then emptied untimed) in the
 * order shmb_paired_order gives, round 0's blocks checked as
 * shmb_alloc_pool_size checks them before any figure counts. ns[k][s][r]:
 * step k's ns per operation of system s in round r. Every pool is destroyed
 * (unlinked) before it returns. Returns 0, -EINVAL (nsys out of range),
 * -errno or -EPROTO (a wrong block: why says which). */
int shmb_alloc_pool_paired(const shmb_alloc_run_t *run, const shmb_alloc_kind_t *kinds, size_t nsys,
                           uint64_t size_kb, uint64_t rounds, double *const *const ns[SHMB_ALLOC_BLOCK_STEPS]);

/* ---- pools: operations (alloc_pool.c) ---- */

typedef struct shmb_alloc_pool_ops shmb_alloc_pool_ops_t;

/* One pool of an allocator: its operations and their state. */
typedef struct shmb_alloc_pool {
    const shmb_alloc_pool_ops_t *ops;
    void *impl;
    uint64_t blocks; /* the blocks it is made for (set before create) */
} shmb_alloc_pool_t;

/* An allocator that hands out blocks inside SHM. The batch functions are
 * the timed loops: one per allocator, so that no indirect call sits inside
 * them. A new allocator is a new entry of the table in alloc_pool.c. */
struct shmb_alloc_pool_ops {
    shmb_alloc_kind_t kind;
    int per_thread;        /* 1: one pool per thread (single-threaded by design), its rows say
                            * so; 0: one pool shared by every thread */
    size_t handle_bytes;   /* what the caller keeps per block (its handle: handles[i] for
                            * blocks[i], handle_bytes each, zeroed before first use); 0: none */
    /* SHM a pool of `blocks` blocks of `bytes` maps, or holds at most. */
    uint64_t (*shm_bytes)(uint64_t bytes, uint64_t blocks);
    /* Creates and maps a pool of pool_bytes (shm_bytes) under prefix. */
    int (*create)(shmb_alloc_pool_t *p, const char *prefix, size_t pool_bytes);
    /* Unlinks the pool's SHM when `unlink_shm`, else leaves it and counts it in *kept. */
    int (*destroy)(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept);
    /* NULL, or what a thread does once before its first timed batch. */
    int (*thread_start)(shmb_alloc_pool_t *p, size_t bytes);
    int (*alloc)(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n);
    int (*free)(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n);
    /* Frees every block, untimed. */
    int (*empty)(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n);
    /* Is [ptr, ptr + bytes) inside the pool's SHM? */
    int (*holds)(shmb_alloc_pool_t *p, const void *ptr, size_t bytes);
    /* NULL, or the allocator's own check, after the driver's: blocks[0..n)
     * (and their handles) are every live block of the pool, of `bytes`
     * each. 0, or -EPROTO with why written. */
    int (*verify)(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n, size_t bytes,
                  char *why, size_t why_cap);
    /* NULL, or the check after round 0's free batch, n blocks freed in all
     * since the last: each freed once, none live. 0, or -EPROTO with why. */
    int (*freed)(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t why_cap);
    /* A peer process (shmbench/alloc_peer.h): NULL when it cannot take the
     * blocks (one process by design). The pools as a borrower is told them
     * (*out malloc'ed), and a block's handle as the lender makes it. */
    int (*lend)(shmb_alloc_pool_t *p, shmb_fipc_pool_t **out, size_t *n);
    int (*handle)(shmb_alloc_pool_t *p, const void *block, size_t bytes, shmb_lookup_request_t *h);
    int peer_kind;         /* shmb_alloc_peer_pool_kind_t of lend's pools */
};

/* What jemalloc's thread cache holds, read at run time through mallctl:
 * *max_bytes its largest cached size (arenas.tcache_max), *slots the blocks
 * it keeps of the size class of `bytes` (0: that size is not cached).
 * Returns 0 or -errno (a setting jemalloc does not have: recorded). */
int shmb_alloc_tcache_reach(uint64_t bytes, uint64_t *max_bytes, uint64_t *slots);

/* The operations of a pool allocator; NULL for posix. */
const shmb_alloc_pool_ops_t *shmb_alloc_pool_ops(shmb_alloc_kind_t kind);

/* Creates a pool of `ops` for `blocks` blocks of `bytes` under
 * cfg->shm_prefix, timing it into *register_ns (the register row;
 * alloc_rounds.c). */
int shmb_alloc_pool_create(const shmb_alloc_config_t *cfg, shmb_alloc_pool_t *p, const shmb_alloc_pool_ops_t *ops,
                           size_t bytes, uint64_t blocks, double *register_ns);

/* Every live block inside its pool's SHM, no two overlapping, and each
 * pool's own check (verify): blocks[i] (its handle at handles + i x
 * handle_bytes) comes from pools[i / per_pool]. Returns 0, -EPROTO (why
 * says which blocks, in `pass`) or -ENOMEM. */
int shmb_alloc_pool_verify(shmb_alloc_pool_t *const *pools, uint64_t per_pool, void **blocks, const void *handles,
                           uint64_t n, size_t bytes, const char *pass, char *why, size_t why_cap);

/* Hands round 0's blocks to the peer: each tagged (untimed) with
 * shmb_alloc_peer_tag(tag_seed, i), its handle sent; the peer attaches the
 * pools it needs (attach_ns, *nattach), checks every tag and times
 * `rounds` batches of translations (translate_ns). */
typedef struct shmb_alloc_lending {
    void **blocks;
    uint64_t n;
    size_t bytes;
    uint64_t tag_seed;
    uint64_t rounds;
    double *attach_ns;     /* malloc'ed here: one per pool the peer attached */
    size_t nattach;
    double *translate_ns;  /* rounds */
} shmb_alloc_lending_t;

int shmb_alloc_pool_lend(shmb_alloc_pool_t *p, shmb_peer_t *peer, shmb_alloc_lending_t *l, char *why,
                         size_t why_cap);

#endif
