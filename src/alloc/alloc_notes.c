/* The notes of shm_allocation_bench's table, worded for the mode the run
 * selects; a change of wording is a change of the output a user diffs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc_internal.h"
#include "base/notes_internal.h"
#include "shmbench/copy.h"
#include "shmbench/paired.h"
#include "shmbench/sysinfo.h"
#include "shmbench/upstream.h"
#include "shmbench/upstream_flowipc.h"

_Static_assert(SHMB_ALLOC_MAX_THREADS <= SHMB_NOTES_MAX_THREADS, "alloc threads exceed the CPU list");

static void alloc_peer(shmb_notes_lines_t *l)
{
    shmb_notes_add(l, "peer_process: attach, detach and translate were measured in a second process, the rest here; "
           "after each posix allocation (and touch) this process wrote a tag at the segment's first byte "
           "(untimed), the peer attached it by name (attach = shm_open O_RDWR + fstat size check + mmap), "
           "read the tag, detached it (detach = munmap + close), then this process cleaned it up");
    shmb_notes_add(l, "peer_process pools (bipc, jemalloc): after round 0's alloc this process tagged every block and "
           "sent its handle (bipc offset; jemalloc pool id + offset) and the pool names; the peer attached "
           "a pool on the first handle naming it (attach: one sample per pool, bipc shm_open O_RDWR + fstat "
           "+ mmap, jemalloc shm_open O_RDONLY + mmap + repository insert), checked every block's tag "
           "through its translation, then timed translate (batch means, ns per handle; jemalloc: "
           "to_address under the repository mutex); speedup of translate = posix attach p50 / its p50; "
           "arena: no peer rows (one process by design); offset: none of its own (Mooncake's receiver opens the "
           "registered buffer: posix attach); detach of pools untimed");
}

/* What posix's rows are, and what each row's speedup divides. */
static void alloc_posix(shmb_notes_lines_t *l, const shmb_alloc_config_t *cfg)
{
    if (cfg->system_rows) {
        shmb_notes_add(l, "rows of the system: register/size_kb:S/buffers:N = making N blocks of S KB usable, whole "
               "(mooncake: N buffers, each createSharedMemory = shm_open + ftruncate + mmap + close, all live; "
               "flowipc_classic: one pool of N blocks; flowipc_jemalloc: its arena and N mallocx, with the SHM "
               "pools its extent hooks make for them), undone untimed; alloc, free, alloc_reuse: an object "
               "inside registered memory with its handle (the object layer); alloc_bare, free_bare: the bare "
               "allocator under it; - = a step this system does not have");
    } else if (cfg->measure_mmap_only) {
        shmb_notes_add(l, "posix (--measure_mmap_only): one segment per size, shm_open and ftruncate untimed; mmap = "
               "mmap of it, cleanup = munmap of it, timed one by one; no shm_open, ftruncate, close or "
               "shm_unlink is timed");
        shmb_notes_add(l, "speedup = Mooncake's p50 / the row's p50: alloc, free, alloc_reuse, touch, touch_reuse "
               "against the same step of Mooncake's like (the object layers against offset, the allocators and "
               "the arena against offset_bare); register against posix mmap alone (not createSharedMemory)");
    } else {
        shmb_notes_add(l, "posix (Mooncake's registration cost, paid once per registered buffer, never per block: "
               "createSharedMemory): total = shm_open + ftruncate + mmap + close; cleanup = munmap + "
               "shm_unlink; one buffer alive at a time");
        shmb_notes_add(l, "speedup = Mooncake's p50 / the row's p50: alloc, free, alloc_reuse, touch, touch_reuse "
               "(per block) against the same step of Mooncake's like (the object layers bipc_object, "
               "jemalloc_object against offset; the allocators bipc, jemalloc, jemalloc_tcache and the arena "
               "against offset_bare); register (per pool) against posix total; attach, translate against posix "
               "attach");
    }
}

/* Mooncake Store's per-block path, as offset models it. */
#define OFFSET_PATH                                                                                               \
    "Mooncake Store's OffsetBufferAllocator::allocate / deallocate over OffsetAllocator (its bins, node pool "    \
    "and mutex) in one SHM segment made as createSharedMemory makes it; on top of the bare OffsetAllocator each " \
    "call adds the handle's weak_ptr (shared_from_this), the AllocatedBuffer (make_unique), the cur_size_ "     \
    "atomic and the master's allocated-bytes gauges (global and per segment); upstream runs it in the master "   \
    "service, the RPC by which a client's put reaches it is not modelled; free finds a block's handle by its "  \
    "address (a shift and a load: the table frees by address, upstream's caller holds the handle)"

/* A system's block allocator, under the same key for every system so that
 * their headers pair; NULL for a kind that places no blocks. */
static const char *blocks_of(shmb_alloc_kind_t kind)
{
    switch (kind) {
    case SHMB_ALLOC_OFFSET:
        return "alloc, free: offset, " OFFSET_PATH;
    case SHMB_ALLOC_BIPC:
        return "alloc, free: bipc, boost.interprocess rbtree_best_fit allocate / deallocate under the pool's "
               "mutex in the one SHM pool (Flow-IPC SHM-classic)";
    case SHMB_ALLOC_JEMALLOC:
    case SHMB_ALLOC_JEMALLOC_TCACHE:
        return "alloc, free: jemalloc, mallocx / dallocx in a jemalloc arena whose extents are SHM pools "
               "(Flow-IPC SHM-jemalloc)";
    case SHMB_ALLOC_OFFSET_BARE:
        return "alloc, free: offset_bare, Mooncake Store's OffsetAllocator::allocate and its handle's "
               "destructor (freeAllocation) alone: the hint, mutex, bins and node pool, without "
               "OffsetBufferAllocator's AllocatedBuffer, size counter and metrics";
    case SHMB_ALLOC_BIPC_OBJECT:
        return "alloc, free: bipc_object, Flow-IPC SHM-classic's Pool_arena::construct: the object and its "
               "owner count in the pool (rbtree_best_fit under the pool's mutex), a boost::shared_ptr with a "
               "heap control block whose deleter deallocates; free = the last handle dropped";
    case SHMB_ALLOC_JEMALLOC_OBJECT:
        return "alloc, free: jemalloc_object, Flow-IPC SHM-jemalloc's Ipc_arena::construct: mallocx in the "
               "arena, a std::shared_ptr with a heap control block whose deleter (holding the arena) runs "
               "dallocx; free = the last handle dropped";
    default:
        return NULL;
    }
}

/* Is kind a system's bare allocator (its rows alloc_bare, free_bare with
 * --system and --systems)? */
static int bare_layer(int kind)
{
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        if (shmb_alloc_system_layers[s].bare == (shmb_alloc_kind_t)kind)
            return 1;
    return 0;
}

/* With a system or systems: the object layers' lines ("alloc, free: ..."),
 * then the bare allocators' under their rows' key ("alloc_bare, free_bare:
 * ..."), so that two systems' headers pair line by line. */
static void layer_blocks(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    static const char key[] = "alloc, free: ";
    int any = 0;
    for (int bare = 0; bare < 2; bare++) {
        for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
            const char *text = blocks_of((shmb_alloc_kind_t)k);
            if (!cfg->run[k] || !text || bare_layer(k) != bare)
                continue;
            any = 1;
            if (!bare) {
                shmb_notes_add(l, text);
                continue;
            }
            const size_t at = s->used;
            shmb_notes_put(s, "alloc_bare, free_bare: %s", text + sizeof(key) - 1);
            shmb_notes_add(l, shmb_notes_end(s, at));
        }
    }
    if (!any)
        shmb_notes_add(l, "alloc, free: none (a buffer per registration alone)");
}

/* A paired allocation run: its systems, rounds and what each slice is. */
static void alloc_paired(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    uint64_t block, reg[SHMB_ALLOC_REGISTER_COUNTS];
    shmb_alloc_bench_paired_rounds(cfg, &block, reg);
    shmb_notes_paired_lines(l, s, cfg->system_names, cfg->nsystems,
                 "an independent second instance of the baseline's allocators (its own buffers, its own pool)");
    size_t at = s->used;
    shmb_notes_put(s, "rounds of register: %llu, %llu, %llu for buffers:%llu, %llu, %llu; each system one deployment total "
           "per round, undone untimed after it (mooncake N buffers' createSharedMemory = shm_open + ftruncate + "
           "mmap + close, all live; flowipc_classic one pool of N blocks; flowipc_jemalloc its arena and N "
           "mallocx with the pools its hooks make)",
        (unsigned long long)reg[0], (unsigned long long)reg[1], (unsigned long long)reg[2],
        (unsigned long long)shmb_alloc_register_buffers[0], (unsigned long long)shmb_alloc_register_buffers[1],
        (unsigned long long)shmb_alloc_register_buffers[2]);
    shmb_notes_add(l, shmb_notes_end(s, at));
    at = s->used;
    shmb_notes_put(s, "rounds of alloc, free, alloc_reuse and of alloc_bare, free_bare: %llu; each system one round of %llu "
           "blocks per round (a batch of each step, ns per op), the same block size and free order (--seed) for "
           "every system; each pool's round-0 blocks checked inside its SHM and not overlapping (objects: each "
           "its handle's, one owner; after the free batch each freed once) before any figure counts; every pool "
           "destroyed before the next size",
        (unsigned long long)block, (unsigned long long)shmb_alloc_bench_working_set(cfg));
    shmb_notes_add(l, shmb_notes_end(s, at));
    layer_blocks(l, s, cfg);
}

/* What the pools are (offset's path in full), and what register times. */
static void alloc_pools(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    if (cfg->system_rows)
        layer_blocks(l, s, cfg);
    else
        shmb_notes_add(l, cfg->run[SHMB_ALLOC_OFFSET]
                   ? "pools: offset (system: mooncake, below; offset_bare: its OffsetAllocator alone), bipc "
                     "(system: flowipc_classic's allocator; bipc_object: its Pool_arena::construct, the object and "
                     "its boost::shared_ptr), jemalloc (system: flowipc_jemalloc's allocator; jemalloc_object: its "
                     "Ipc_arena::construct, the object and its std::shared_ptr; jemalloc_tcache: its thread-cached "
                     "variant), arena (kernel: an ideal lock-free pool in one process, a reference point, not a "
                     "lower bound)"
                   : "pools: bipc (system: flowipc_classic's allocator; bipc_object: its Pool_arena::construct, the "
                     "object and its boost::shared_ptr), jemalloc (system: flowipc_jemalloc's allocator; "
                     "jemalloc_object: its Ipc_arena::construct, the object and its std::shared_ptr; "
                     "jemalloc_tcache: its thread-cached variant), offset_bare (Mooncake's OffsetAllocator alone), "
                     "arena (kernel: an ideal lock-free pool in one process, a reference point, not a lower bound)");
    if (!cfg->system_rows && cfg->run[SHMB_ALLOC_OFFSET])
        shmb_notes_add(l, "offset (system: mooncake): " OFFSET_PATH);
#define POOLS_REGISTER                                                                                            \
    "pools: register = one pool per size created and mapped, timed once (offset: the segment and the "             \
    "allocator's setup; jemalloc: its arena, its SHM pools made per extent inside alloc); "
#define POOLS_STEPS                                                                                               \
    "alloc, free, alloc_reuse, touch_reuse are batch means (ns per op) over rounds; every block checked inside "   \
    "its SHM and not overlapping before any figure counts (offset: also by its allocator, every block live and "   \
    "counted; offset_bare and the object layers: each block its handle's; the object layers: one owner, and "     \
    "after round 0's free batch each object freed once by its deleter)"
#define POOLS_TOUCH                                                                                               \
    "; touch: one byte per page of each fresh block, timed block by block; the pages already in memory before it " \
    "(mincore, untimed: the allocator wrote in them, e.g. bipc's block header, or a neighbour's touch did) are "   \
    "counted on the row, which is then no first touch and has no speedup"
#define POOLS_SHORT                                                                                               \
    "; a working set under 2048 blocks makes short batches: each carries the header's timer overhead, that "      \
    "divided by the working set per op"
    const int short_batches = shmb_alloc_bench_working_set(cfg) < SHMB_ALLOC_ARENA_MIN_BATCH;
    const size_t at = s->used;
    shmb_notes_put(s, "%s%s%s%s", cfg->system_rows ? "pools: " : POOLS_REGISTER, POOLS_STEPS, cfg->touch ? POOLS_TOUCH : "",
        short_batches ? POOLS_SHORT : "");
    shmb_notes_add(l, shmb_notes_end(s, at));
#undef POOLS_REGISTER
#undef POOLS_SHORT
#undef POOLS_TOUCH
#undef POOLS_STEPS
}

/* jemalloc 5.3's thread cache sizing (src/tcache.c, tcache_ncached_max_compute): a small class
 * caches nregs << lg_tcache_nslots_mul, even, clamped to [nslots_small_min, nslots_small_max]; a
 * large one up to arenas.tcache_max opt.tcache_nslots_large; above, none. */
static int tcache_setting(const char *name, uint64_t *out)
{
    int64_t v;
    int ret = shmb_fipc_jemalloc_setting(name, &v);
    if (ret < 0)
        return shmb_error_record("mallctl", -ret, name);
    *out = v < 0 ? 0 : (uint64_t)v;
    return 0;
}

static uint64_t even_up(uint64_t n)
{
    return n + n % 2;
}

/* The small class's slots: nregs scaled, clamped as jemalloc clamps it. */
static int tcache_small_slots(uint64_t nregs, uint64_t *slots)
{
    uint64_t lo = 0, hi = 0;
    int64_t mul = 0;
    int ret = tcache_setting("opt.tcache_nslots_small_min", &lo);
    if (ret == 0)
        ret = tcache_setting("opt.tcache_nslots_small_max", &hi);
    if (ret == 0 && (ret = shmb_fipc_jemalloc_setting("opt.lg_tcache_nslots_mul", &mul)) < 0)
        return shmb_error_record("mallctl", -ret, "opt.lg_tcache_nslots_mul");
    if (ret < 0)
        return ret;
    lo = even_up(lo) < 2 ? 2 : even_up(lo);
    hi = hi - hi % 2 < 2 ? 2 : hi - hi % 2;
    lo = lo > hi ? hi : lo;
    const uint64_t want = even_up(mul < 0 ? nregs >> (-mul < 63 ? -mul : 63) : nregs << (mul < 32 ? mul : 32));
    *slots = want <= lo ? lo : want <= hi ? want : hi;
    return 0;
}

int shmb_alloc_tcache_reach(uint64_t bytes, uint64_t *max_bytes, uint64_t *slots)
{
    uint64_t max = 0, nbins = 0, size = 0, nregs = 0;
    int ret = tcache_setting("arenas.tcache_max", &max);
    if (ret == 0)
        ret = tcache_setting("arenas.nbins", &nbins);
    char name[64];
    for (uint64_t i = 0; ret == 0 && i < nbins && size < bytes; i++) {
        snprintf(name, sizeof(name), "arenas.bin.%llu.size", (unsigned long long)i);
        if ((ret = tcache_setting(name, &size)) == 0 && size >= bytes) {
            snprintf(name, sizeof(name), "arenas.bin.%llu.nregs", (unsigned long long)i);
            ret = tcache_setting(name, &nregs);
        }
    }
    uint64_t n = 0;
    if (ret == 0 && bytes <= max)
        ret = nregs ? tcache_small_slots(nregs, &n) : tcache_setting("opt.tcache_nslots_large", &n);
    if (ret < 0)
        return ret;
    *max_bytes = max;
    *slots = n;
    return 0;
}

/* When jemalloc's thread cache can serve: its limits read at run time, per
 * size of the run, against the working set. Returns 0 or -errno (mallctl). */
static int alloc_tcache(shmb_notes_lines_t *l, shmb_notes_t *store, const shmb_alloc_config_t *cfg)
{
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES], max = 0, slots = 0;
    const int n = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes, SHMB_ALLOC_MAX_SIZES);
    const uint64_t ws = shmb_alloc_bench_working_set(cfg);
    int ret = shmb_alloc_tcache_reach(1, &max, &slots), fits = 0;
    if (ret < 0)
        return ret;
    const size_t at = store->used;
    shmb_notes_put(store, "jemalloc_tcache: the thread cache holds sizes <= %llu KiB (arenas.tcache_max), blocks per size "
               "class (arenas.bin.N.nregs, opt.tcache_nslots_*):", (unsigned long long)(max / 1024));
    for (int i = 0; i < n && ret == 0; i++) {
        if ((ret = shmb_alloc_tcache_reach(sizes[i] * 1024, &max, &slots)) < 0)
            break;
        shmb_notes_put(store, "%s %llu KB %llu", i ? "," : "", (unsigned long long)sizes[i], (unsigned long long)slots);
        fits += ws <= slots;
    }
    if (ret < 0) {
        store->used = at;
        return ret;
    }
    if (fits == 0)
        shmb_notes_put(store, "; a working set of %llu exceeds it at every size, so most calls reach the arena",
            (unsigned long long)ws);
    else if (fits == n)
        shmb_notes_put(store, "; a working set of %llu fits it at every size: the cache can serve the calls",
            (unsigned long long)ws);
    else
        shmb_notes_put(store, "; a working set of %llu fits it where it holds %llu or more (the cache can serve the calls "
                   "there) and exceeds it elsewhere (most calls reach the arena)",
            (unsigned long long)ws, (unsigned long long)ws);
    shmb_notes_add(l, shmb_notes_end(store, at));
    return 0;
}

/* When the pools time more than asked: a count (min_ops, or num_iterations
 * given alone) below one round of the working set still times that round,
 * because a shorter batch of the arena's operations lasts under 100 timer
 * overheads. A paired run's fewest rounds are SHMB_PAIRED_MIN_ROUNDS. */
static void alloc_count(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    const uint64_t ws = shmb_alloc_bench_working_set(cfg), rounds = shmb_alloc_rounds(cfg);
    int pools = cfg->nsystems > 0;
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++)
        pools |= cfg->run[k];
    const size_t at = s->used;
    if (pools && cfg->min_ops < ws)
        shmb_notes_put(s, "count: %llu operations per pool step asked; a batch is the working set of %llu blocks (a shorter "
               "one lasts under 100x the timer overhead), so each step times %s",
            (unsigned long long)cfg->min_ops, (unsigned long long)ws,
            cfg->nsystems ? "one batch per round" : "1 batch of it: too few for percentiles");
    if (cfg->nsystems && cfg->count_given && rounds < SHMB_PAIRED_MIN_ROUNDS)
        shmb_notes_put(s, "%sthe count asks for %llu rounds of alloc, free, alloc_reuse: %d at least, the fewest with a 95%% "
               "interval", s->used > at ? "; " : "count: ", (unsigned long long)rounds, SHMB_PAIRED_MIN_ROUNDS);
    if (s->used > at)
        shmb_notes_add(l, shmb_notes_end(s, at));
}

/* Whether the paired run lists system. */
static int lists(const shmb_alloc_config_t *cfg, int system)
{
    for (size_t i = 0; i < cfg->nsystems; i++)
        if (cfg->systems[i] == system)
            return 1;
    return 0;
}

/* The Mooncake commit whose code the mooncake_upstream rows ran; none when none ran. */
static void alloc_upstream(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    if (!cfg->upstream && !lists(cfg, SHMB_SYSTEM_MOONCAKE_UPSTREAM))
        return;
    const size_t at = s->used;
    shmb_notes_put(s, "mooncake_upstream: Mooncake's own OffsetAllocator (alloc_bare, free_bare; its other rows not "
                      "covered), compiled from commit %s (docs/upstream.md)", shmb_upstream_commit());
    shmb_notes_add(l, shmb_notes_end(s, at));
}

/* The Flow-IPC commits whose Pool_arena the flowipc_classic_upstream rows ran. */
static void alloc_upstream_flowipc(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    if (!lists(cfg, SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM))
        return;
    const size_t at = s->used;
    shmb_notes_put(s, "flowipc_classic_upstream: Flow-IPC's own ipc::shm::classic::Pool_arena (alloc_bare: allocate, "
                      "free_bare: deallocate, over the SHM pool it creates, the size of bipc's; its other rows not "
                      "covered; Boost 1.81, Flow's logging stood in for by a logger that never logs), compiled from "
                      "%s (docs/upstream.md)", shmb_upstream_flowipc_commits());
    shmb_notes_add(l, shmb_notes_end(s, at));
}

int shmb_notes_alloc(shmb_report_t *report, shmb_notes_t *store, const shmb_alloc_config_t *cfg)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    if (cfg->nsystems) {
        alloc_paired(&l, store, cfg);
        alloc_count(&l, store, cfg);
        alloc_upstream(&l, store, cfg);
        alloc_upstream_flowipc(&l, store, cfg);
        return shmb_notes_publish(report, &l, store, start);
    }
    if (cfg->peer)
        alloc_peer(&l);
    alloc_posix(&l, cfg);
    alloc_pools(&l, store, cfg);
    alloc_count(&l, store, cfg);
    if (cfg->run[SHMB_ALLOC_JEMALLOC_TCACHE]) {
        int ret = alloc_tcache(&l, store, cfg);
        if (ret < 0) {
            store->used = start;
            return ret;
        }
    }
    if (cfg->threads > 1) {
        const size_t at = store->used;
        shmb_notes_put(store, "threads: %d at once per allocator and size, ", cfg->threads);
        int ret = shmb_notes_put_cpus(store, cfg->threads, cfg->cpu);
        if (ret < 0) {
            store->used = start;
            return ret;
        }
        shmb_notes_put(store, "; a barrier starts every timed phase");
        shmb_notes_add(&l, shmb_notes_end(store, at));
        shmb_notes_add(&l, "threads: ns = per thread per op (percentiles over every thread's samples), iterations = "
                "all threads' ops; ops_per_s = all threads' ops / wall time of the phases (posix: on total, "
                "touch, cleanup only); posix: own segments per thread; offset, bipc, jemalloc, jemalloc_tcache: ONE "
                "pool shared by all (jemalloc_tcache: a tcache per thread); arena: one arena per thread (no "
                "sharing)");
    }
    alloc_upstream(&l, store, cfg);
    return shmb_notes_publish(report, &l, store, start);
}

int shmb_notes_alloc_ready(shmb_report_t *report, shmb_notes_t *store, uint64_t grow_block_kb,
                           const char *const *limits, size_t nlimits)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    shmb_notes_add(&l, "ready: ns per pool from create to prefaulted; note: GB/s = pool / p50, then the first "
                       "pool's page faults and its share resident and mapped by huge pages after it (smaps), "
                       "verified through a second mapping; none only maps, fallocate allocates the pages but maps "
                       "none (the first touches still fault, as minor faults)");
    for (size_t i = 0; i < nlimits; i++)
        shmb_notes_add(&l, limits[i]);
    if (grow_block_kb) {
        shmb_notes_put(store,
                       "grow: ns to reach pool_mb of live bytes, each 4 KiB page written once: mooncake one "
                       "segment (shm_open + ftruncate + mmap); flowipc_jemalloc blocks of %llu KB from the "
                       "SHM-jemalloc model, a new SHM pool per extent jemalloc asks; note: pools made, their "
                       "mappings (/proc/self/maps), page faults (getrusage), counted with everything live",
                       (unsigned long long)grow_block_kb);
        shmb_notes_add(&l, shmb_notes_end(store, start));
    }
    return shmb_notes_publish(report, &l, store, start);
}

int shmb_notes_alloc_space(shmb_report_t *report, shmb_notes_t *store)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    shmb_notes_add(&l, "space: Mooncake Store's KV mix (4 KiB 70%, 256 KiB 20%, 3,274,752 B 10%, seeded) into one "
                       "pool of --pool_mb; util = requested bytes live / pool at the first failed allocation");
    shmb_notes_put(store, "space: churn %d rounds, each frees %d%% of the live blocks (seeded shuffle) and allocates "
                          "until a failure; frag = 1 - largest free / total free after it",
                   SHMB_ALLOC_SPACE_ROUNDS, SHMB_ALLOC_SPACE_FREE_PERCENT);
    shmb_notes_add(&l, shmb_notes_end(store, start));
    shmb_notes_add(&l, "space: offset = OffsetBufferAllocator, largest from its storageReport (bin size, rounded "
                       "down); bipc = rbtree_best_fit, free from get_free_memory, largest by a binary-search probe "
                       "(freed at once)");
    shmb_notes_add(&l, "space: jemalloc maps SHM pools as it grows: an allocation fails when it maps past --pool_mb; "
                       "frag '-': no free space of a fixed pool to report; its churn refills up to the live bytes "
                       "of its fill");
    shmb_notes_add(&l, "space_alloc: ns of each allocation, timed alone (one clock read included); space_free: ns "
                       "per free of each round's batch; every live set checked (inside, disjoint, the pool's own "
                       "check)");
    return shmb_notes_publish(report, &l, store, start);
}
