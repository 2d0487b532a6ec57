/* The notes of each binary's table: what its rows measured and how, worded
 * for the mode the run's configuration selects. The mains print them as they
 * come; a change of wording here is a change of the output a user diffs. */
#include "shmbench/notes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "alloc/alloc_internal.h"
#include "lookup/lookup_internal.h"
#include "transfer/transfer_internal.h"
#include "shmbench/copy.h"
#include "shmbench/paired.h"
#include "shmbench/sysinfo.h"

/* report->notes holds this many notes and their NULL. */
#define NOTES_CAP (sizeof(((shmb_report_t *)0)->notes) / sizeof(const char *) - 1)

/* The most threads any binary runs: the CPU list of a threads note. */
#define MAX_THREADS 256
_Static_assert(SHMB_ALLOC_MAX_THREADS <= MAX_THREADS, "alloc threads exceed the CPU list");
_Static_assert(SHMB_LOOKUP_MAX_THREADS <= MAX_THREADS, "lookup threads exceed the CPU list");

/* The notes of one report as they are added; full once one does not fit. */
typedef struct lines {
    const char *v[NOTES_CAP];
    size_t n;
    int full;
} lines_t;

/* note NULL: its text did not fit in the store. */
static void add(lines_t *l, const char *note)
{
    if (!note || l->n == NOTES_CAP)
        l->full = 1;
    else
        l->v[l->n++] = note;
}

static int publish(shmb_report_t *report, const lines_t *l)
{
    if (l->full)
        return -EOVERFLOW;
    for (size_t i = 0; i <= NOTES_CAP; i++)
        report->notes[i] = i < l->n ? l->v[i] : NULL;
    return (int)l->n;
}

/* Appends printf-style text to the note being composed; a store that
 * overflows stays full (used = its size) until the note ends. */
static void put(shmb_notes_t *s, const char *fmt, ...)
{
    const size_t room = sizeof(s->text) - s->used;
    if (s->used >= sizeof(s->text))
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(s->text + s->used, room, fmt, ap);
    va_end(ap);
    s->used = (w < 0 || (size_t)w >= room) ? sizeof(s->text) : s->used + (size_t)w;
}

/* Ends the note begun at `start`: returns it, or NULL (the store unchanged)
 * when it did not fit. */
static const char *end(shmb_notes_t *s, size_t start)
{
    if (s->used >= sizeof(s->text)) {
        s->used = start;
        return NULL;
    }
    s->text[s->used++] = '\0';
    return s->text + start;
}

/* "pinned to CPUs 0,1" or why not: where `threads` threads from `cpu` on run. */
static int put_cpus(shmb_notes_t *s, int threads, int cpu)
{
    int cpus[MAX_THREADS];
    if (threads > MAX_THREADS)
        return -EOVERFLOW;
    int pinned = shmb_sysinfo_plan_cpus(cpu, threads, cpus);
    if (pinned < 0)
        return pinned;
    if (!pinned) {
        put(s, "not pinned (more threads than allowed CPUs)");
        return 0;
    }
    put(s, "pinned to CPUs ");
    for (int i = 0; i < threads; i++)
        put(s, "%s%d", i ? "," : "", cpus[i]);
    return 0;
}

/* A paired run's common lines (shmbench/paired.h): its systems, baseline
 * and control, its order and what the ratio rows mean; `control_is`
 * says what the control instance is. Composed into s. */
static void paired_lines(lines_t *l, shmb_notes_t *s, const char *const *names, size_t nsys, const char *control_is)
{
    size_t at = s->used;
    put(s, "paired run (--systems): ");
    for (size_t i = 0; i < nsys; i++)
        put(s, "%s%s", i ? ", " : "", names[i]);
    put(s, " measured in one run, round by round, each round every system once");
    add(l, end(s, at));
    at = s->used;
    put(s, "baseline: %s; control: %s, %s: identical code, so its ratio is this run's noise", names[0],
        names[nsys - 1], control_is);
    add(l, end(s, at));
    add(l, "order: each round runs every system once, in a row of a Williams square over the listed systems "
           "(the control listed last): over 2 x systems rounds each system runs at each position, and right "
           "after each other one, equally often; each round gives one sample per system");
    add(l, "rows /system:NAME: that system's samples, one per round; rows /system:NAME/vs:BASELINE: the "
           "median over rounds of baseline / system in the speedup column (above 1 the system is faster), "
           "its 95% interval (sign test's order statistics) and verdict in the note, the ns columns the "
           "per-round saved ns (baseline - system; p50 the median saving), iterations the rounds");
    add(l, "verdict: faster or slower by 5% or more; no practical difference (interval off 1, change under "
           "5%); within the noise (interval holds 1 or lies inside the control's); too noisy (the control "
           "itself off by 5% or more: no verdict, rerun quieter, e.g. pinned with --cpu on an idle machine); not "
           "assessed (fewer than 6 rounds: no interval)");
}

static void alloc_peer(lines_t *l)
{
    add(l, "peer_process: attach, detach and translate were measured in a second process, the rest here; "
           "after each posix allocation (and touch) this process wrote a tag at the segment's first byte "
           "(untimed), the peer attached it by name (attach = shm_open O_RDWR + fstat size check + mmap), "
           "read the tag, detached it (detach = munmap + close), then this process cleaned it up");
    add(l, "peer_process pools (bipc, jemalloc): after round 0's alloc this process tagged every block and "
           "sent its handle (bipc offset; jemalloc pool id + offset) and the pool names; the peer attached "
           "a pool on the first handle naming it (attach: one sample per pool, bipc shm_open O_RDWR + fstat "
           "+ mmap, jemalloc shm_open O_RDONLY + mmap + repository insert), checked every block's tag "
           "through its translation, then timed translate (batch means, ns per handle; jemalloc: "
           "to_address under the repository mutex); speedup of translate = posix attach p50 / its p50; "
           "arena: no peer rows (one process by design); offset: none of its own (Mooncake's receiver opens the "
           "registered buffer: posix attach); detach of pools untimed");
}

/* What posix's rows are, and what each row's speedup divides. */
static void alloc_posix(lines_t *l, const shmb_alloc_config_t *cfg)
{
    if (cfg->system_rows) {
        add(l, "rows of the system: register/size_kb:S/buffers:N = making N blocks of S KB usable, whole "
               "(mooncake: N buffers, each createSharedMemory = shm_open + ftruncate + mmap + close, all live; "
               "flowipc_classic: one pool of N blocks; flowipc_jemalloc: its arena and N mallocx, with the SHM "
               "pools its extent hooks make for them), undone untimed; alloc, free, alloc_reuse: an object "
               "inside registered memory with its handle (the object layer); alloc_bare, free_bare: the bare "
               "allocator under it; - = a step this system does not have");
    } else if (cfg->measure_mmap_only) {
        add(l, "posix (--measure_mmap_only): one segment per size, shm_open and ftruncate untimed; mmap = "
               "mmap of it, cleanup = munmap of it, timed one by one; no shm_open, ftruncate, close or "
               "shm_unlink is timed");
        add(l, "speedup = Mooncake's p50 / the row's p50: alloc, free, alloc_reuse, touch, touch_reuse "
               "against the same step of Mooncake's like (the object layers against offset, the allocators and "
               "the arena against offset_bare); register against posix mmap alone (not createSharedMemory)");
    } else {
        add(l, "posix (Mooncake's registration cost, paid once per registered buffer, never per block: "
               "createSharedMemory): total = shm_open + ftruncate + mmap + close; cleanup = munmap + "
               "shm_unlink; one buffer alive at a time");
        add(l, "speedup = Mooncake's p50 / the row's p50: alloc, free, alloc_reuse, touch, touch_reuse "
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
    return kind == SHMB_ALLOC_OFFSET_BARE || kind == SHMB_ALLOC_BIPC || kind == SHMB_ALLOC_JEMALLOC;
}

/* With a system or systems: the object layers' lines ("alloc, free: ..."),
 * then the bare allocators' under their rows' key ("alloc_bare, free_bare:
 * ..."), so that two systems' headers pair line by line. */
static void layer_blocks(lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
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
                add(l, text);
                continue;
            }
            const size_t at = s->used;
            put(s, "alloc_bare, free_bare: %s", text + sizeof(key) - 1);
            add(l, end(s, at));
        }
    }
    if (!any)
        add(l, "alloc, free: none (a buffer per registration alone)");
}

/* A paired allocation run: its systems, rounds and what each slice is. */
static void alloc_paired(lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    uint64_t block, reg[SHMB_ALLOC_REGISTER_COUNTS];
    shmb_alloc_bench_paired_rounds(cfg, &block, reg);
    paired_lines(l, s, cfg->system_names, cfg->nsystems,
                 "an independent second instance of the baseline's allocators (its own buffers, its own pool)");
    size_t at = s->used;
    put(s, "rounds of register: %llu, %llu, %llu for buffers:%llu, %llu, %llu; each system one deployment total "
           "per round, undone untimed after it (mooncake N buffers' createSharedMemory = shm_open + ftruncate + "
           "mmap + close, all live; flowipc_classic one pool of N blocks; flowipc_jemalloc its arena and N "
           "mallocx with the pools its hooks make)",
        (unsigned long long)reg[0], (unsigned long long)reg[1], (unsigned long long)reg[2],
        (unsigned long long)shmb_alloc_register_buffers[0], (unsigned long long)shmb_alloc_register_buffers[1],
        (unsigned long long)shmb_alloc_register_buffers[2]);
    add(l, end(s, at));
    at = s->used;
    put(s, "rounds of alloc, free, alloc_reuse and of alloc_bare, free_bare: %llu; each system one round of %llu "
           "blocks per round (a batch of each step, ns per op), the same block size and free order (--seed) for "
           "every system; each pool's round-0 blocks checked inside its SHM and not overlapping (objects: each "
           "its handle's, one owner; after the free batch each freed once) before any figure counts; every pool "
           "destroyed before the next size",
        (unsigned long long)block, (unsigned long long)shmb_alloc_bench_working_set(cfg));
    add(l, end(s, at));
    layer_blocks(l, s, cfg);
}

/* What the pools are (offset's path in full), and what register times. */
static void alloc_pools(lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    if (cfg->system_rows)
        layer_blocks(l, s, cfg);
    else
        add(l, cfg->run[SHMB_ALLOC_OFFSET]
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
        add(l, "offset (system: mooncake): " OFFSET_PATH);
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
    put(s, "%s%s%s%s", cfg->system_rows ? "pools: " : POOLS_REGISTER, POOLS_STEPS, cfg->touch ? POOLS_TOUCH : "",
        short_batches ? POOLS_SHORT : "");
    add(l, end(s, at));
#undef POOLS_REGISTER
#undef POOLS_SHORT
#undef POOLS_TOUCH
#undef POOLS_STEPS
}

/* When jemalloc's thread cache can serve: its limits read at run time, per
 * size of the run, against the working set. Returns 0 or -errno (mallctl). */
static int alloc_tcache(lines_t *l, shmb_notes_t *store, const shmb_alloc_config_t *cfg)
{
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES], max = 0, slots = 0;
    const int n = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes, SHMB_ALLOC_MAX_SIZES);
    const uint64_t ws = shmb_alloc_bench_working_set(cfg);
    int ret = shmb_alloc_tcache_reach(1, &max, &slots), fits = 0;
    if (ret < 0)
        return ret;
    const size_t at = store->used;
    put(store, "jemalloc_tcache: the thread cache holds sizes <= %llu KiB (arenas.tcache_max), blocks per size "
               "class (arenas.bin.N.nregs, opt.tcache_nslots_*):", (unsigned long long)(max / 1024));
    for (int i = 0; i < n && ret == 0; i++) {
        if ((ret = shmb_alloc_tcache_reach(sizes[i] * 1024, &max, &slots)) < 0)
            break;
        put(store, "%s %llu KB %llu", i ? "," : "", (unsigned long long)sizes[i], (unsigned long long)slots);
        fits += ws <= slots;
    }
    if (ret < 0) {
        store->used = at;
        return ret;
    }
    if (fits == 0)
        put(store, "; a working set of %llu exceeds it at every size, so most calls reach the arena",
            (unsigned long long)ws);
    else if (fits == n)
        put(store, "; a working set of %llu fits it at every size: the cache can serve the calls",
            (unsigned long long)ws);
    else
        put(store, "; a working set of %llu fits it where it holds %llu or more (the cache can serve the calls "
                   "there) and exceeds it elsewhere (most calls reach the arena)",
            (unsigned long long)ws, (unsigned long long)ws);
    add(l, end(store, at));
    return 0;
}

/* When the pools time more than asked: a count (min_ops, or num_iterations
 * given alone) below one round of the working set still times that round,
 * because a shorter batch of the arena's operations lasts under 100 timer
 * overheads. A paired run's fewest rounds are SHMB_PAIRED_MIN_ROUNDS. */
static void alloc_count(lines_t *l, shmb_notes_t *s, const shmb_alloc_config_t *cfg)
{
    const uint64_t ws = shmb_alloc_bench_working_set(cfg), rounds = (cfg->min_ops + ws - 1) / ws;
    int pools = cfg->nsystems > 0;
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++)
        pools |= cfg->run[k];
    const size_t at = s->used;
    if (pools && cfg->min_ops < ws)
        put(s, "count: %llu operations per pool step asked; a batch is the working set of %llu blocks (a shorter "
               "one lasts under 100x the timer overhead), so each step times %s",
            (unsigned long long)cfg->min_ops, (unsigned long long)ws,
            cfg->nsystems ? "one batch per round" : "1 batch of it: too few for percentiles");
    if (cfg->nsystems && cfg->count_given && rounds < SHMB_PAIRED_MIN_ROUNDS)
        put(s, "%sthe count asks for %llu rounds of alloc, free, alloc_reuse: %d at least, the fewest with a 95%% "
               "interval", s->used > at ? "; " : "count: ", (unsigned long long)rounds, SHMB_PAIRED_MIN_ROUNDS);
    if (s->used > at)
        add(l, end(s, at));
}

int shmb_notes_alloc(shmb_report_t *report, shmb_notes_t *store, const shmb_alloc_config_t *cfg)
{
    lines_t l = {0};
    const size_t start = store->used;
    if (cfg->nsystems) {
        alloc_paired(&l, store, cfg);
        alloc_count(&l, store, cfg);
        int ret = publish(report, &l);
        if (ret < 0)
            store->used = start;
        return ret;
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
        put(store, "threads: %d at once per allocator and size, ", cfg->threads);
        int ret = put_cpus(store, cfg->threads, cfg->cpu);
        if (ret < 0) {
            store->used = start;
            return ret;
        }
        put(store, "; a barrier starts every timed phase");
        add(&l, end(store, at));
        add(&l, "threads: ns = per thread per op (percentiles over every thread's samples), iterations = "
                "all threads' ops; ops_per_s = all threads' ops / wall time of the phases (posix: on total, "
                "touch, cleanup only); posix: own segments per thread; offset, bipc, jemalloc, jemalloc_tcache: ONE "
                "pool shared by all (jemalloc_tcache: a tcache per thread); arena: one arena per thread (no "
                "sharing)");
    }
    int ret = publish(report, &l);
    if (ret < 0)
        store->used = start;
    return ret;
}

static const char *placement_note(shmb_lookup_placement_t placement)
{
    switch (placement) {
    case SHMB_LOOKUP_PLACE_DESCENDING:
        return "placement: descending (the peer registers its segments in descending address order, as "
               "Mooncake does: each buffer a fresh mmap, placed below the last)";
    case SHMB_LOOKUP_PLACE_ASCENDING:
        return "placement: ascending (the peer registers its segments in ascending address order)";
    default:
        return "placement: random (the peer registers its segments in an order unrelated to their "
               "addresses: linear's and mooncake's scan mispredict)";
    }
}

/* How the rows were timed: by a peer, by one thread, or by several. */
static const char *lookup_timing(shmb_notes_t *s, const shmb_lookup_config_t *cfg, int *err)
{
    if (cfg->peer_process)
        return "two processes (--peer_process): this one created the SHM objects and wrote a tag at every "
               "request's word; a forked peer attached them, translated, read each tag through its "
               "translated pointer and timed every row (ns per lookup = batch time / lookups in the batch "
               "(>= 4096), p50, p99, max over batches); one set at a time: mooncake's segments (the "
               "kernels' too), flowipc_classic's pool, flowipc_jemalloc's pools";
    if (cfg->threads <= 1)
        return "ns per lookup = batch time / lookups in the batch (>= 4096), batches walking through a pool "
               "of >= 131072 distinct requests; p50, p99, max over batches";
    const size_t start = s->used;
    put(s, "threads: %d at once, each its own request stream, sharing the path's metadata, pool and "
           "repository, ", cfg->threads);
    *err = put_cpus(s, cfg->threads, cfg->cpu);
    if (*err < 0) {
        s->used = start;
        return NULL;
    }
    put(s, "; ns per lookup per thread = batch time / lookups in the batch (>= 4096), p50, p99, max over "
           "every thread's batches; ops_per_s = all threads' lookups / wall time; first_use: one thread");
    return end(s, start);
}

/* A paired lookup run: its systems, and which question it answers how. */
static void lookup_paired(lines_t *l, shmb_notes_t *s, const shmb_lookup_config_t *cfg)
{
    paired_lines(l, s, cfg->system_names, cfg->nsystems,
                 "an independent second instance of the baseline (its own objects, mapping and metadata)");
    if (cfg->peer_process) {
        const size_t at = s->used;
        put(s, "rounds of attach: %zu; each round the peer performs each system's whole first attach, the receiver's "
               "TOTAL before its first request (mooncake: every buffer's first request, shm_open + mmap each, "
               "the first_use times summed; flowipc_classic: its one pool, no message; flowipc_jemalloc: its "
               "session's lend, timed by the owner: LendArena, then per pool LendPool, the peer's shm_open + mmap, "
               "its Response, each a round trip on a Unix socket), as one sample, then checks the tag the owner "
               "wrote at every buffer's or block's first word through its mappings and detaches untimed; the ratio is of the receivers' totals (each system "
               "row's note: what its total holds)", shmb_lookup_bench_paired_attach_rounds(cfg));
        add(l, end(s, at));
        add(l, "paired with --peer_process: first attach only; the translation per request is the paired run "
               "without --peer_process");
    } else {
        const size_t at = s->used;
        if (cfg->count_given)
            put(s, "rounds of translation: num_lookups / %d (at least %d, at most %d), a multiple of 2 x "
                   "systems; each round", SHMB_LOOKUP_MIN_BATCH, SHMB_PAIRED_MIN_ROUNDS, SHMB_LOOKUP_PAIRED_MAX_ROUNDS);
        else
            put(s, "rounds of translation: at least %d, until the baseline's batches took min_time_ms (at most "
                   "%d), a multiple of 2 x systems; each round", SHMB_LOOKUP_PAIRED_MIN_ROUNDS,
                SHMB_LOOKUP_PAIRED_MAX_ROUNDS);
        put(s, " every system translates one batch of the same "
               "requests (the run's window), each system its own set-up of the same segments, every request "
               "verified before timing and every batch's checksum checked; ns per lookup = batch time / lookups");
        add(l, end(s, at));
        add(l, "paired without --peer_process: translation only; the first attach (step attach) is the paired "
               "run with --peer_process");
    }
    add(l, "paired: the hand-off rows (handoff, pool_once) are left out: run --system=NAME for them");
}

/* A count given (--num_lookups alone) bounds each row: what it timed, and
 * why a count below one batch times a whole one. */
static void lookup_count(lines_t *l, shmb_notes_t *s, const shmb_lookup_config_t *cfg)
{
    if (!cfg->count_given)
        return;
    const uint64_t batches = shmb_lookup_bench_batches(cfg);
    const size_t at = s->used;
    put(s, "count: num_lookups=%llu: ", (unsigned long long)cfg->num_lookups);
    if (cfg->nsystems)
        put(s, "%llu batch%s of %d lookups per system", (unsigned long long)batches, batches == 1 ? "" : "es",
            SHMB_LOOKUP_MIN_BATCH);
    else
        put(s, "%llu batch%s of %d lookups per row%s", (unsigned long long)batches, batches == 1 ? "" : "es",
            SHMB_LOOKUP_MIN_BATCH, cfg->threads > 1 ? " and thread" : "");
    put(s, " (a shorter batch of the fastest paths lasts under 100x the timer overhead), min_time_ms not applied");
    if (cfg->nsystems && batches < SHMB_PAIRED_MIN_ROUNDS)
        put(s, "; %d rounds at least, the fewest with a 95%% interval", SHMB_PAIRED_MIN_ROUNDS);
    else if (!cfg->nsystems && batches < SHMB_LOOKUP_MIN_BATCHES)
        put(s, ": too few for percentiles");
    add(l, end(s, at));
}

int shmb_notes_lookup(shmb_report_t *report, shmb_notes_t *store, const shmb_lookup_config_t *cfg)
{
    lines_t l = {0};
    const size_t start = store->used;
    put(store, "segments of %llu MB, requests of %llu KB, %s pattern; every translation verified before "
               "timing", (unsigned long long)cfg->segment_size_mb, (unsigned long long)cfg->lookup_len_kb,
        cfg->sequential ? "sequential" : "random");
    add(&l, end(store, start));
    add(&l, placement_note(cfg->placement));
    if (!cfg->system_rows && !cfg->nsystems)
        add(&l, "systems: mooncake, flowipc_classic, flowipc_jemalloc (what a request costs); kernels: linear, "
                "lower_bound, tree, arithmetic (the minimal C operation of each way to find one segment among "
                "several: reference points, not lower bounds; arithmetic reads its segment's entry per request, "
                "local_base[id] + offset with an id and a range check, while flowipc_classic's one pool needs "
                "no table: base + offset, the base in a register, so it can come in below arithmetic); "
                "speedup = mooncake's p50 / the row's p50 (linear's when mooncake is not run)");
    if (cfg->run_system[SHMB_LOOKUP_MOONCAKE] && cfg->mooncake_path == SHMB_MOONCAKE_PR192)
        add(&l, "mooncake_path=pr192: mooncake relocates as PR #192's head did (24893a21e, never merged: "
                "metadata lock, BufferDesc scan, remap cache), not as upstream's TENT ShmTransport (the "
                "default)");
    lookup_count(&l, store, cfg);
    if (cfg->nsystems) {
        lookup_paired(&l, store, cfg);
        int ret = publish(report, &l);
        if (ret < 0)
            store->used = start;
        return ret;
    }
    int err = 0;
    const char *timing = lookup_timing(store, cfg, &err);
    if (err < 0) {
        store->used = start;
        return err;
    }
    add(&l, timing);
    if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
        add(&l, "step -: throughput: a batch's requests are independent, the CPU overlaps their "
                "translations");
    if (cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
        add(&l, "step latency: the same requests as a dependent chain: each one's keys shifted by how far "
                "the previous translation landed from where it should (0: one subtraction and one addition "
                "more per request), so each waits for the one before; speedups compare rows of the same "
                "kind");
    if (cfg->system_rows)
        add(&l, "attach: what the receiver pays before its first request, one sample each (mooncake: the "
                "first request to each buffer, shm_open + mmap, the first_use row without --system; "
                "flowipc_classic: the peer opening its pool; flowipc_jemalloc: each pool lent to the peer, "
                "LendPool, its shm_open + mmap and Response, timed by the owner, LendArena's one round trip "
                "per session not counted; with --peer_process only); - = a step this system does not have");
    else
        add(&l, cfg->peer_process
                ? "first_use: mooncake's first request to each buffer in the peer (shm_open + mmap), timed "
                  "one by one; attach: the peer opening flowipc_classic's pool (shm_open + fstat + mmap, "
                  "once) and each of flowipc_jemalloc's pools lent to the peer (LendPool, the peer's "
                  "shm_open + mmap read-only, its Response: a round trip timed by the owner, one sample per "
                  "pool; LendArena's one round trip per session not counted); - = a step this system does not "
                  "have"
                : "first_use: mooncake's first request to each buffer (shm_open + mmap + close), timed one "
                  "by one; - = a step this system does not have");
    int ret = publish(report, &l);
    if (ret < 0)
        store->used = start;
    return ret;
}

/* What a hand-off row times, crossing or not. */
static const char *handoff_timed(shmb_notes_t *s, const shmb_handoff_bench_config_t *cfg)
{
    const size_t start = s->used;
    put(s, "handoff: Flow-IPC's object API, per object of %llu KB: lend, the handle message, borrow, a read of "
           "the tag the lender wrote, release, the return message and the lender's free (flowipc_classic: no "
           "return message, the last owner frees); construct untimed (an allocation); each flavour's "
           "step-by-step check before timing", (unsigned long long)cfg->object_kb);
    if (cfg->peer_process)
        put(s, "; the borrower a second process over a Unix stream socket pair, both messages crossing "
               "(flowipc_classic: the blob, then this driver's own ack to close the round trip), each "
               "hand-off timed alone, the borrower on the CPUs this process may use (with --cpu, the same "
               "one: each crossing switches process); no speedup: the figure is mostly the two crossings, which carry the "
               "request in this design and have no counterpart in Mooncake's one-sided relocate");
    else
        put(s, "; the borrower in this process, no message crossing, timed in batches of %zu (batch time / "
               "%zu); speedup = mooncake's relocate p50 / its p50 (the same question, a usable address per "
               "request, the calls only)", shmb_handoff_bench_batch(cfg->object_kb),
            shmb_handoff_bench_batch(cfg->object_kb));
    return end(s, start);
}

int shmb_notes_handoff(shmb_report_t *report, shmb_notes_t *store, const shmb_handoff_bench_config_t *cfg)
{
    lines_t l = {0};
    const size_t start = store->used;
    for (size_t i = 0; i < NOTES_CAP && report->notes[i]; i++)
        add(&l, report->notes[i]);
    add(&l, handoff_timed(store, cfg));
    add(&l, "pool_once: flowipc_jemalloc lending each pool to the borrower (LendPool, the borrower's shm_open "
            "+ mmap, its response: a round trip per pool and peer, one sample each); handoff rows stand for "
            "the object-API design, the steady flowipc_* rows for the other one: pools borrowed once, "
            "requests carry offsets, to_address per request");
    int ret = publish(report, &l);
    if (ret < 0)
        store->used = start;
    return ret;
}

/* The second process's note: what it attached and timed, what this one checked. */
static const char *transfer_peer(shmb_notes_t *s, const shmb_transfer_config_t *cfg)
{
    const size_t start = s->used;
    const int named = cfg->backing.kind == SHMB_BACKING_TMPFS;
    put(s, "peer_process: every row was measured in a second process: it attached src and dst %s, touched "
           "them, %sand timed its copies; this process "
           "created and filled them and checked dst after the peer's first and timed transfers of each size "
           "and method%s",
        named ? "by name (shm_open O_RDWR + fstat size check + mmap)"
              : "from descriptors received over a Unix socket (SCM_RIGHTS + fstat size check + mmap)",
        cfg->translate ? "ran the request path, the translation and the request over its own mapping of "
                         "dst, "
                       : "",
        !cfg->cold ? ""
        : named    ? "; cold: this process created each fresh segment, the peer attached it by name untouched "
                     "and timed its first write"
                   : "; cold: this process created each fresh buffer, the peer received its descriptor, mapped it "
                     "untouched and timed its first write");
    return end(s, start);
}

const char *shmb_notes_backing(shmb_notes_t *s, const shmb_backing_config_t *backing,
                               const shmb_backing_residency_t *granted, const char *copies)
{
    static const char *const how[SHMB_BACKING_KINDS] = {
        [SHMB_BACKING_MEMFD] = "memfd_create, 4 KiB shmem pages",
        [SHMB_BACKING_THP] = "memfd_create, mapped 2 MiB-aligned and madvise(MADV_HUGEPAGE) before the first touch",
        [SHMB_BACKING_HUGETLB] = "memfd_create(MFD_HUGETLB), pages of the reserved pool",
    };
    const size_t start = s->used;
    uint64_t page = 0;
    if ((unsigned)backing->kind >= SHMB_BACKING_KINDS || !how[backing->kind])
        return NULL;
    shmb_backing_page_size(backing, &page);
    put(s, "backing: %s (%s), %llu KiB pages, each buffer rounded up to them; src, dst: prefaulted with one "
           "guarded write per page, touched before timing; %s",
        shmb_backing_name(backing->kind), how[backing->kind], (unsigned long long)(page >> 10), copies);
    if (granted) {
        const shmb_backing_residency_t *g = granted;
        double res = (double)g->resident_bytes;
        put(s, "; granted (smaps, after the set-up): src+dst %.1f MiB resident, %.1f MiB (%.1f%%) mapped by "
               "huge pages",
            res / 1048576.0, (double)g->huge_bytes / 1048576.0,
            res > 0 ? 100.0 * (double)g->huge_bytes / res : 0.0);
    }
    return end(s, start);
}

/* The lines of a paired run of shm_transfer_bench (--systems, the sweep or
 * the replay): the common ones, then mooncake's relocate path if it is not
 * the default, the rounds and what the design is credited with. */
static void transfer_paired_lines(lines_t *l, shmb_notes_t *s, const shmb_lookup_system_t *systems, size_t n,
                                  shmb_mooncake_path_t path, const char *rounds, const char *credit)
{
    const char *names[SHMB_PAIRED_MAX_SYSTEMS] = {0};
    char control[64];
    int mooncake = 0;
    if (n < 2 || n > SHMB_PAIRED_MAX_SYSTEMS) /* the config's check refuses it first */
        return;
    for (size_t i = 0; i < n; i++) {
        names[i] = shmb_lookup_system_name(systems[i]);
        mooncake |= systems[i] == SHMB_LOOKUP_MOONCAKE;
    }
    snprintf(control, sizeof(control), "%s%s", names[0], SHMB_PAIRED_CONTROL_SUFFIX);
    names[n - 1] = control;
    paired_lines(l, s, names, n, "a second, independent set-up of the baseline (its own translation and request "
                                 "path) over the same src, dst and requests");
    if (mooncake && path != SHMB_MOONCAKE_DEFAULT_PATH) {
        const size_t at = s->used;
        put(s, "mooncake's relocate path: %s", shmb_mooncake_path_name(path));
        add(l, end(s, at));
    }
    add(l, rounds);
    add(l, credit);
}

int shmb_notes_transfer_paired(shmb_report_t *report, shmb_notes_t *store, const shmb_lookup_system_t *systems,
                               size_t n, shmb_mooncake_path_t path)
{
    lines_t l = {0};
    const size_t start = store->used;
    if (n < 2)
        return -EINVAL;
    for (size_t i = 0; i < NOTES_CAP && report->notes[i]; i++)
        add(&l, report->notes[i]);
    if (n > SHMB_PAIRED_MAX_SYSTEMS)
        return -EINVAL;
    transfer_paired_lines(&l, store, systems, n, path,
                 "rounds: the requests: every system replays each request in turn, in the order above; each ratio "
                 "is paired request by request",
                 "request_path and copy are the same code for every system: the design changes the translate "
                 "row's time, and a request's saved time beyond it and the control's interval is noise");
    int ret = publish(report, &l);
    if (ret < 0)
        store->used = start;
    return ret;
}

int shmb_notes_transfer(shmb_report_t *report, shmb_notes_t *store, const shmb_transfer_config_t *cfg)
{
    lines_t l = {0};
    const size_t start = store->used;
    const int backed = cfg->backing.kind != SHMB_BACKING_TMPFS;
    if (backed)
        add(&l, shmb_notes_backing(store, &cfg->backing, cfg->granted,
                                   "each transfer copies src[0,size) to dst[0,size)"));
    else
        add(&l, "src, dst: SHM segments reserved with posix_fallocate, touched before timing; each transfer "
                "copies src[0,size) to dst[0,size), so small sizes are cache-resident");
    add(&l, "GB_s = size / p50 time (the median; 10^9 bytes/s, each byte counted once), as are JSON "
            "bytes_per_second and items_per_second; mean_ns is the mean; ns per transfer are batch means "
            "(batches >= 100x the timer overhead)");
    if (cfg->run[SHMB_COPY_MEMCPY])
        add(&l, "speedup = GB_s / GB_s of the warm memcpy row of the same size (medians; cold "
                "rows too)");
    if (cfg->run[SHMB_COPY_MEMCPY] && cfg->run[SHMB_COPY_NT])
        add(&l, "memcpy switches to non-temporal stores itself above glibc's x86_non_temporal_threshold, "
                "as the glibc line above prints it");
    if (cfg->cold && !backed)
        add(&l, "cold: each transfer writes a fresh SHM segment made as Mooncake's createSharedMemory makes "
                "it (shm_open + ftruncate + mmap, nothing reserved): tmpfs page allocation and page faults "
                "timed, one transfer at a time");
    if (cfg->cold && backed)
        add(&l, "cold: each transfer writes a fresh buffer of the backing (created, sized, mapped, nothing "
                "touched): its page allocation (and zeroing) and page faults timed, one transfer at a time");
    if (cfg->translate || cfg->nsystems) {
        const size_t at = store->used;
        const unsigned long long n = (unsigned long long)cfg->num_segments;
        put(store, "request_path: TENT's submit path for one descriptor (selection, look-ups, task objects, "
                   "locks), the same code for every system, over the registrations each design makes (its "
                   "findBuffer walks them): mooncake %llu buffers, flowipc_classic its one pool, flowipc_jemalloc "
                   "the pools its arena makes for %llu blocks of dst's size; translate: the system's translation of dst alone (%llu registered buffers or "
                   "pools); request: the request path calling that translation and the copy, each once; note: "
                   "each part's share of the request p50",
            n, n, n);
        add(&l, end(store, at));
    }
    if (cfg->translate && cfg->count_given) {
        const size_t at = store->used;
        put(store, "count: num_transfers=%llu: request_path and translate time it in batches >= 100x the timer "
                   "overhead, one batch at least (their iterations say how many: more when one batch needs "
                   "more), not the default's %d batches: few batches, rough percentiles",
            (unsigned long long)cfg->num_transfers, SHMB_TRANSFER_MIN_PART_BATCHES);
        add(&l, end(store, at));
    }
    if (cfg->peer)
        add(&l, transfer_peer(store, cfg));
    if (cfg->nsystems >= 2) {
        const size_t at = store->used;
        put(store, "rounds: per size and part, one batch of each system per round, in the order above, the same "
                   "batch size for all (the largest of theirs); as many rounds as a --system run times batches, at "
                   "least %d%s, until the systems together spent %zu x time_per_size_ms",
            cfg->count_given ? SHMB_PAIRED_MIN_ROUNDS : SHMB_TRANSFER_MIN_PART_BATCHES,
            cfg->count_given ? " (the fewest with a 95% interval, where num_transfers asks fewer)" : "",
            cfg->nsystems);
        transfer_paired_lines(&l, store, cfg->systems, cfg->nsystems, cfg->mooncake_path, end(store, at),
                     "copy rows: the same code for every system, measured once, unpaired; the design changes the "
                     "translate row's time, and a request's saved time beyond it and the control's interval is "
                     "noise");
    }
    if ((cfg->translate || cfg->nsystems) && !cfg->zero_copy) /* every system's run: the headers pair */
        add(&l, "flowipc_jemalloc: a borrower maps a lent pool read-only, so its request is its write path: the "
                "request path around construct in its own arena, write, lend, the handle to a borrower process, "
                "borrow, tag check, release, the return, free (this process writes, with --peer_process too); its "
                "translate row (to_address) is not possible "
                "upstream and is no verdict; copy_out: the reader's copy of the borrowed object into its own "
                "buffer (flowipc_jemalloc's; '-' for the others)");
    if (cfg->zero_copy)
        add(&l, "zero_copy: mooncake's whole request (request path, relocate, copy) against each Flow-IPC "
                "flavour's hand-off to a borrower process with no copy (construct, lend, the handle message, "
                "borrow, tag check, release; flowipc_jemalloc: the return message and the free); sizes x4; "
                "it stands only where the reader uses the object in place: an application change");
    int ret = publish(report, &l);
    if (ret < 0)
        store->used = start;
    return ret;
}
