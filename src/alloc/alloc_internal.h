/* alloc_internal: what the allocation benchmark's files share (their order: README.md). */
#ifndef SHMBENCH_ALLOC_INTERNAL_H
#define SHMBENCH_ALLOC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/crew_internal.h"
#include "shmbench/alloc_bench.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/lookup.h"
#include "shmbench/paths.h"
#include "shmbench/segment.h"

#define SHMB_ALLOC_PAGE 4096ull
/* Upstream's own pools (docs/upstream.md), bare layers of mooncake_upstream and
 * flowipc_classic_upstream: outside shmb_alloc_kind_t, as only some builds have them. */
#define SHMB_ALLOC_UPSTREAM_BARE ((shmb_alloc_kind_t)(SHMB_ALLOC_KINDS + 1))
#define SHMB_ALLOC_UPSTREAM_CLASSIC_BARE ((shmb_alloc_kind_t)(SHMB_ALLOC_KINDS + 2))
#define SHMB_ALLOC_FIRST_POOL SHMB_ALLOC_OFFSET /* the pools are the kinds from here on */
/* A touch row's note: "N/M " this; N > 0: no first touch. */
#define SHMB_ALLOC_PAGES_BEFORE "pages in memory before"
/* A pool maps at most its blocks' pages x 5/4 and this much. */
#define SHMB_ALLOC_POOL_META_BYTES (8ull << 20)

/* For tests: sees every thread's blocks (thread t's at blocks[t * per_thread]) after round 0's
 * alloc and alloc_reuse, before their check; a test plants a wrong one. */
typedef struct shmb_alloc_hook {
    void (*check)(void **blocks, uint64_t per_thread, int threads, void *arg);
    void *arg;
} shmb_alloc_hook_t;

/* shmb_alloc_bench_run with a test's hook (NULL: none). */
int shmb_alloc_bench_run_hooked(const shmb_alloc_config_t *cfg, const shmb_alloc_hook_t *hook,
                                shmb_rows_t *rows, uint64_t *kept_segments, char *why, size_t why_cap);

/* One run of the benchmark, as every mode sees it. */
typedef struct shmb_alloc_run {
    const shmb_alloc_config_t *cfg;
    const shmb_alloc_hook_t *hook; /* NULL: none */
    shmb_rows_t *rows;             /* where rows go */
    uint64_t *kept;                /* segments left on purpose (cleanup = 0) */
    char *why;                     /* what -EPROTO means */
    size_t why_cap;
} shmb_alloc_run_t;

/* ---- the modes ---- */

/* alloc_posix.c: every posix row of one size, on cfg->threads threads. */
int shmb_alloc_posix_size(const shmb_alloc_run_t *run, uint64_t size_kb);

/* alloc_rounds.c: every row of one pool allocator at one size, on cfg->threads threads. */
int shmb_alloc_pool_size(const shmb_alloc_run_t *run, shmb_alloc_kind_t kind, uint64_t size_kb);

/* alloc_paired.c: is cfg a paired run shmb_alloc_paired_run accepts? */
int shmb_alloc_paired_ok(const shmb_alloc_config_t *cfg);

/* alloc_paired.c: every size of a paired run into run->rows. 0, -EINVAL (not paired_ok),
 * -errno or -EPROTO. */
int shmb_alloc_paired_run(const shmb_alloc_run_t *run);

/* ---- rows, names, sizes (alloc_rows.c) ---- */

/* A system's layers, by shmb_system_t: object (alloc / free rows), bare (alloc_bare /
 * free_bare), and what registers. */
typedef struct shmb_alloc_layers {
    shmb_alloc_kind_t object, bare, reg;
} shmb_alloc_layers_t;
extern const shmb_alloc_layers_t shmb_alloc_system_layers[SHMB_SYSTEMS];

/* A pool's rounds: ceil(min_ops / working set): each step times min_ops operations at least. */
uint64_t shmb_alloc_rounds(const shmb_alloc_config_t *cfg);

/* Are num_iterations, min_ops, working_set and max_size_kb in range? */
int shmb_alloc_counts_ok(const shmb_alloc_config_t *cfg);

/* The N of the register rows: 10, 100, 1000 blocks of the row's size. */
extern const uint64_t shmb_alloc_register_buffers[SHMB_ALLOC_REGISTER_COUNTS];

/* A register row's argument: "SIZE/buffers:N". */
void shmb_alloc_register_name(shmb_row_t *row, uint64_t size_kb, uint64_t buffers);

/* A row of this run's repetition: variant, size_kb. */
shmb_row_t shmb_alloc_row(const shmb_alloc_config_t *cfg, const char *variant, uint64_t size_kb);

/* Pushes row under `step` with its samples (reordered) and iterations. */
int shmb_alloc_push_step(shmb_rows_t *rows, shmb_row_t row, const char *step, double *samples,
                         size_t n, uint64_t iterations);

/* Sets the aggregate rate of the row just pushed: ops over the wall time. */
void shmb_alloc_set_rate(shmb_rows_t *rows, uint64_t ops, double wall_ns);

/* A crew of cfg->threads threads, each on its own planned CPU when there are enough. */
int shmb_alloc_crew_start(const shmb_alloc_config_t *cfg, shmb_crew_t **crew);

/* ---- registration (alloc_register.c) ---- */

/* Mooncake's createSharedMemory of one buffer: shm_open + ftruncate, mmap, close, each timed
 * into ns[0..3]. Nothing is left on error. */
int shmb_alloc_posix_create(const char *prefix, size_t bytes, shmb_segment_t *seg, uint64_t ns[4]);

/* Unlinks seg (cleanup timed into *ns, when ns), or with unlink 0 leaves it, counted in *kept. */
int shmb_alloc_segment_end(shmb_segment_t *seg, int unlink, double *ns, uint64_t *kept);

typedef struct shmb_alloc_pool_ops shmb_alloc_pool_ops_t;

/* One pool of an allocator: its operations and their state. */
typedef struct shmb_alloc_pool {
    const shmb_alloc_pool_ops_t *ops;
    void *impl;
    uint64_t blocks; /* the blocks it is made for (set before create) */
} shmb_alloc_pool_t;

/* A pool of `ops` for `blocks` blocks of `bytes`, its create timed into *register_ns. */
int shmb_alloc_pool_create(const shmb_alloc_config_t *cfg, shmb_alloc_pool_t *p, const shmb_alloc_pool_ops_t *ops,
                           size_t bytes, uint64_t blocks, double *register_ns);

/* One registration of `buffers` blocks of `bytes` timed into *ns, undone untimed: ops NULL,
 * that many createSharedMemory; bipc, one pool; jemalloc, the arena and that many mallocx. */
int shmb_alloc_register_total(const shmb_alloc_config_t *cfg, const shmb_alloc_pool_ops_t *ops, size_t bytes,
                              uint64_t buffers, double *ns);

/* ---- the pools (alloc_pool.c, alloc_pool_fipc.c) ---- */

/* An allocator of blocks inside SHM; alloc and free are its timed loops (no indirect call inside). */
struct shmb_alloc_pool_ops {
    shmb_alloc_kind_t kind;
    const char *name;    /* shmb_alloc_kind_name */
    int per_thread;      /* 1: one pool per thread (single-threaded by design); 0: one shared */
    size_t handle_bytes; /* the handle the caller keeps per block (handles[i], zeroed first); 0: none */
    uint64_t (*shm_bytes)(uint64_t bytes, uint64_t blocks); /* SHM a pool of blocks maps at most */
    int (*create)(shmb_alloc_pool_t *p, const char *prefix, size_t pool_bytes);
    /* Unlinks the SHM when `unlink_shm`, else leaves it and counts it in *kept. */
    int (*destroy)(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept);
    int (*thread_start)(shmb_alloc_pool_t *p, size_t bytes); /* NULL, or once per thread, untimed */
    int (*alloc)(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n);
    int (*free)(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n);
    int (*empty)(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n);
    int (*holds)(shmb_alloc_pool_t *p, const void *ptr, size_t bytes); /* inside its SHM? */
    /* NULL, or its own check of every live block (and handle): 0 or -EPROTO with why. */
    int (*verify)(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n, size_t bytes,
                  char *why, size_t why_cap);
    /* NULL, or the check after round 0's free batch: n freed, each once, none live. */
    int (*freed)(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t why_cap);
    /* NULL when no peer can take the blocks; else the pools a borrower is told (*out malloc'ed)
     * and a block's handle as the lender makes it. */
    int (*lend)(shmb_alloc_pool_t *p, shmb_fipc_pool_t **out, size_t *n);
    int (*handle)(shmb_alloc_pool_t *p, const void *block, size_t bytes, shmb_lookup_request_t *h);
    int peer_kind; /* shmb_alloc_peer_pool_kind_t of lend's pools */
    /* NULL when it cannot say (space rows print '-'); else the free bytes and the largest free
     * block, as the allocator reports or a probe finds them. */
    int (*space)(shmb_alloc_pool_t *p, uint64_t *total_free, uint64_t *largest);
    /* NULL for a pool of fixed size; else the SHM bytes it has mapped now. */
    uint64_t (*mapped)(shmb_alloc_pool_t *p);
};

/* Is [ptr, ptr + bytes) inside [base, base + size)? */
static inline int shmb_alloc_inside(const void *base, size_t size, const void *ptr, size_t bytes)
{
    const unsigned char *c = ptr, *b = base;
    return c >= b && (size_t)(c - b) <= size && bytes <= size - (size_t)(c - b);
}

/* The operations of a pool allocator; NULL for posix. */
const shmb_alloc_pool_ops_t *shmb_alloc_pool_ops(shmb_alloc_kind_t kind);

/* The Flow-IPC entries of the table, upstream's Pool_arena included (alloc_pool_fipc.c). */
extern const shmb_alloc_pool_ops_t shmb_alloc_fipc_pools[];
extern const size_t shmb_alloc_fipc_npools;

/* alloc_notes.c: jemalloc's thread cache read through mallctl: *max_bytes its largest cached
 * size, *slots the blocks it keeps of the size class of `bytes` (0: none). 0 or -errno. */
int shmb_alloc_tcache_reach(uint64_t bytes, uint64_t *max_bytes, uint64_t *slots);

/* ---- a pool's round (alloc_round.c) ---- */

enum { SHMB_ALLOC_ALLOC, SHMB_ALLOC_FREE, SHMB_ALLOC_REUSE, SHMB_ALLOC_TOUCH_REUSE, SHMB_ALLOC_STEPS };
enum { SHMB_ALLOC_BLOCK_STEPS = 3 }; /* alloc, free, alloc_reuse */

/* One pool's working set and its samples. */
typedef struct shmb_alloc_round {
    shmb_alloc_pool_t *pool;
    void **blocks;
    void *handles;   /* the blocks' handles (ops->handle_bytes each), or NULL */
    uint64_t *order; /* free order: a permutation of 0..n */
    uint64_t n;      /* working set */
    size_t bytes;    /* requested per block */
    double *batch[SHMB_ALLOC_STEPS]; /* [step][round]: ns per operation */
    double *touch_ns;                /* n: the first write of each fresh block */
    uint64_t touch_pages;            /* pages the touch wrote */
    uint64_t touch_resident;         /* of those, in memory before it: no first touch */
    /* NULL, or called after round 0's alloc, its check and touch (the peer's lending) */
    int (*lend)(void *arg, struct shmb_alloc_round *a);
    void *lend_arg;
    const shmb_alloc_run_t *run; /* the walk's state (shmb_alloc_round_run) */
    int step, failed;
    uint64_t r, touched;
} shmb_alloc_round_t;

/* Writes tag at ptr, untimed, guarded as a first write (a full /dev/shm: -ENOSPC, no SIGBUS). */
int shmb_alloc_write_tag(void *ptr, uint64_t tag);

/* The free order of a working set: a permutation of 0..n fixed by seed. */
void shmb_alloc_shuffle(uint64_t seed, uint64_t *order, uint64_t n);

/* One batch of `step` (SHMB_ALLOC_ALLOC, _FREE, _REUSE, _TOUCH_REUSE) over the working set on
 * the runner, into a->batch[step][r]; its clocks into span (may be NULL): a crew's phase. */
int shmb_alloc_round_batch(shmb_alloc_round_t *a, int step, uint64_t r, uint64_t span[2]);

/* Rounds r0.. r0 + rounds - 1 on the runner: alloc, free, alloc_reuse, [touch_reuse] batches into
 * a->batch[step][r], round 0 checked after each (touched and lent after alloc), the pool emptied
 * untimed after each round. */
int shmb_alloc_round_run(const shmb_alloc_run_t *run, shmb_alloc_round_t *a, uint64_t r0, uint64_t rounds);

/* The first write of each fresh block on the runner, one sample each; the pages already in
 * memory counted (mincore) untimed before each. */
int shmb_alloc_round_touch(shmb_alloc_round_t *a);

/* Round 0's check of a pass ("alloc", "alloc_reuse"): blocks[t * per_thread ...] from pools[t]. */
int shmb_alloc_round_check(const shmb_alloc_run_t *run, shmb_alloc_pool_t *const *pools, void **blocks,
                           const void *handles, uint64_t per_thread, int threads, size_t bytes, const char *pass);

/* Round 0's check after the free batch: each block freed once, by each pool's own count. */
int shmb_alloc_round_freed(const shmb_alloc_run_t *run, shmb_alloc_pool_t *const *pools, uint64_t per_thread,
                           int threads);

/* Every live block blocks[i] inside pools[i / per_pool]'s SHM, none overlapping, and each pool's
 * own check. 0, -EPROTO (why names `pass`) or -ENOMEM. */
int shmb_alloc_pool_verify(shmb_alloc_pool_t *const *pools, uint64_t per_pool, void **blocks, const void *handles,
                           uint64_t n, size_t bytes, const char *pass, char *why, size_t why_cap);

#endif
