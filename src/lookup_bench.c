#include "shmbench/lookup_bench.h"

#include "paths_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/mooncake.h"
#include "shmbench/peer.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"
#include "shmbench/sysinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096ull

static const char *path_name(int path)
{
    return shmb_path_table[path].name;
}

static int path_runs(const shmb_lookup_config_t *cfg, int path)
{
    return path < SHMB_LOOKUP_SYSTEMS ? cfg->run_system[path] : cfg->run[path - SHMB_LOOKUP_SYSTEMS];
}

typedef struct setup {
    unsigned char *reserved;        /* our range, n * size bytes */
    size_t reserved_bytes;
    shmb_lookup_segment_t *segments; /* registration order */
    shmb_lookup_request_t *requests; /* the pool: windows * window requests */
    uint64_t window;                 /* requests per timed batch */
    uint64_t windows;
    uint64_t *expected;              /* per request: the address it was made from */
    uint64_t *expected_sum;          /* per window: the sum of its expected addresses */
    shmb_path_state_t state;         /* what the paths' setups made */
    unsigned char up[SHMB_PATHS];    /* 1: path set up over state */
    shmb_segment_t *shm;             /* mooncake's real segments, by id (descriptors closed) */
    int *attach_fd;                  /* the descriptor each attach at a slot keeps open, by id (-1: none) */
    uint64_t slots;                  /* entries in attach_fd */
    uint64_t shm_created;
    shmb_samples_t first_use;        /* ns of each buffer's first request (mooncake) */
    shmb_lookup_request_t *made;     /* the peer's: requests as made (segment id and offset), which
                                      * aim() rewrites into each path's requests */
    uint64_t *tags;                  /* the peer's: per request, the tag the owner wrote at its word */
} setup_t;

int shmb_lookup_bench_check(const shmb_lookup_config_t *cfg)
{
    if (cfg->num_segments == 0 || cfg->num_lookups == 0 || cfg->segment_size_mb == 0 ||
        cfg->lookup_len_kb == 0 || cfg->num_segments > SHMB_LOOKUP_MAX_SEGMENTS ||
        cfg->num_lookups > SHMB_LOOKUP_MAX_LOOKUPS)
        return -EINVAL;
    if (cfg->segment_size_mb > SHMB_LOOKUP_SPAN_BYTES >> 20 ||
        cfg->num_segments > (SHMB_LOOKUP_SPAN_BYTES >> 20) / cfg->segment_size_mb)
        return -EOVERFLOW;
    if (cfg->lookup_len_kb > cfg->segment_size_mb * 1024 || (unsigned)cfg->mode > SHMB_LOOKUP_MODE_BOTH ||
        (unsigned)cfg->placement >= SHMB_LOOKUP_PLACEMENTS || cfg->threads < 1 ||
        cfg->threads > SHMB_LOOKUP_MAX_THREADS || (cfg->peer_process && cfg->threads > 1))
        return -EINVAL;
    return 0;
}

static const char *const placement_names[SHMB_LOOKUP_PLACEMENTS] = {"descending", "ascending", "random"};

const char *shmb_lookup_placement_name(shmb_lookup_placement_t placement)
{
    return (unsigned)placement < SHMB_LOOKUP_PLACEMENTS ? placement_names[placement] : "unknown";
}

int shmb_lookup_parse_placement(const char *name, shmb_lookup_placement_t *out)
{
    for (int i = 0; i < SHMB_LOOKUP_PLACEMENTS; i++) {
        if (name && strcmp(name, placement_names[i]) == 0) {
            *out = (shmb_lookup_placement_t)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* Peer bases: one random page-aligned place in each of n equal slots of the
 * span (so none overlap); segment id takes slot slot_of[id]: the last slot
 * first (descending), the first slot first (ascending), or any. */
static void place_segments(const shmb_lookup_config_t *cfg, shmb_rng_t *rng, uint64_t *slot_of,
                           shmb_lookup_segment_t *segments)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t slot = (SHMB_LOOKUP_SPAN_BYTES / n) & ~(PAGE - 1);
    for (uint64_t i = 0; i < n; i++)
        slot_of[i] = cfg->placement == SHMB_LOOKUP_PLACE_DESCENDING ? n - 1 - i : i;
    if (cfg->placement == SHMB_LOOKUP_PLACE_RANDOM)
        shmb_rng_shuffle(rng, slot_of, (size_t)n);
    for (uint64_t id = 0; id < n; id++) {
        uint64_t slack_pages = (slot - size) / PAGE;
        segments[id].peer_base =
            SHMB_LOOKUP_PEER_START + slot_of[id] * slot + shmb_rng_below(rng, slack_pages + 1) * PAGE;
        segments[id].size = size;
        segments[id].local_base = NULL;
    }
}

int shmb_lookup_bench_place(const shmb_lookup_config_t *cfg, shmb_lookup_segment_t *segments)
{
    int ret = shmb_lookup_bench_check(cfg);
    if (ret < 0)
        return ret == -EOVERFLOW ? -EINVAL : ret;
    uint64_t *slot_of = malloc((size_t)cfg->num_segments * sizeof(uint64_t));
    if (!slot_of)
        return -ENOMEM;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, cfg->seed);
    place_segments(cfg, &rng, slot_of, segments);
    free(slot_of);
    return 0;
}

/* The pool of requests and the address each must translate to. Returns 0
 * or -ENOMEM. */
static int make_requests(const shmb_lookup_config_t *cfg, setup_t *s, shmb_rng_t *rng,
                         const uint64_t *slot_of)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t len = cfg->lookup_len_kb << 10, starts = size - len + 1;
    uint64_t *id_in_slot = malloc(n * sizeof(uint64_t));
    if (!id_in_slot)
        return -ENOMEM;
    for (uint64_t id = 0; id < n; id++)
        id_in_slot[slot_of[id]] = id;
    for (uint64_t k = 0; k < s->window * s->windows; k++) {
        uint64_t id, offset;
        if (cfg->sequential) {
            id = id_in_slot[k % n];
            offset = ((k / n) * len) % starts;
        } else {
            id = shmb_rng_below(rng, n);
            offset = shmb_rng_below(rng, starts);
        }
        shmb_lookup_request_t *r = &s->requests[k];
        r->id = (uint32_t)id;
        r->offset = offset;
        r->len = len;
        r->addr = s->segments[id].peer_base + offset;
        r->pool_offset = id * size + offset;
        s->expected[k] = (uint64_t)(uintptr_t)(s->segments[id].local_base + offset);
        s->expected_sum[k / s->window] += s->expected[k];
    }
    free(id_in_slot);
    return 0;
}

static void release_slots(setup_t *s);

/* Sets path p up over view, to be torn down once. */
static int path_setup(setup_t *s, int p, const shmb_path_view_t *view)
{
    const shmb_path_t *path = &shmb_path_table[p];
    int ret = path->setup(path, &s->state, view);
    if (ret == 0)
        s->up[p] = 1;
    return ret;
}

static void path_teardown(setup_t *s, int p)
{
    if (!s->up[p])
        return;
    shmb_path_table[p].teardown(&shmb_path_table[p], &s->state);
    s->up[p] = 0;
}

static void teardown(setup_t *s)
{
    release_slots(s);
    for (int p = 0; p < SHMB_PATHS; p++)
        path_teardown(s, p);
    for (uint64_t id = 0; id < s->shm_created; id++)
        shmb_segment_destroy(&s->shm[id], NULL);
    free(s->shm);
    free(s->attach_fd);
    free(s->made);
    free(s->tags);
    shmb_stats_release(&s->first_use);
    if (s->reserved)
        munmap(s->reserved, s->reserved_bytes);
    free(s->segments);
    free(s->requests);
    free(s->expected);
    free(s->expected_sum);
    memset(s, 0, sizeof(*s));
}

static int prepare(const shmb_lookup_config_t *cfg, setup_t *s)
{
    memset(s, 0, sizeof(*s));
    const uint64_t n = cfg->num_segments;
    s->reserved_bytes = (size_t)(n * (cfg->segment_size_mb << 20));
    void *p = mmap(NULL, s->reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return shmb_error_record("mmap", errno, "the local address range");
    s->reserved = p;
    s->window = cfg->num_lookups > SHMB_LOOKUP_MIN_BATCH ? cfg->num_lookups : SHMB_LOOKUP_MIN_BATCH;
    s->windows = (SHMB_LOOKUP_MIN_POOL + s->window - 1) / s->window;
    s->segments = malloc((size_t)n * sizeof(*s->segments));
    s->requests = malloc((size_t)(s->window * s->windows) * sizeof(*s->requests));
    s->expected = malloc((size_t)(s->window * s->windows) * sizeof(uint64_t));
    s->expected_sum = calloc((size_t)s->windows, sizeof(uint64_t));
    uint64_t *slot_of = malloc((size_t)n * sizeof(uint64_t));
    int ret = s->segments && s->requests && s->expected && s->expected_sum && slot_of ? 0 : -ENOMEM;
    if (ret == 0) {
        shmb_rng_t rng;
        shmb_rng_seed(&rng, cfg->seed);
        place_segments(cfg, &rng, slot_of, s->segments);
        for (uint64_t id = 0; id < n; id++)
            s->segments[id].local_base = s->reserved + id * (cfg->segment_size_mb << 20);
        ret = make_requests(cfg, s, &rng, slot_of);
    }
    free(slot_of);
    if (ret == -ENOMEM)
        shmb_error_record("malloc", ENOMEM, NULL);
    if (ret < 0)
        teardown(s);
    return ret;
}

/* ---- the systems' set-up ---- */

/* Mooncake's first use of a buffer: shm_open(O_RDWR) + mmap, as
 * relocateSharedMemoryAddress does (the descriptor stays open in its
 * OpenedShmEntry until the transport goes). The mapping replaces the
 * segment's slot of our reservation (MAP_FIXED: atomic, and only ever over
 * our own PROT_NONE range, so no other mapping can take the place between
 * two attaches), so that every path translates to the same address. */
static int attach_at_slot(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    setup_t *s = ctx;
    int fd = shm_open(shm_path, O_RDWR, 0);
    if (fd < 0)
        return shmb_error_record("shm_open", errno, shm_path);
    void *p = mmap(s->segments[index].local_base, (size_t)length, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        int ret = shmb_error_record("mmap", errno, shm_path);
        close(fd);
        return ret;
    }
    s->attach_fd[index] = fd;
    *local = p;
    return 0;
}

/* Undoes one attach: the slot becomes reserved again (never a hole). */
static void detach_slot(void *ctx, void *local, uint64_t length)
{
    (void)ctx;
    mmap(local, (size_t)length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* Room for one descriptor per slot, none open. */
static int alloc_slots(const shmb_lookup_config_t *cfg, setup_t *s)
{
    s->attach_fd = malloc((size_t)cfg->num_segments * sizeof(*s->attach_fd));
    if (!s->attach_fd)
        return shmb_error_record("malloc", ENOMEM, NULL);
    s->slots = cfg->num_segments;
    for (uint64_t id = 0; id < s->slots; id++)
        s->attach_fd[id] = -1;
    return 0;
}

/* Mooncake's model goes (detaching what it attached), and every slot still
 * attached is reserved again, its descriptor closed. */
static void release_slots(setup_t *s)
{
    path_teardown(s, SHMB_LOOKUP_MOONCAKE);
    for (uint64_t id = 0; id < s->slots; id++) {
        if (s->attach_fd[id] < 0)
            continue;
        detach_slot(s, s->segments[id].local_base, s->segments[id].size);
        close(s->attach_fd[id]);
        s->attach_fd[id] = -1;
    }
}

/* The peer's segments as real SHM: created sparse (nothing is written),
 * their descriptors closed. */
static int create_shm(const shmb_lookup_config_t *cfg, setup_t *s)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    s->shm = calloc((size_t)n, sizeof(*s->shm));
    if (!s->shm)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = alloc_slots(cfg, s);
    for (uint64_t id = 0; id < n && ret == 0; id++) {
        ret = shmb_segment_create(&s->shm[id], cfg->shm_prefix, (size_t)size, NULL, NULL);
        if (ret < 0)
            break;
        s->shm_created++;
        ret = shmb_segment_close(&s->shm[id], NULL);
    }
    return ret;
}

/* The view every path of one process's run sets up over: the segments at
 * their slots of our reservation, mooncake's named names[id] and attached
 * at their slots on first use, flowipc_classic's pool the reservation
 * itself (every segment back to back). */
static shmb_path_view_t view_of(const shmb_lookup_config_t *cfg, setup_t *s, const char *const *names)
{
    return (shmb_path_view_t){.segments = s->segments,
                              .n = (size_t)cfg->num_segments,
                              .shm_names = names,
                              .mooncake_ops = {attach_at_slot, detach_slot, s},
                              .pool_base = s->reserved,
                              .pool_bytes = s->reserved_bytes};
}

/* Each buffer's first request through mooncake's model (set up, with
 * alloc_slots' room), in a random order, timed one by one (it attaches the
 * buffer) into s->first_use. */
static int first_uses(const shmb_lookup_config_t *cfg, setup_t *s, char *why, size_t cap)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t len = cfg->lookup_len_kb << 10;
    uint64_t *order = malloc((size_t)n * sizeof(*order));
    if (!order)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; id < n; id++)
        order[id] = id;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, cfg->seed ^ 0x6d6f6f6e63616b65ull);
    shmb_rng_shuffle(&rng, order, (size_t)n);
    int ret = 0;
    for (uint64_t k = 0; k < n && ret == 0; k++) {
        const uint64_t id = order[k], offset = shmb_rng_below(&rng, size - len + 1);
        void *got = NULL;
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_mooncake_relocate(s->state.mooncake, SHMB_LOOKUP_MOONCAKE_TARGET_ID,
                                     s->segments[id].peer_base + offset, len, &got);
        uint64_t t1 = shmb_clock_now_ns();
        if (ret == 0 && got != s->segments[id].local_base + offset) {
            snprintf(why, cap, "mooncake: first use of buffer %llu translated to %p, expected %p",
                     (unsigned long long)id, got, (void *)(s->segments[id].local_base + offset));
            ret = -EPROTO;
        }
        if (ret == 0 && shmb_stats_append(&s->first_use, (double)(t1 - t0)) < 0)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    free(order);
    return ret;
}

/* Mooncake in one process: the real segments, its model over them, then
 * their first uses. */
static int setup_mooncake(const shmb_lookup_config_t *cfg, setup_t *s, char *why, size_t cap)
{
    int ret = create_shm(cfg, s);
    const char **names = ret == 0 ? malloc((size_t)cfg->num_segments * sizeof(*names)) : NULL;
    if (ret == 0 && !names)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; ret == 0 && id < cfg->num_segments; id++)
        names[id] = s->shm[id].name;
    if (ret == 0) {
        const shmb_path_view_t view = view_of(cfg, s, names);
        ret = path_setup(s, SHMB_LOOKUP_MOONCAKE, &view);
    }
    if (ret == 0)
        ret = first_uses(cfg, s, why, cap);
    free(names);
    return ret;
}

/* ---- translation through each path ---- */

static void *translate(const setup_t *s, int path, const shmb_lookup_request_t *r)
{
    return shmb_path_table[path].translate(&shmb_path_table[path], &s->state, r);
}

/* One timed batch of window `win`, throughput or latency. */
static uint64_t timed_batch(const setup_t *s, int path, int latency, size_t win)
{
    const shmb_path_t *p = &shmb_path_table[path];
    const size_t w = (size_t)s->window;
    return latency ? p->chain(p, &s->state, s->requests + win * w, s->expected + win * w, w)
                   : p->batch(p, &s->state, s->requests + win * w, w);
}

/* The 8-byte word that holds the byte at p. */
static uint64_t word_at(const void *p)
{
    uint64_t word;
    memcpy(&word, (const void *)((uintptr_t)p & ~(uintptr_t)7), sizeof(word));
    return word;
}

/* Every request, translated one by one, must land where it was made from;
 * in the peer, the word there must hold the tag the owner wrote. */
static int verify(const setup_t *s, int path, uint64_t n, char *why, size_t cap)
{
    for (uint64_t k = 0; k < n; k++) {
        const shmb_lookup_request_t *r = &s->requests[k];
        void *want = (void *)(uintptr_t)s->expected[k];
        void *got = translate(s, path, r);
        if (got != want) {
            snprintf(why, cap, "%s translated request %llu (peer 0x%llx, %llu bytes) to %p, expected %p",
                     path_name(path), (unsigned long long)k, (unsigned long long)r->addr,
                     (unsigned long long)r->len, got, want);
            return -EPROTO;
        }
        if (s->tags && word_at(got) != s->tags[k]) {
            snprintf(why, cap, "%s: request %llu translated to %p, whose word holds 0x%llx, not the owner's tag 0x%llx",
                     path_name(path), (unsigned long long)k, got, (unsigned long long)word_at(got),
                     (unsigned long long)s->tags[k]);
            return -EPROTO;
        }
    }
    return 0;
}

static shmb_row_t row_template(const shmb_lookup_config_t *cfg, int path)
{
    return shmb_row_make(cfg->system_rows ? "" : path_name(path), "segments", cfg->num_segments,
                         cfg->repetition);
}

/* ---- timing: one thread, or several at once ---- */

/* The threads timing one path together. */
typedef struct crew {
    const setup_t *s;
    int path;
    int latency;
    int threads;
    const int *cpus;         /* thread i's CPU; NULL: not pinned */
    cpu_set_t allowed;       /* where unpinned threads run (threads > 1) */
    uint64_t budget_ns;      /* thread 0's timed batches, at least */
    atomic_int go;           /* 0: wait, 1: run, -1: give up (a thread could not start) */
    pthread_barrier_t start;
    atomic_int stop;         /* 1: every thread stops after its batch */
    atomic_int short_of_min; /* threads that have timed fewer than SHMB_LOOKUP_MIN_BATCHES */
} crew_t;

/* One thread of the crew and what it measured. */
typedef struct runner {
    crew_t *crew;
    int index;
    shmb_samples_t samples;  /* ns per lookup of each batch */
    uint64_t start_ns, end_ns;
    int ret;                 /* 0, -EPROTO (why says more) or -errno (error says more) */
    char why[200];
    shmb_error_t error;
} runner_t;

static void runner_fail(runner_t *r, int ret)
{
    r->ret = ret;
    r->error = *shmb_error_last();
    atomic_store_explicit(&r->crew->stop, 1, memory_order_relaxed);
}

/* Times batches until told to stop: thread i starts at window
 * i x windows / threads and walks on; each batch's checksum is checked.
 * Thread 0 says stop once its batches took budget_ns and every thread has
 * timed SHMB_LOOKUP_MIN_BATCHES. */
static void run_batches(runner_t *r)
{
    crew_t *c = r->crew;
    const setup_t *s = c->s;
    const size_t w = (size_t)s->window;
    size_t win = (size_t)((uint64_t)r->index * s->windows / (uint64_t)c->threads);
    uint64_t spent = 0;
    r->start_ns = shmb_clock_now_ns();
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        uint64_t t0 = shmb_clock_now_ns();
        uint64_t sum = timed_batch(s, c->path, c->latency, win);
        uint64_t t1 = shmb_clock_now_ns();
        if (sum != s->expected_sum[win]) {
            snprintf(r->why, sizeof(r->why), "%s%s, thread %d: checksum of a timed batch is 0x%llx, expected 0x%llx",
                     path_name(c->path), c->latency ? " latency" : "", r->index, (unsigned long long)sum,
                     (unsigned long long)s->expected_sum[win]);
            runner_fail(r, -EPROTO);
            break;
        }
        if (shmb_stats_append(&r->samples, (double)(t1 - t0) / (double)w) < 0) {
            runner_fail(r, shmb_error_record("malloc", ENOMEM, NULL));
            break;
        }
        spent += t1 - t0;
        if (r->samples.n == SHMB_LOOKUP_MIN_BATCHES)
            atomic_fetch_sub_explicit(&c->short_of_min, 1, memory_order_relaxed);
        if (r->index == 0 && spent >= c->budget_ns &&
            atomic_load_explicit(&c->short_of_min, memory_order_relaxed) == 0)
            atomic_store_explicit(&c->stop, 1, memory_order_relaxed);
        win = (win + 1) % (size_t)s->windows;
    }
    r->end_ns = shmb_clock_now_ns();
}

/* Pins the calling thread to its CPU, or lets it run on every allowed one. */
static int place_thread(const crew_t *c, int i)
{
    char object[32];
    if (c->cpus) {
        int ret = shmb_sysinfo_pin_cpu(c->cpus[i]);
        snprintf(object, sizeof(object), "CPU %d", c->cpus[i]);
        return ret < 0 ? shmb_error_record("sched_setaffinity", -ret, object) : 0;
    }
    if (sched_setaffinity(0, sizeof(c->allowed), &c->allowed) != 0)
        return shmb_error_record("sched_setaffinity", errno, "the allowed CPUs");
    return 0;
}

static void *runner_main(void *arg)
{
    runner_t *r = arg;
    crew_t *c = r->crew;
    int go;
    while ((go = atomic_load_explicit(&c->go, memory_order_acquire)) == 0)
        sched_yield();
    if (go < 0)
        return NULL;
    int ret = place_thread(c, r->index);
    if (ret < 0)
        runner_fail(r, ret);
    else
        shmb_escape((void *)(uintptr_t)timed_batch(c->s, c->path, c->latency, 0)); /* warm up */
    pthread_barrier_wait(&c->start);
    if (r->ret == 0)
        run_batches(r);
    return NULL;
}

/* Fills where the crew's threads run: their CPUs, or the allowed set. */
static int plan_crew(const shmb_lookup_config_t *cfg, crew_t *c, int *cpus)
{
    int pinned = shmb_sysinfo_plan_cpus(cfg->cpu, cfg->threads, cpus);
    if (pinned < 0)
        return pinned;
    c->cpus = pinned ? cpus : NULL;
    /* not pinned: more threads than allowed CPUs, so the wrapped plan names every one */
    CPU_ZERO(&c->allowed);
    for (int i = 0; i < cfg->threads; i++)
        CPU_SET(cpus[i], &c->allowed);
    return 0;
}

/* Starts the crew's threads together and joins them. Returns 0 or the
 * error of pthread_create. */
static int run_crew(crew_t *c, runner_t *runners)
{
    pthread_t *tids = calloc((size_t)c->threads, sizeof(*tids));
    if (!tids)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = pthread_barrier_init(&c->start, NULL, (unsigned)c->threads);
    if (ret != 0) {
        free(tids);
        return shmb_error_record("pthread_barrier_init", ret, NULL);
    }
    int started = 0;
    for (; started < c->threads; started++) {
        int err = pthread_create(&tids[started], NULL, runner_main, &runners[started]);
        if (err != 0) {
            ret = shmb_error_record("pthread_create", err, NULL);
            break;
        }
    }
    atomic_store_explicit(&c->go, ret == 0 ? 1 : -1, memory_order_release);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&c->start);
    free(tids);
    return ret;
}

/* A timed row of a path: samples[0..count) ns per lookup (reordered), each
 * of a batch of `window` lookups, over a pool of `pool` verified requests. */
static int timed_row(const shmb_lookup_config_t *cfg, int path, int latency, int threads, double *samples,
                     size_t count, uint64_t window, uint64_t pool, shmb_rows_t *rows)
{
    shmb_row_t row = row_template(cfg, path);
    if (latency)
        snprintf(row.step, sizeof(row.step), "latency");
    row.threads = threads;
    row.iterations = count * window;
    snprintf(row.note, sizeof(row.note), "verified %llu/%llu", (unsigned long long)pool, (unsigned long long)pool);
    return shmb_rows_push_samples(rows, &row, samples, count);
}

/* The row of a crew's batches: every thread's samples together; with
 * several threads, items_per_second is all threads' lookups / wall time. */
static int crew_row(const shmb_lookup_config_t *cfg, const crew_t *c, runner_t *runners, shmb_rows_t *rows)
{
    size_t total = 0;
    uint64_t first = UINT64_MAX, last = 0;
    for (int i = 0; i < c->threads; i++) {
        total += runners[i].samples.n;
        first = runners[i].start_ns < first ? runners[i].start_ns : first;
        last = runners[i].end_ns > last ? runners[i].end_ns : last;
    }
    double *all = malloc(total * sizeof(double));
    if (!all)
        return shmb_error_record("malloc", ENOMEM, NULL);
    size_t at = 0;
    for (int i = 0; i < c->threads; i++) {
        memcpy(all + at, runners[i].samples.v, runners[i].samples.n * sizeof(double));
        at += runners[i].samples.n;
    }
    int ret = timed_row(cfg, c->path, c->latency, c->threads, all, total, c->s->window,
                        c->s->window * c->s->windows, rows);
    if (ret == 0 && c->threads > 1 && last > first)
        rows->v[rows->n - 1].items_per_second =
            (double)(total * c->s->window) * 1e9 / (double)(last - first);
    free(all);
    return ret;
}

/* Times one path, throughput or latency, on cfg->threads threads (the
 * calling thread alone when 1), and appends its row; or, given keep (one
 * thread: the peer), hands over the samples instead. */
static int measure(const shmb_lookup_config_t *cfg, const setup_t *s, int path, int latency,
                   shmb_rows_t *rows, shmb_samples_t *keep, char *why, size_t cap)
{
    crew_t c = {.s = s, .path = path, .latency = latency, .threads = cfg->threads,
                .budget_ns = (uint64_t)(cfg->min_time_ms * 1e6)};
    atomic_init(&c.go, 0);
    atomic_init(&c.stop, 0);
    atomic_init(&c.short_of_min, cfg->threads);
    runner_t *runners = calloc((size_t)cfg->threads, sizeof(*runners));
    int *cpus = calloc((size_t)cfg->threads, sizeof(int));
    int ret = runners && cpus ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (int i = 0; ret == 0 && i < cfg->threads; i++)
        runners[i] = (runner_t){.crew = &c, .index = i};
    if (ret == 0 && cfg->threads == 1) {
        shmb_escape((void *)(uintptr_t)timed_batch(s, path, latency, 0)); /* warm up */
        run_batches(&runners[0]);
    } else if (ret == 0 && (ret = plan_crew(cfg, &c, cpus)) == 0) {
        ret = run_crew(&c, runners);
    }
    for (int i = 0; ret == 0 && i < cfg->threads; i++) {
        if ((ret = runners[i].ret) == -EPROTO)
            snprintf(why, cap, "%s", runners[i].why);
        else if (ret < 0 && runners[i].error.call)
            shmb_error_record(runners[i].error.call, runners[i].error.err, runners[i].error.object);
    }
    if (ret == 0 && keep) {
        *keep = runners[0].samples;
        runners[0].samples = (shmb_samples_t){0};
    } else if (ret == 0) {
        ret = crew_row(cfg, &c, runners, rows);
    }
    for (int i = 0; runners && i < cfg->threads; i++)
        shmb_stats_release(&runners[i].samples);
    free(runners);
    free(cpus);
    return ret;
}

/* A row of a set-up step timed one by one (first_use, attach): samples
 * (reordered), or unmeasured when the path has no such step (NULL). */
static int setup_row(const shmb_lookup_config_t *cfg, int path, const char *step, const char *note,
                     shmb_samples_t *samples, shmb_rows_t *rows)
{
    shmb_row_t row = row_template(cfg, path);
    snprintf(row.step, sizeof(row.step), "%s", step);
    if (!samples)
        return shmb_rows_push(rows, &row);
    row.iterations = samples->n;
    snprintf(row.note, sizeof(row.note), "%s", note);
    return shmb_rows_push_samples(rows, &row, samples->v, samples->n);
}

#define FIRST_USE_NOTE "shm_open + mmap, once a buffer"

/* The first_use row: mooncake's attach on each buffer's first request;
 * unmeasured for a system that has none here. */
static int first_use_row(const shmb_lookup_config_t *cfg, setup_t *s, int path, shmb_rows_t *rows)
{
    return setup_row(cfg, path, "first_use", FIRST_USE_NOTE, path == SHMB_LOOKUP_MOONCAKE ? &s->first_use : NULL,
                     rows);
}

static int run_paths(const shmb_lookup_config_t *cfg, setup_t *s, shmb_rows_t *rows, char *why,
                     size_t cap)
{
    int ret = 0;
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        const shmb_path_view_t view = view_of(cfg, s, NULL);
        if (p == SHMB_LOOKUP_MOONCAKE && path_runs(cfg, p))
            ret = setup_mooncake(cfg, s, why, cap);
        else if (path_runs(cfg, p))
            ret = path_setup(s, p, &view);
    }
    /* Correctness first: no path is timed unless every one translates right. */
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++)
        if (path_runs(cfg, p))
            ret = verify(s, p, s->window * s->windows, why, cap);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!path_runs(cfg, p))
            continue;
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = measure(cfg, s, p, 0, rows, NULL, why, cap);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = measure(cfg, s, p, 1, rows, NULL, why, cap);
        if (ret == 0 && (p == SHMB_LOOKUP_MOONCAKE || (cfg->system_rows && p < SHMB_LOOKUP_SYSTEMS)))
            ret = first_use_row(cfg, s, p, rows);
    }
    return ret;
}

/* ---- two processes: the owner creates and tags, the peer attaches and translates ---- */

#define PEER_DATA_BYTES (1u << 20) /* the shared data area: a chunk of metadata or samples, or a why */

/* The sample sets the peer keeps per path. */
enum { KIND_THROUGHPUT, KIND_LATENCY, KIND_SETUP, KINDS };

/* The objects of one group are made, published, translated into and
 * dropped before the next group's are made. */
enum { GROUP_SEGMENTS, GROUP_CLASSIC, GROUP_JEMALLOC };

/* The peer's commands. */
enum {
    OP_OBJECTS = 1, /* arg: first, count, total; data: peer_object_t[count] */
    OP_BLOCKS,      /* arg: first, count; data: peer_block_t[count] (by segment id) */
    OP_RUN,         /* arg: group; attach, verify, time; data on -EPROTO: why */
    OP_SAMPLES,     /* arg: path, kind, first; data: doubles; result: copied, total */
    OP_RELEASE,     /* arg: group; unmap its objects */
};

/* One SHM object the owner publishes. */
typedef struct peer_object {
    char name[SHMB_SEGMENT_NAME_MAX + 1];
    uint64_t key;   /* mooncake: the buffer's address in the owner; flowipc_jemalloc: the pool id */
    uint64_t bytes; /* its length */
} peer_object_t;

/* Where segment id's block lies, by segment id. */
typedef struct peer_block {
    uint64_t key;    /* flowipc_classic: the block's handle (offset in the pool); flowipc_jemalloc: pool id */
    uint64_t offset; /* flowipc_jemalloc: the block's offset in its pool */
} peer_block_t;

/* The peer's state: its copy (from the fork) of the configuration, and what
 * it learnt and measured. */
typedef struct peer_side {
    const shmb_lookup_config_t *cfg;
    setup_t s;
    int prepared;
    peer_object_t *objects; /* the current group's */
    uint64_t nobjects;
    peer_block_t *blocks;   /* num_segments */
    void *classic_pool;     /* flowipc_classic: the pool's mapping */
    size_t classic_bytes;
    void **pool_map;        /* flowipc_jemalloc: each pool's mapping, by object index */
    int *pool_fd;
    uint64_t pools_attached;
    shmb_samples_t samples[SHMB_PATHS][KINDS];
} peer_side_t;

/* The tag the owner writes at the 8-byte word holding the first byte of a
 * request at `offset` in segment id: distinct for every word of every
 * segment (an odd multiple of a bijection), never 0, which a sparse page
 * reads as. */
static uint64_t tag_of(uint64_t segment_bytes, uint64_t id, uint64_t offset)
{
    return ((id * segment_bytes + (offset & ~7ull)) * 2 + 1) * 0x9e3779b97f4a7c15ull;
}

static int is_kernel(int path)
{
    return path >= SHMB_LOOKUP_SYSTEMS;
}

static int any_kernel(const shmb_lookup_config_t *cfg)
{
    int any = 0;
    for (int k = 0; k < SHMB_LOOKUP_STRATEGIES; k++)
        any |= cfg->run[k] != 0;
    return any;
}

/* The group whose objects a path translates into. */
static int group_of(int path)
{
    return path == SHMB_LOOKUP_FLOWIPC_CLASSIC ? GROUP_CLASSIC
           : path == SHMB_LOOKUP_FLOWIPC_JEMALLOC ? GROUP_JEMALLOC
                                                  : GROUP_SEGMENTS;
}

/* The peer's pool of requests, as the owner makes it from the same seed,
 * and each one's tag. */
static int peer_prepare(peer_side_t *ps)
{
    if (ps->prepared)
        return 0;
    setup_t *s = &ps->s;
    int ret = prepare(ps->cfg, s);
    if (ret < 0)
        return ret;
    ps->prepared = 1;
    const uint64_t total = s->window * s->windows, size = ps->cfg->segment_size_mb << 20;
    s->made = malloc((size_t)total * sizeof(*s->made));
    s->tags = malloc((size_t)total * sizeof(*s->tags));
    ps->blocks = calloc((size_t)ps->cfg->num_segments, sizeof(*ps->blocks));
    if (!s->made || !s->tags || !ps->blocks)
        return shmb_error_record("malloc", ENOMEM, NULL);
    memcpy(s->made, s->requests, (size_t)total * sizeof(*s->made));
    for (uint64_t k = 0; k < total; k++)
        s->tags[k] = tag_of(size, s->made[k].id, s->made[k].offset);
    return 0;
}

/* Rewrites the requests for a path from the requests as made: the handle
 * of flowipc_classic (block handle + offset), the (pool id, offset in the
 * pool) of flowipc_jemalloc, the segment's own (id, offset) for the others;
 * and where each must land in this process, with each window's sum. */
static int aim(peer_side_t *ps, int path, char *why, size_t cap)
{
    setup_t *s = &ps->s;
    const uint64_t total = s->window * s->windows;
    memset(s->expected_sum, 0, (size_t)s->windows * sizeof(uint64_t));
    for (uint64_t k = 0; k < total; k++) {
        shmb_lookup_request_t r = s->made[k];
        const peer_block_t *b = &ps->blocks[r.id];
        uint64_t want;
        if (path == SHMB_LOOKUP_FLOWIPC_CLASSIC) {
            r.pool_offset = b->key + r.offset;
            want = (uint64_t)(uintptr_t)s->state.pool_base + r.pool_offset;
        } else if (path == SHMB_LOOKUP_FLOWIPC_JEMALLOC) {
            uint64_t i = 0;
            while (i < ps->pools_attached && ps->objects[i].key != b->key)
                i++;
            if (i == ps->pools_attached) {
                snprintf(why, cap, "flowipc_jemalloc: the block of segment %u lies in pool %llu, which the owner "
                         "did not publish", (unsigned)r.id, (unsigned long long)b->key);
                return -EPROTO;
            }
            r.id = (uint32_t)b->key;
            r.offset = b->offset + r.offset;
            want = (uint64_t)(uintptr_t)ps->pool_map[i] + r.offset;
        } else {
            want = (uint64_t)(uintptr_t)(s->segments[r.id].local_base + r.offset);
        }
        s->requests[k] = r;
        s->expected[k] = want;
        s->expected_sum[k / s->window] += want;
    }
    return 0;
}

/* Verifies every path of the group that runs, then times each: the samples
 * stay in the peer until the owner fetches them. */
static int peer_measure(peer_side_t *ps, int group, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = ps->cfg;
    const uint64_t total = ps->s.window * ps->s.windows;
    int ret = 0;
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++)
        if (path_runs(cfg, p) && group_of(p) == group && (ret = aim(ps, p, why, cap)) == 0)
            ret = verify(&ps->s, p, total, why, cap);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!path_runs(cfg, p) || group_of(p) != group || (ret = aim(ps, p, why, cap)) < 0)
            continue;
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = measure(cfg, &ps->s, p, 0, NULL, &ps->samples[p][KIND_THROUGHPUT], why, cap);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = measure(cfg, &ps->s, p, 1, NULL, &ps->samples[p][KIND_LATENCY], why, cap);
    }
    return ret;
}

/* Mooncake and the kernels, over the owner's segments: the model from the
 * published metadata, each buffer attached on its first request (timed), or
 * by the peer itself when only kernels run. */
static int peer_run_segments(peer_side_t *ps, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = ps->cfg;
    setup_t *s = &ps->s;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    if (ps->nobjects != n) {
        snprintf(why, cap, "the owner published %llu buffers, expected %llu", (unsigned long long)ps->nobjects,
                 (unsigned long long)n);
        return -EPROTO;
    }
    for (uint64_t id = 0; id < n; id++) {
        if (ps->objects[id].bytes != size) {
            snprintf(why, cap, "the owner published buffer %llu of %llu bytes, expected %llu",
                     (unsigned long long)id, (unsigned long long)ps->objects[id].bytes, (unsigned long long)size);
            return -EPROTO;
        }
        s->segments[id].peer_base = ps->objects[id].key;
    }
    for (uint64_t k = 0; k < s->window * s->windows; k++)
        s->made[k].addr = s->segments[s->made[k].id].peer_base + s->made[k].offset;
    const char **names = malloc((size_t)n * sizeof(*names));
    int ret = names ? alloc_slots(cfg, s) : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; ret == 0 && id < n; id++)
        names[id] = ps->objects[id].name;
    const shmb_path_view_t view = view_of(cfg, s, names);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++)
        if (path_runs(cfg, p) && group_of(p) == GROUP_SEGMENTS)
            ret = path_setup(s, p, &view);
    if (ret == -EINVAL) {
        snprintf(why, cap, "the owner published overlapping buffers");
        ret = -EPROTO;
    }
    if (ret == 0 && cfg->run_system[SHMB_LOOKUP_MOONCAKE]) {
        ret = first_uses(cfg, s, why, cap);
        ps->samples[SHMB_LOOKUP_MOONCAKE][KIND_SETUP] = s->first_use;
        s->first_use = (shmb_samples_t){0};
    }
    for (uint64_t id = 0; ret == 0 && !cfg->run_system[SHMB_LOOKUP_MOONCAKE] && id < n; id++) {
        void *local;
        ret = attach_at_slot(s, (size_t)id, names[id], size, &local);
    }
    free(names);
    return ret == 0 ? peer_measure(ps, GROUP_SEGMENTS, why, cap) : ret;
}

/* flowipc_classic: the pool attached once (timed), then handles. */
static int peer_run_classic(peer_side_t *ps, char *why, size_t cap)
{
    if (ps->nobjects != 1) {
        snprintf(why, cap, "flowipc_classic: the owner published %llu pools, expected 1",
                 (unsigned long long)ps->nobjects);
        return -EPROTO;
    }
    void *base;
    size_t bytes;
    uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_fipc_classic_attach(ps->objects[0].name, &base, &bytes);
    uint64_t t1 = shmb_clock_now_ns();
    if (ret < 0)
        return ret;
    ps->classic_pool = base;
    ps->classic_bytes = bytes;
    if (bytes != ps->objects[0].bytes) {
        snprintf(why, cap, "flowipc_classic: the pool holds %zu bytes, the owner published %llu", bytes,
                 (unsigned long long)ps->objects[0].bytes);
        return -EPROTO;
    }
    const shmb_path_view_t view = {.pool_base = base, .pool_bytes = bytes};
    if ((ret = path_setup(&ps->s, SHMB_LOOKUP_FLOWIPC_CLASSIC, &view)) < 0)
        return ret;
    if (shmb_stats_append(&ps->samples[SHMB_LOOKUP_FLOWIPC_CLASSIC][KIND_SETUP], (double)(t1 - t0)) < 0)
        return shmb_error_record("malloc", ENOMEM, NULL);
    return peer_measure(ps, GROUP_CLASSIC, why, cap);
}

/* flowipc_jemalloc's repository over the attached pools, each under the
 * owner's pool id, then handles. */
static int enter_pools(peer_side_t *ps, char *why, size_t cap)
{
    const uint64_t n = ps->pools_attached;
    shmb_lookup_segment_t *pools = calloc((size_t)(n ? n : 1), sizeof(*pools));
    uint32_t *ids = calloc((size_t)(n ? n : 1), sizeof(*ids));
    int ret = pools && ids ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; ret == 0 && i < n; i++) {
        pools[i] = (shmb_lookup_segment_t){.size = ps->objects[i].bytes, .local_base = ps->pool_map[i]};
        ids[i] = (uint32_t)ps->objects[i].key;
    }
    const shmb_path_view_t view = {.segments = pools, .n = (size_t)n, .pool_ids = ids};
    if (ret == 0)
        ret = path_setup(&ps->s, SHMB_LOOKUP_FLOWIPC_JEMALLOC, &view);
    free(pools);
    free(ids);
    if (ret == -EEXIST || ret == -EINVAL) {
        snprintf(why, cap, "flowipc_jemalloc: the owner published no pool, a pool id twice, or pools that overlap");
        return -EPROTO;
    }
    return ret == 0 ? peer_measure(ps, GROUP_JEMALLOC, why, cap) : ret;
}

/* flowipc_jemalloc: every pool attached (each timed) and entered in our
 * repository under the owner's pool id, then handles. */
static int peer_run_jemalloc(peer_side_t *ps, char *why, size_t cap)
{
    const uint64_t n = ps->nobjects;
    ps->pool_map = calloc((size_t)(n ? n : 1), sizeof(*ps->pool_map));
    ps->pool_fd = calloc((size_t)(n ? n : 1), sizeof(*ps->pool_fd));
    if (!ps->pool_map || !ps->pool_fd)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        const peer_object_t *o = &ps->objects[i];
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_fipc_pool_attach(o->name, o->bytes, &ps->pool_map[i], &ps->pool_fd[i]);
        uint64_t t1 = shmb_clock_now_ns();
        if (ret < 0)
            break;
        ps->pools_attached++;
        if (shmb_stats_append(&ps->samples[SHMB_LOOKUP_FLOWIPC_JEMALLOC][KIND_SETUP], (double)(t1 - t0)) < 0)
            return shmb_error_record("malloc", ENOMEM, NULL);
        if (o->key > UINT32_MAX) {
            snprintf(why, cap, "flowipc_jemalloc: the owner published pool id %llu", (unsigned long long)o->key);
            return -EPROTO;
        }
    }
    return ret == 0 ? enter_pools(ps, why, cap) : ret;
}

/* Unmaps what the peer attached for a group. */
static void peer_release(peer_side_t *ps, int group)
{
    setup_t *s = &ps->s;
    for (int p = 0; p < SHMB_PATHS; p++)
        if (group_of(p) == group)
            path_teardown(s, p);
    if (group == GROUP_SEGMENTS) {
        release_slots(s);
    } else if (group == GROUP_CLASSIC && ps->classic_pool) {
        shmb_fipc_classic_detach(ps->classic_pool, ps->classic_bytes);
        ps->classic_pool = NULL;
    } else if (group == GROUP_JEMALLOC) {
        for (uint64_t i = 0; i < ps->pools_attached; i++)
            shmb_fipc_pool_detach(ps->pool_map[i], ps->objects[i].bytes, ps->pool_fd[i]);
        ps->pools_attached = 0;
        free(ps->pool_map);
        free(ps->pool_fd);
        ps->pool_map = NULL;
        ps->pool_fd = NULL;
    }
}

static int peer_objects(peer_side_t *ps, const uint64_t *arg, const void *data, size_t data_bytes)
{
    const uint64_t first = arg[0], count = arg[1], total = arg[2];
    if (first == 0) {
        peer_object_t *v = realloc(ps->objects, (size_t)(total ? total : 1) * sizeof(*v));
        if (!v)
            return shmb_error_record("malloc", ENOMEM, NULL);
        ps->objects = v;
        ps->nobjects = total;
    }
    if (first > ps->nobjects || count > ps->nobjects - first || count > data_bytes / sizeof(peer_object_t))
        return -EINVAL;
    memcpy(ps->objects + first, data, (size_t)count * sizeof(peer_object_t));
    for (uint64_t i = first; i < first + count; i++)
        ps->objects[i].name[SHMB_SEGMENT_NAME_MAX] = '\0';
    return 0;
}

static int peer_blocks(peer_side_t *ps, const uint64_t *arg, const void *data, size_t data_bytes)
{
    const uint64_t first = arg[0], count = arg[1], n = ps->cfg->num_segments;
    if (first > n || count > n - first || count > data_bytes / sizeof(peer_block_t))
        return -EINVAL;
    memcpy(ps->blocks + first, data, (size_t)count * sizeof(peer_block_t));
    return 0;
}

static int peer_samples(peer_side_t *ps, const uint64_t *arg, void *data, size_t data_bytes,
                        uint64_t result[SHMB_PEER_RESULTS])
{
    if (arg[0] >= SHMB_PATHS || arg[1] >= KINDS)
        return -EINVAL;
    const shmb_samples_t *set = &ps->samples[arg[0]][arg[1]];
    const uint64_t first = arg[2] < set->n ? arg[2] : set->n;
    uint64_t count = set->n - first;
    if (count > data_bytes / sizeof(double))
        count = data_bytes / sizeof(double);
    if (count)
        memcpy(data, set->v + first, (size_t)count * sizeof(double));
    result[0] = count;
    result[1] = set->n;
    return 0;
}

/* The peer's handler (in the peer process). */
static int peer_handler(void *ctx, const shmb_peer_cmd_t *cmd, void *data, size_t data_bytes,
                        uint64_t result[SHMB_PEER_RESULTS])
{
    peer_side_t *ps = ctx;
    int ret = peer_prepare(ps);
    if (ret < 0)
        return ret;
    switch (cmd->op) {
    case OP_OBJECTS:
        return peer_objects(ps, cmd->arg, data, data_bytes);
    case OP_BLOCKS:
        return peer_blocks(ps, cmd->arg, data, data_bytes);
    case OP_RUN: {
        char why[256] = "";
        ret = cmd->arg[0] == GROUP_SEGMENTS ? peer_run_segments(ps, why, sizeof(why))
              : cmd->arg[0] == GROUP_CLASSIC ? peer_run_classic(ps, why, sizeof(why))
                                             : peer_run_jemalloc(ps, why, sizeof(why));
        if (ret == -EPROTO)
            snprintf(data, data_bytes, "%s", why);
        return ret;
    }
    case OP_SAMPLES:
        return peer_samples(ps, cmd->arg, data, data_bytes, result);
    case OP_RELEASE:
        peer_release(ps, (int)cmd->arg[0]);
        return 0;
    default:
        return -ENOSYS;
    }
}

/* The owner's side of a run. */
typedef struct owner {
    const shmb_lookup_config_t *cfg;
    setup_t *s;
    shmb_peer_t *peer;
    shmb_samples_t got[SHMB_PATHS][KINDS]; /* what the peer measured */
} owner_t;

static int owner_call(owner_t *o, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t result[SHMB_PEER_RESULTS])
{
    return shmb_peer_command(o->peer, op, a0, a1, a2, 0, NULL, result);
}

static int publish_objects(owner_t *o, const peer_object_t *objects, uint64_t total)
{
    const uint64_t chunk = PEER_DATA_BYTES / sizeof(peer_object_t);
    int ret = 0;
    for (uint64_t first = 0; ret == 0 && (first < total || first == 0); first += chunk) {
        const uint64_t count = total - first < chunk ? total - first : chunk;
        memcpy(o->peer->data, objects + first, (size_t)count * sizeof(*objects));
        ret = owner_call(o, OP_OBJECTS, first, count, total, NULL);
        if (total == 0)
            break;
    }
    return ret;
}

static int publish_blocks(owner_t *o, const peer_block_t *blocks)
{
    const uint64_t chunk = PEER_DATA_BYTES / sizeof(peer_block_t), n = o->cfg->num_segments;
    int ret = 0;
    for (uint64_t first = 0; ret == 0 && first < n; first += chunk) {
        const uint64_t count = n - first < chunk ? n - first : chunk;
        memcpy(o->peer->data, blocks + first, (size_t)count * sizeof(*blocks));
        ret = owner_call(o, OP_BLOCKS, first, count, 0, NULL);
    }
    return ret;
}

/* Every sample of one set, in chunks through the data area. */
static int fetch(owner_t *o, int path, int kind)
{
    uint64_t first = 0, r[SHMB_PEER_RESULTS];
    do {
        int ret = owner_call(o, OP_SAMPLES, (uint64_t)path, (uint64_t)kind, first, r);
        if (ret < 0)
            return ret;
        const double *v = o->peer->data;
        for (uint64_t i = 0; i < r[0]; i++)
            if (shmb_stats_append(&o->got[path][kind], v[i]) < 0)
                return shmb_error_record("malloc", ENOMEM, NULL);
        first += r[0];
    } while (first < r[1] && r[0] > 0);
    return 0;
}

/* The peer attaches, verifies and times a group; the owner fetches what it
 * measured, then the peer lets the objects go. */
static int run_group(owner_t *o, int group, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    int ret = owner_call(o, OP_RUN, (uint64_t)group, 0, 0, NULL);
    if (ret == -EPROTO)
        snprintf(why, cap, "%s", (const char *)o->peer->data);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!path_runs(cfg, p) || group_of(p) != group)
            continue;
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = fetch(o, p, KIND_THROUGHPUT);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = fetch(o, p, KIND_LATENCY);
        if (ret == 0 && !is_kernel(p))
            ret = fetch(o, p, KIND_SETUP);
    }
    if (ret != -EPIPE) {
        int released = owner_call(o, OP_RELEASE, (uint64_t)group, 0, 0, NULL);
        ret = ret == 0 ? released : ret;
    }
    return ret;
}

static void copy_word(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

/* The owner writes each request's tag at the word of its first byte;
 * at[id] is where segment id's bytes begin in the owner. The pages were not
 * reserved: a /dev/shm that fills is -ENOSPC, not a SIGBUS. */
static int write_tags(owner_t *o, unsigned char *const *at)
{
    const setup_t *s = o->s;
    const uint64_t size = o->cfg->segment_size_mb << 20;
    for (uint64_t k = 0; k < s->window * s->windows; k++) {
        const shmb_lookup_request_t *r = &s->requests[k];
        const uint64_t tag = tag_of(size, r->id, r->offset);
        int ret = shmb_segment_first_write_copy(at[r->id] + (r->offset & ~7ull), &tag, sizeof(tag), copy_word);
        if (ret < 0)
            return ret;
    }
    return 0;
}

typedef struct ranked {
    uint64_t key;
    uint64_t index;
} ranked_t;

static int by_key(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Mooncake's segments (and the kernels'): created and mapped as
 * createSharedMemory does, the segment registered i-th getting the mapping
 * whose rank by address is that of its placed base (the placement's order
 * over real addresses), tagged and published as TransferMetadata's
 * BufferDescs (name, address, length). */
static int owner_segments(owner_t *o, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    shmb_segment_t *shm = calloc((size_t)n, sizeof(*shm));
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    peer_object_t *objects = calloc((size_t)n, sizeof(*objects));
    ranked_t *placed = malloc((size_t)n * sizeof(*placed)), *mapped = malloc((size_t)n * sizeof(*mapped));
    uint64_t created = 0;
    int ret = shm && at && objects && placed && mapped ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (; ret == 0 && created < n; created++) {
        ret = shmb_segment_create(&shm[created], cfg->shm_prefix, (size_t)size, NULL, NULL);
        if (ret < 0)
            break;
        if ((ret = shmb_segment_map(&shm[created], NULL)) == 0)
            ret = shmb_segment_close(&shm[created], NULL);
    }
    for (uint64_t i = 0; ret == 0 && i < n; i++) {
        placed[i] = (ranked_t){o->s->segments[i].peer_base, i};
        mapped[i] = (ranked_t){(uint64_t)(uintptr_t)shm[i].addr, i};
    }
    if (ret == 0) {
        qsort(placed, (size_t)n, sizeof(*placed), by_key);
        qsort(mapped, (size_t)n, sizeof(*mapped), by_key);
    }
    for (uint64_t rank = 0; ret == 0 && rank < n; rank++) {
        const shmb_segment_t *seg = &shm[mapped[rank].index];
        peer_object_t *obj = &objects[placed[rank].index];
        at[placed[rank].index] = seg->addr;
        snprintf(obj->name, sizeof(obj->name), "%s", seg->name);
        obj->key = (uint64_t)(uintptr_t)seg->addr;
        obj->bytes = size;
    }
    if (ret == 0)
        ret = write_tags(o, at);
    if (ret == 0)
        ret = publish_objects(o, objects, n);
    if (ret == 0)
        ret = run_group(o, GROUP_SEGMENTS, why, cap);
    for (uint64_t i = 0; shm && i < created; i++)
        shmb_segment_destroy(&shm[i], NULL);
    free(shm);
    free(at);
    free(objects);
    free(placed);
    free(mapped);
    return ret;
}

/* flowipc_classic: one pool, one block of a segment's size per segment,
 * tagged; published: the pool's name and size, each block's handle. */
static int owner_classic(owner_t *o, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    shmb_fipc_classic_t *pool = NULL;
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    peer_block_t *blocks = calloc((size_t)n, sizeof(*blocks));
    int ret = at && blocks ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    /* Room for the segment manager and each block's header and alignment. */
    if (ret == 0)
        ret = shmb_fipc_classic_create(cfg->shm_prefix, (size_t)(n * (size + 4096) + (1u << 20)), &pool);
    unsigned char *base = pool ? shmb_fipc_classic_base(pool) : NULL;
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        if ((ret = shmb_fipc_classic_alloc(pool, (size_t)size, &block)) < 0)
            break;
        at[id] = block;
        blocks[id].key = (uint64_t)((unsigned char *)block - base);
    }
    if (ret == 0)
        ret = write_tags(o, at);
    peer_object_t object;
    memset(&object, 0, sizeof(object));
    if (ret == 0) {
        snprintf(object.name, sizeof(object.name), "%s", shmb_fipc_classic_name(pool));
        object.bytes = shmb_fipc_classic_size(pool);
        ret = publish_objects(o, &object, 1);
    }
    if (ret == 0)
        ret = publish_blocks(o, blocks);
    if (ret == 0)
        ret = run_group(o, GROUP_CLASSIC, why, cap);
    shmb_fipc_classic_destroy(pool, 1);
    free(at);
    free(blocks);
    return ret;
}

/* flowipc_jemalloc: the arena allocates one block per segment (its extent
 * hooks create the pools), tagged; published: every pool (id, name, size)
 * and each block's (pool id, offset in the pool). */
static int owner_jemalloc(owner_t *o, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = o->cfg;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    shmb_fipc_jemalloc_t *j = NULL;
    unsigned char **at = malloc((size_t)n * sizeof(*at));
    peer_block_t *blocks = calloc((size_t)n, sizeof(*blocks));
    shmb_fipc_pool_t *pools = NULL;
    peer_object_t *objects = NULL;
    int ret = at && blocks ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0)
        ret = shmb_fipc_jemalloc_create(cfg->shm_prefix, 0, &j);
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        uint32_t pool_id;
        if ((ret = shmb_fipc_jemalloc_alloc(j, (size_t)size, &block)) < 0)
            break;
        at[id] = block;
        ret = shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(j), block, &pool_id, &blocks[id].offset);
        blocks[id].key = pool_id;
    }
    if (ret == 0)
        ret = write_tags(o, at);
    const size_t npools = ret == 0 ? shmb_fipc_jemalloc_pool_list(j, NULL, 0) : 0;
    if (ret == 0) {
        pools = calloc(npools ? npools : 1, sizeof(*pools));
        objects = calloc(npools ? npools : 1, sizeof(*objects));
        if (!pools || !objects)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    if (ret == 0 && shmb_fipc_jemalloc_pool_list(j, pools, npools) != npools)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t i = 0; ret == 0 && i < npools; i++) {
        snprintf(objects[i].name, sizeof(objects[i].name), "%s", pools[i].name);
        objects[i].key = pools[i].id;
        objects[i].bytes = pools[i].bytes;
    }
    if (ret == 0)
        ret = publish_objects(o, objects, npools);
    if (ret == 0)
        ret = publish_blocks(o, blocks);
    if (ret == 0)
        ret = run_group(o, GROUP_JEMALLOC, why, cap);
    shmb_fipc_jemalloc_destroy(j, 1, NULL);
    free(at);
    free(blocks);
    free(pools);
    free(objects);
    return ret;
}

/* The rows of what the peer measured, in one process's order. */
static int peer_rows(const shmb_lookup_config_t *cfg, owner_t *o, shmb_rows_t *rows)
{
    const uint64_t window = o->s->window, pool = o->s->window * o->s->windows;
    int ret = 0;
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!path_runs(cfg, p))
            continue;
        shmb_samples_t *got = o->got[p];
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = timed_row(cfg, p, 0, 1, got[KIND_THROUGHPUT].v, got[KIND_THROUGHPUT].n, window, pool, rows);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = timed_row(cfg, p, 1, 1, got[KIND_LATENCY].v, got[KIND_LATENCY].n, window, pool, rows);
        if (ret == 0 && (p == SHMB_LOOKUP_MOONCAKE || (cfg->system_rows && !is_kernel(p))))
            ret = setup_row(cfg, p, "first_use", FIRST_USE_NOTE,
                            p == SHMB_LOOKUP_MOONCAKE ? &got[KIND_SETUP] : NULL, rows);
        if (ret == 0 && !is_kernel(p) && (p != SHMB_LOOKUP_MOONCAKE || cfg->system_rows))
            ret = setup_row(cfg, p, "attach",
                            p == SHMB_LOOKUP_FLOWIPC_CLASSIC ? "shm_open + fstat + mmap, the pool"
                                                             : "shm_open + mmap (read-only), per pool",
                            p == SHMB_LOOKUP_MOONCAKE ? NULL : &got[KIND_SETUP], rows);
    }
    return ret;
}

/* A run across two processes: the peer forked first (this process still
 * single-threaded), then, group by group, the owner's objects made and
 * tagged, the peer's measurement, the objects dropped. The first failure's
 * error survives the clean-up. */
static int run_peer(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why, size_t cap)
{
    peer_side_t side;
    memset(&side, 0, sizeof(side));
    side.cfg = cfg;
    shmb_peer_t peer;
    int ret = shmb_peer_start(&peer, cfg->shm_prefix, PEER_DATA_BYTES, peer_handler, &side);
    if (ret < 0)
        return ret;
    setup_t s;
    owner_t o;
    memset(&o, 0, sizeof(o));
    o.cfg = cfg;
    o.s = &s;
    o.peer = &peer;
    const int prepared = (ret = prepare(cfg, &s)) == 0;
    if (ret == 0 && (cfg->run_system[SHMB_LOOKUP_MOONCAKE] || any_kernel(cfg)))
        ret = owner_segments(&o, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_LOOKUP_FLOWIPC_CLASSIC])
        ret = owner_classic(&o, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_LOOKUP_FLOWIPC_JEMALLOC])
        ret = owner_jemalloc(&o, why, cap);
    const shmb_error_t failure = *shmb_error_last();
    int stopped = shmb_peer_stop(&peer);
    if (ret == 0)
        ret = stopped;
    else if (failure.call)
        shmb_error_record(failure.call, failure.err, failure.object);
    if (ret == 0)
        ret = peer_rows(cfg, &o, rows);
    if (prepared)
        teardown(&s);
    for (int p = 0; p < SHMB_PATHS; p++)
        for (int k = 0; k < KINDS; k++)
            shmb_stats_release(&o.got[p][k]);
    return ret;
}

int shmb_lookup_bench_run(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why,
                          size_t why_cap)
{
    int ret = shmb_lookup_bench_check(cfg);
    int systems = 0;
    for (int p = 0; p < SHMB_LOOKUP_SYSTEMS; p++)
        systems += cfg->run_system[p] != 0;
    if (ret == 0 && cfg->system_rows) {
        for (int k = 0; k < SHMB_LOOKUP_STRATEGIES; k++)
            ret = cfg->run[k] ? -EINVAL : ret;
        ret = systems == 1 ? ret : -EINVAL;
    }
    if (ret < 0)
        return ret;
    size_t first = rows->n;
    if (cfg->peer_process) {
        ret = run_peer(cfg, rows, why, why_cap);
    } else {
        setup_t s;
        ret = prepare(cfg, &s);
        if (ret < 0)
            return ret;
        ret = run_paths(cfg, &s, rows, why, why_cap);
        teardown(&s);
    }
    if (ret < 0 || cfg->system_rows)
        return ret;

    /* Each kind against the baseline's row of the same kind. */
    const char *baseline = cfg->run_system[SHMB_LOOKUP_MOONCAKE] ? "mooncake" : "linear";
    static const char *const kinds[] = {"", "latency"};
    for (int k = 0; k < 2; k++) {
        const shmb_row_t *base = shmb_rows_find(rows, baseline, kinds[k], cfg->num_segments, cfg->repetition);
        for (size_t i = first; base && i < rows->n; i++)
            if (strcmp(rows->v[i].step, kinds[k]) == 0)
                rows->v[i].speedup = base->ns.p50 / rows->v[i].ns.p50;
    }
    return 0;
}
