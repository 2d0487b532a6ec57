/* alloc_bench: the driver: config, /dev/shm space, each allocator per size, the speedups
 * against Mooncake's answer, a system's rows under step names (docs/allocation.md). */
#include "alloc_internal.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/arena.h"
#include "shmbench/error.h"
#include "shmbench/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Mooncake kind a kind's per-block rows pair with (its like): the
 * object layers with offset, the bare allocators and the arena with
 * offset_bare; SHMB_ALLOC_KINDS: none. */
static shmb_alloc_kind_t per_block_like(shmb_alloc_kind_t kind)
{
    switch (kind) {
    case SHMB_ALLOC_BIPC_OBJECT:
    case SHMB_ALLOC_JEMALLOC_OBJECT:
        return SHMB_ALLOC_OFFSET;
    case SHMB_ALLOC_ARENA:
    case SHMB_ALLOC_BIPC:
    case SHMB_ALLOC_JEMALLOC:
    case SHMB_ALLOC_JEMALLOC_TCACHE:
        return SHMB_ALLOC_OFFSET_BARE;
    default:
        return SHMB_ALLOC_KINDS;
    }
}

/* The system whose kinds run[] holds (posix aside), or -1 when none or
 * kinds of two. */
static int run_system(const shmb_alloc_config_t *cfg)
{
    int found = -1;
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        if (!cfg->run[k])
            continue;
        int of = -1;
        for (int s = 0; s < SHMB_SYSTEMS; s++)
            if (shmb_alloc_system_layers[s].object == (shmb_alloc_kind_t)k ||
                shmb_alloc_system_layers[s].bare == (shmb_alloc_kind_t)k)
                of = s;
        if (of < 0 || (found >= 0 && found != of))
            return -1;
        found = of;
    }
    return found;
}

/* Can the arena hold the working set of the largest size (a size class, and
 * fewer than 2^32 granules)? */
static int arena_fits(const shmb_alloc_config_t *cfg)
{
    if (!cfg->run[SHMB_ALLOC_ARENA])
        return 1;
    uint64_t block = shmb_arena_block_bytes((size_t)(cfg->max_size_kb * 1024));
    uint64_t blocks = shmb_alloc_bench_working_set(cfg);
    return block != 0 && blocks <= (uint64_t)UINT32_MAX * SHMB_ARENA_GRANULE / block;
}

/* The bytes one allocator writes at once (touched, by every thread) and the
 * segments one kept run holds, for blocks of b bytes (whole pages). */
static void shm_written(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, uint64_t b,
                        uint64_t threads, uint64_t *written, uint64_t *kept_segments)
{
    const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kind);
    const uint64_t blocks = shmb_alloc_bench_working_set(cfg);
    *kept_segments = 1;
    if (!ops) { /* posix: without touch, the tag's page */
        *written = cfg->touch ? b * threads : cfg->peer ? SHMB_ALLOC_PAGE : 0;
        *kept_segments = cfg->measure_mmap_only ? 1 : cfg->num_iterations;
    } else if (ops->per_thread) {
        *written = cfg->touch ? ops->shm_bytes(b, blocks) * threads : 0;
    } else { /* one pool for all threads; a tag per block: a page each at most */
        const uint64_t pool = ops->shm_bytes(b, blocks * threads);
        *written = cfg->touch ? pool : 0;
        if (!cfg->touch && cfg->peer && ops->lend)
            *written = blocks * SHMB_ALLOC_PAGE < pool ? blocks * SHMB_ALLOC_PAGE : pool;
    }
}

int shmb_alloc_bench_shm_bytes(const shmb_alloc_config_t *cfg, int repetitions, uint64_t *bytes)
{
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES];
    int nsizes = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes, SHMB_ALLOC_MAX_SIZES);
    if (nsizes < 0 || repetitions < 1)
        return -EINVAL;
    if (cfg->max_size_kb > SHMB_ALLOC_MAX_SIZE_KB || cfg->num_iterations > SHMB_ALLOC_MAX_ITERATIONS ||
        cfg->working_set > SHMB_ALLOC_MAX_ITERATIONS)
        return -EOVERFLOW;
    if (!arena_fits(cfg) || cfg->threads < 0 || cfg->threads > SHMB_ALLOC_MAX_THREADS)
        return -EINVAL;
    const uint64_t threads = cfg->threads > 1 ? (uint64_t)cfg->threads : 1;
    const uint64_t blocks = shmb_alloc_bench_working_set(cfg);
    uint64_t most = 0, sum = 0;
    for (int i = 0; i < nsizes; i++) {
        const uint64_t b = (sizes[i] * 1024 + SHMB_ALLOC_PAGE - 1) / SHMB_ALLOC_PAGE * SHMB_ALLOC_PAGE;
        for (int k = 0; k < SHMB_ALLOC_KINDS; k++) {
            /* upstream's OffsetAllocator maps what offset_bare maps */
            if (!cfg->run[k] && !(k == SHMB_ALLOC_OFFSET_BARE && cfg->upstream))
                continue;
            /* a pool maps blocks x threads x (b + its overhead, <= b / 4 + 8 MiB): keep it
             * below 2^62 */
            if (k != SHMB_ALLOC_POSIX &&
                blocks * threads > (UINT64_MAX / 4) / (2 * b + SHMB_ALLOC_POOL_META_BYTES))
                return -EOVERFLOW;
            uint64_t written, kept_segments;
            shm_written(cfg, (shmb_alloc_kind_t)k, b, threads, &written, &kept_segments);
            if (written > UINT64_MAX / kept_segments || sum > UINT64_MAX - written * kept_segments)
                return -EOVERFLOW;
            sum += written * kept_segments;
            most = written > most ? written : most;
        }
    }
    if (!cfg->cleanup && sum > UINT64_MAX / (uint64_t)repetitions)
        return -EOVERFLOW;
    *bytes = cfg->cleanup ? most : sum * (uint64_t)repetitions;
    /* register rows: N blocks of the largest size mapped at once (sparse: no page written, but
     * /dev/shm must be able to hold them) */
    const uint64_t largest = shmb_alloc_register_buffers[SHMB_ALLOC_REGISTER_COUNTS - 1] * cfg->max_size_kb * 1024;
    if ((cfg->nsystems || cfg->system_rows) && largest > *bytes)
        *bytes = largest;
    if (cfg->peer) /* the control segment: a head of at most a page, then the data area */
        *bytes += SHMB_ALLOC_PAGE + SHMB_ALLOC_PEER_DATA_BYTES;
    return 0;
}

/* ---- speedups and the rows of one system ---- */

/* A touch row whose pages were partly in memory before ("N/M pages in
 * memory before", N > 0): no first touch, nothing to set against one. */
static int not_first_touch(const shmb_row_t *row)
{
    return strstr(row->note, SHMB_ALLOC_PAGES_BEFORE) && strncmp(row->note, "0/", 2) != 0;
}

/* row's speedup = base's p50 / row's p50, when both ran (touch: both first touches). */
static void set_speedup(shmb_rows_t *rows, const shmb_alloc_config_t *cfg, uint64_t size_kb,
                        const char *variant, const char *step, const char *base_variant, const char *base_step)
{
    const shmb_row_t *base = shmb_rows_find(rows, base_variant, base_step, size_kb, cfg->repetition);
    shmb_row_t *row = shmb_rows_find(rows, variant, step, size_kb, cfg->repetition);
    if (base && row && row->ns.p50 > 0 && !not_first_touch(row) && !not_first_touch(base))
        row->speedup = base->ns.p50 / row->ns.p50;
}

/* Each row against Mooncake's answer to the same question: a block's steps
 * against its like's (per_block_like: offset or offset_bare), a pool's
 * register against createSharedMemory (posix total; mmap with
 * measure_mmap_only), the peer's first use and translation against posix
 * attach. */
static void set_speedups(shmb_rows_t *rows, const shmb_alloc_config_t *cfg, uint64_t size_kb)
{
    static const char *per_block[] = {"alloc", "free", "alloc_reuse", "touch", "touch_reuse"};
    const char *registration = cfg->measure_mmap_only ? "mmap" : "total";
    const char *posix = shmb_alloc_kind_name(SHMB_ALLOC_POSIX);
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const shmb_alloc_kind_t like = per_block_like((shmb_alloc_kind_t)k);
        const char *name = shmb_alloc_kind_name((shmb_alloc_kind_t)k);
        for (size_t i = 0; i < sizeof(per_block) / sizeof(per_block[0]) && like != SHMB_ALLOC_KINDS; i++)
            set_speedup(rows, cfg, size_kb, name, per_block[i], shmb_alloc_kind_name(like), per_block[i]);
        set_speedup(rows, cfg, size_kb, name, "register", posix, registration);
        set_speedup(rows, cfg, size_kb, name, "attach", posix, "attach");
        set_speedup(rows, cfg, size_kb, name, "translate", posix, "attach");
    }
}

/* A register row per N of shmb_alloc_register_buffers: the system's
 * deployment total (alloc_register.c), as many samples as a paired run's;
 * unmeasured rows when no kind of a system runs. */
static int register_rows(const shmb_alloc_config_t *cfg, uint64_t size_kb, shmb_rows_t *rows)
{
    const int sys = run_system(cfg);
    const shmb_alloc_kind_t reg = cfg->run[SHMB_ALLOC_POSIX] ? SHMB_ALLOC_POSIX
                                  : sys >= 0                   ? shmb_alloc_system_layers[sys].reg
                                                               : SHMB_ALLOC_KINDS;
    uint64_t block, rounds[SHMB_ALLOC_REGISTER_COUNTS];
    shmb_alloc_bench_paired_rounds(cfg, &block, rounds);
    int ret = 0;
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS && ret == 0; i++) {
        shmb_row_t row = shmb_alloc_row(cfg, "", size_kb);
        snprintf(row.step, sizeof(row.step), "register");
        shmb_alloc_register_name(&row, size_kb, shmb_alloc_register_buffers[i]);
        if (reg == SHMB_ALLOC_KINDS) {
            ret = shmb_rows_push(rows, &row);
            continue;
        }
        double *ns = calloc((size_t)rounds[i], sizeof(double));
        if (!ns)
            return shmb_error_record("malloc", ENOMEM, NULL);
        for (uint64_t r = 0; r < rounds[i] && ret == 0; r++)
            ret = shmb_alloc_register_total(cfg, shmb_alloc_pool_ops(reg), (size_t)size_kb * 1024,
                                            shmb_alloc_register_buffers[i], &ns[r]);
        if (ret == 0)
            ret = shmb_alloc_push_step(rows, row, "register", ns, (size_t)rounds[i], rounds[i]);
        free(ns);
    }
    return ret;
}

/* One system's rows under step names alone: its registrations
 * (register_rows), its object layer's per-block steps, its bare
 * allocator's (alloc_bare, free_bare), and the peer's (posix's attach and
 * detach when posix runs, else the object layer's pool's); a step the
 * system lacks is an unmeasured row. */
static int system_rows(const shmb_alloc_config_t *cfg, uint64_t size_kb, const shmb_rows_t *all,
                       shmb_rows_t *rows)
{
    /* step, where it comes from (0: the object layer, 1: the bare allocator), and the step there */
    static const struct {
        const char *step;
        int bare;
        const char *from;
    } steps[] = {{"alloc", 0, "alloc"},           {"free", 0, "free"},   {"alloc_reuse", 0, "alloc_reuse"},
                 {"alloc_bare", 1, "alloc"},      {"free_bare", 1, "free"}, {"touch", 0, "touch"},
                 {"touch_reuse", 0, "touch_reuse"}, {"attach", 0, "attach"}, {"detach", 0, "detach"},
                 {"translate", 0, "translate"}};
    const char *posix = cfg->run[SHMB_ALLOC_POSIX] ? shmb_alloc_kind_name(SHMB_ALLOC_POSIX) : NULL;
    const int sys = run_system(cfg);
    const char *layer[2] = {NULL, NULL};
    if (sys >= 0) {
        const shmb_alloc_layers_t *ly = &shmb_alloc_system_layers[sys];
        layer[0] = cfg->run[ly->object] ? shmb_alloc_kind_name(ly->object) : NULL;
        layer[1] = cfg->run[ly->bare] ? shmb_alloc_kind_name(ly->bare) : NULL;
    }
    if (cfg->upstream)
        layer[1] = shmb_alloc_kind_name(SHMB_ALLOC_UPSTREAM_BARE);
    int ret = register_rows(cfg, size_kb, rows);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && ret == 0; i++) {
        if (!cfg->touch && strncmp(steps[i].step, "touch", 5) == 0)
            continue;
        if (!cfg->peer && i >= 7) /* attach, detach, translate */
            continue;
        const char *variant = layer[steps[i].bare];
        if (posix && (i == 7 || i == 8)) /* attach, detach: Mooncake's receiver opens the buffer */
            variant = posix;
        const shmb_row_t *src =
            variant ? shmb_rows_find(all, variant, steps[i].from, size_kb, cfg->repetition) : NULL;
        shmb_row_t row = src ? *src : shmb_alloc_row(cfg, "", size_kb);
        row.variant[0] = '\0';
        row.speedup = 0;
        snprintf(row.step, sizeof(row.step), "%s", steps[i].step);
        ret = shmb_rows_push(rows, &row);
    }
    return ret;
}

/* Says which allocator of which size starts: step *at of the plan. */
static void progress_step(const shmb_alloc_config_t *cfg, uint64_t *at, shmb_alloc_kind_t kind, uint64_t size_kb)
{
    char label[64];
    snprintf(label, sizeof(label), "%s %llu KB", shmb_alloc_kind_name(kind), (unsigned long long)size_kb);
    shmb_progress_step(cfg->progress, (*at)++, label);
}

static int run_size(const shmb_alloc_run_t *run, uint64_t size_kb, uint64_t *at)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    int ret = 0;
    /* a system's register rows are register_rows'; posix's own rows then serve only the peer's */
    if (cfg->run[SHMB_ALLOC_POSIX] && (!cfg->system_rows || cfg->peer)) {
        progress_step(cfg, at, SHMB_ALLOC_POSIX, size_kb);
        ret = shmb_alloc_posix_size(run, size_kb);
    }
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS && ret == 0; k++) {
        if (!cfg->run[k])
            continue;
        progress_step(cfg, at, (shmb_alloc_kind_t)k, size_kb);
        ret = shmb_alloc_pool_size(run, (shmb_alloc_kind_t)k, size_kb);
    }
    if (cfg->upstream && ret == 0) {
        progress_step(cfg, at, SHMB_ALLOC_UPSTREAM_BARE, size_kb);
        ret = shmb_alloc_pool_size(run, SHMB_ALLOC_UPSTREAM_BARE, size_kb);
    }
    if (ret == 0)
        set_speedups(run->rows, cfg, size_kb);
    return ret;
}

/* How many allocators run[] asks for. */
static int run_kinds(const shmb_alloc_config_t *cfg)
{
    int kinds = 0;
    for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
        kinds += cfg->run[k] != 0;
    return kinds;
}

/* Is the configuration one shmb_alloc_bench_run accepts? */
static int config_ok(const shmb_alloc_config_t *cfg, int nsizes)
{
    const int kinds = run_kinds(cfg);
    return nsizes >= 0 && shmb_alloc_counts_ok(cfg) &&
           (cfg->upstream ? cfg->system_rows && kinds == 0 && shmb_upstream_available()
                          : kinds > 0 &&
                                (!cfg->system_rows || kinds == cfg->run[SHMB_ALLOC_POSIX] || run_system(cfg) >= 0)) &&
           cfg->threads >= 0 && cfg->threads <= SHMB_ALLOC_MAX_THREADS &&
           (!cfg->peer || (cfg->threads <= 1 && !cfg->measure_mmap_only)) && arena_fits(cfg) &&
           (!cfg->peer || shmb_alloc_rounds(cfg) <= SHMB_ALLOC_PEER_MAX_ROUNDS);
}

int shmb_alloc_bench_run_hooked(const shmb_alloc_config_t *cfg, const shmb_alloc_hook_t *hook,
                                shmb_rows_t *rows, uint64_t *kept, char *why, size_t why_cap)
{
    shmb_alloc_run_t run = {.cfg = cfg, .hook = hook, .rows = rows, .kept = kept, .why = why, .why_cap = why_cap};
    if (cfg->nsystems)
        return shmb_alloc_paired_run(&run);
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES];
    int nsizes = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes, SHMB_ALLOC_MAX_SIZES);
    if (!config_ok(cfg, nsizes))
        return -EINVAL;
    int ret = 0;
    const int kinds = run_kinds(cfg) + (cfg->upstream != 0) -
                      (cfg->run[SHMB_ALLOC_POSIX] && cfg->system_rows && !cfg->peer); /* run_size skips it */
    shmb_progress_plan(cfg->progress, (uint64_t)nsizes * (uint64_t)kinds);
    uint64_t at = 0;
    for (int i = 0; i < nsizes && ret == 0; i++) {
        run.rows = rows;
        if (!cfg->system_rows) {
            ret = run_size(&run, sizes[i], &at);
            continue;
        }
        shmb_rows_t all = {0};
        run.rows = &all;
        ret = run_size(&run, sizes[i], &at);
        if (ret == 0)
            ret = system_rows(cfg, sizes[i], &all, rows);
        shmb_rows_free(&all);
    }
    return ret;
}

int shmb_alloc_bench_run(const shmb_alloc_config_t *cfg, shmb_rows_t *rows, uint64_t *kept, char *why,
                         size_t why_cap)
{
    return shmb_alloc_bench_run_hooked(cfg, NULL, rows, kept, why, why_cap);
}
