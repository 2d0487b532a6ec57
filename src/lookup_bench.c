#include "shmbench/lookup_bench.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/mooncake.h"
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

/* Paths: the systems first, then the kernels (path - SHMB_LOOKUP_SYSTEMS is
 * a shmb_lookup_strategy_t). */
enum { PATHS = SHMB_LOOKUP_SYSTEMS + SHMB_LOOKUP_STRATEGIES };

static const char *const system_names[SHMB_LOOKUP_SYSTEMS] = {"mooncake", "flowipc_classic",
                                                              "flowipc_jemalloc"};

const char *shmb_lookup_system_name(shmb_lookup_system_t system)
{
    return (unsigned)system < SHMB_LOOKUP_SYSTEMS ? system_names[system] : "unknown";
}

static const char *path_name(int path)
{
    return path < SHMB_LOOKUP_SYSTEMS
               ? system_names[path]
               : shmb_lookup_strategy_name((shmb_lookup_strategy_t)(path - SHMB_LOOKUP_SYSTEMS));
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
    shmb_lookup_table_t table;       /* the kernels' */
    shmb_segment_t *shm;             /* mooncake's real segments, by id (descriptors closed) */
    int *attach_fd;                  /* the descriptor each first use keeps open, by id (-1: none) */
    uint64_t shm_created;
    shmb_mooncake_t *mooncake;
    shmb_samples_t first_use;        /* ns of each buffer's first request (mooncake) */
    shmb_fipc_repo_t *repo;          /* flowipc_jemalloc's pools: one per segment */
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
        cfg->threads > SHMB_LOOKUP_MAX_THREADS)
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

int shmb_lookup_bench_thread_cpus(const shmb_lookup_config_t *cfg, int *cpus)
{
    if (cfg->threads < 2 || cfg->threads > SHMB_LOOKUP_MAX_THREADS)
        return -EINVAL;
    int *own = NULL;
    const int *allowed = cfg->cpus;
    int n = cfg->ncpus;
    if (!allowed) {
        if (!(own = malloc(sizeof(int) * CPU_SETSIZE)))
            return shmb_error_record("malloc", ENOMEM, NULL);
        n = shmb_sysinfo_allowed_cpus(own, CPU_SETSIZE);
        if (n <= 0) {
            free(own);
            return shmb_error_record("sched_getaffinity", n < 0 ? -n : ESRCH, NULL);
        }
        allowed = own;
    }
    const int pinned = cfg->threads <= n;
    if (pinned) {
        int first = 0;
        while (cfg->cpu >= 0 && first < n && allowed[first] < cfg->cpu)
            first++;
        for (int i = 0; i < cfg->threads; i++)
            cpus[i] = allowed[(first + i) % n];
    }
    free(own);
    return pinned;
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

static void teardown(setup_t *s)
{
    shmb_mooncake_destroy(s->mooncake);
    shmb_fipc_repo_destroy(s->repo);
    for (uint64_t id = 0; id < s->shm_created; id++) {
        if (s->attach_fd[id] >= 0)
            close(s->attach_fd[id]);
        shmb_segment_destroy(&s->shm[id], NULL);
    }
    free(s->shm);
    free(s->attach_fd);
    shmb_stats_release(&s->first_use);
    if (s->table.n)
        shmb_lookup_fini(&s->table);
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
        if (ret == 0)
            ret = shmb_lookup_init(&s->table, s->segments, (size_t)n);
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

/* The peer's segments as real SHM: created sparse (nothing is written),
 * their descriptors closed. */
static int create_shm(const shmb_lookup_config_t *cfg, setup_t *s)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    s->shm = calloc((size_t)n, sizeof(*s->shm));
    s->attach_fd = malloc((size_t)n * sizeof(*s->attach_fd));
    if (!s->shm || !s->attach_fd)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; id < n; id++)
        s->attach_fd[id] = -1;
    int ret = 0;
    for (uint64_t id = 0; id < n && ret == 0; id++) {
        ret = shmb_segment_create(&s->shm[id], cfg->shm_prefix, (size_t)size, NULL, NULL);
        if (ret < 0)
            break;
        s->shm_created++;
        ret = shmb_segment_close(&s->shm[id], NULL);
    }
    return ret;
}

/* Mooncake's metadata over the real segments, then each buffer's first
 * request, in a random order, timed one by one (it attaches the buffer). */
static int setup_mooncake(const shmb_lookup_config_t *cfg, setup_t *s, char *why, size_t cap)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t len = cfg->lookup_len_kb << 10;
    int ret = create_shm(cfg, s);
    shmb_mooncake_buffer_t *buffers = calloc((size_t)n, sizeof(*buffers));
    uint64_t *order = malloc((size_t)n * sizeof(*order));
    if (ret == 0 && (!buffers || !order))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        buffers[id].addr = s->segments[id].peer_base;
        buffers[id].length = size;
        buffers[id].shm_path = s->shm[id].name;
        order[id] = id;
    }
    const shmb_mooncake_ops_t ops = {attach_at_slot, detach_slot, s};
    if (ret == 0)
        ret = shmb_mooncake_create(buffers, (size_t)n, SHMB_LOOKUP_MOONCAKE_TARGET_ID, SHMB_LOOKUP_MOONCAKE_OTHER_SEGMENTS, &ops,
                                   &s->mooncake);
    shmb_rng_t rng;
    shmb_rng_seed(&rng, cfg->seed ^ 0x6d6f6f6e63616b65ull);
    if (ret == 0)
        shmb_rng_shuffle(&rng, order, (size_t)n);
    for (uint64_t k = 0; k < n && ret == 0; k++) {
        const uint64_t id = order[k], offset = shmb_rng_below(&rng, size - len + 1);
        void *got = NULL;
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_mooncake_relocate(s->mooncake, SHMB_LOOKUP_MOONCAKE_TARGET_ID, s->segments[id].peer_base + offset,
                                     len, &got);
        uint64_t t1 = shmb_clock_now_ns();
        if (ret == 0 && got != s->segments[id].local_base + offset) {
            snprintf(why, cap, "mooncake: first use of buffer %llu translated to %p, expected %p",
                     (unsigned long long)id, got, (void *)(s->segments[id].local_base + offset));
            ret = -EPROTO;
        }
        if (ret == 0 && shmb_stats_append(&s->first_use, (double)(t1 - t0)) < 0)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    free(buffers);
    free(order);
    return ret;
}

static int setup_jemalloc_repo(const shmb_lookup_config_t *cfg, setup_t *s)
{
    int ret = shmb_fipc_repo_create(&s->repo);
    for (uint64_t id = 0; id < cfg->num_segments && ret == 0; id++)
        ret = shmb_fipc_repo_insert(s->repo, (uint32_t)id, s->segments[id].local_base,
                                    (size_t)s->segments[id].size);
    if (ret == -ENOMEM)
        shmb_error_record("malloc", ENOMEM, NULL);
    return ret;
}

/* ---- translation through each path ---- */

static void *translate(const setup_t *s, int path, const shmb_lookup_request_t *r)
{
    void *out = NULL;
    switch (path) {
    case SHMB_LOOKUP_MOONCAKE:
        shmb_mooncake_relocate(s->mooncake, SHMB_LOOKUP_MOONCAKE_TARGET_ID, r->addr, r->len, &out);
        return out;
    case SHMB_LOOKUP_FLOWIPC_CLASSIC:
        return shmb_fipc_classic_to_address(s->reserved, s->reserved_bytes, r->pool_offset, r->len);
    case SHMB_LOOKUP_FLOWIPC_JEMALLOC:
        return shmb_fipc_repo_to_address(s->repo, r->id, r->offset, r->len);
    default:
        return shmb_lookup_translate(&s->table, (shmb_lookup_strategy_t)(path - SHMB_LOOKUP_SYSTEMS), r);
    }
}

/* The timed call: one batch through one path; the sum of its addresses. */
static uint64_t batch(const setup_t *s, int path, const shmb_lookup_request_t *r, size_t n)
{
    switch (path) {
    case SHMB_LOOKUP_MOONCAKE:
        return shmb_mooncake_relocate_batch(s->mooncake, SHMB_LOOKUP_MOONCAKE_TARGET_ID, r, n);
    case SHMB_LOOKUP_FLOWIPC_CLASSIC:
        return shmb_fipc_classic_translate_batch(s->reserved, s->reserved_bytes, r, n);
    case SHMB_LOOKUP_FLOWIPC_JEMALLOC:
        return shmb_fipc_repo_translate_batch(s->repo, r, n);
    default:
        return shmb_lookup_batch(&s->table, (shmb_lookup_strategy_t)(path - SHMB_LOOKUP_SYSTEMS), r, n);
    }
}

/* The latency loop: one batch through one path as a dependent chain; the
 * sum of its addresses. */
static uint64_t chain(const setup_t *s, int path, const shmb_lookup_request_t *r, const uint64_t *expected,
                      size_t n)
{
    switch (path) {
    case SHMB_LOOKUP_MOONCAKE:
        return shmb_mooncake_relocate_chain(s->mooncake, SHMB_LOOKUP_MOONCAKE_TARGET_ID, r, expected, n);
    case SHMB_LOOKUP_FLOWIPC_CLASSIC:
        return shmb_fipc_classic_translate_chain(s->reserved, s->reserved_bytes, r, expected, n);
    case SHMB_LOOKUP_FLOWIPC_JEMALLOC:
        return shmb_fipc_repo_translate_chain(s->repo, r, expected, n);
    default:
        return shmb_lookup_chain(&s->table, (shmb_lookup_strategy_t)(path - SHMB_LOOKUP_SYSTEMS), r,
                                 expected, n);
    }
}

/* One timed batch of window `win`, throughput or latency. */
static uint64_t timed_batch(const setup_t *s, int path, int latency, size_t win)
{
    const size_t w = (size_t)s->window;
    return latency ? chain(s, path, s->requests + win * w, s->expected + win * w, w)
                   : batch(s, path, s->requests + win * w, w);
}

/* Every request, translated one by one, must land where it was made from. */
static int verify(const setup_t *s, int path, uint64_t n, char *why, size_t cap)
{
    for (uint64_t k = 0; k < n; k++) {
        const shmb_lookup_request_t *r = &s->requests[k];
        void *want = s->segments[r->id].local_base + r->offset;
        void *got = translate(s, path, r);
        if (got != want) {
            snprintf(why, cap, "%s translated request %llu (peer 0x%llx, %llu bytes) to %p, expected %p",
                     path_name(path), (unsigned long long)k, (unsigned long long)r->addr,
                     (unsigned long long)r->len, got, want);
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
    int pinned = shmb_lookup_bench_thread_cpus(cfg, cpus);
    if (pinned < 0)
        return pinned;
    c->cpus = pinned ? cpus : NULL;
    CPU_ZERO(&c->allowed);
    if (!cfg->cpus) {
        if (sched_getaffinity(0, sizeof(c->allowed), &c->allowed) != 0)
            return shmb_error_record("sched_getaffinity", errno, NULL);
        return 0;
    }
    for (int i = 0; i < cfg->ncpus; i++)
        if (cfg->cpus[i] >= 0 && cfg->cpus[i] < CPU_SETSIZE)
            CPU_SET(cfg->cpus[i], &c->allowed);
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
    shmb_row_t row = row_template(cfg, c->path);
    if (c->latency)
        snprintf(row.step, sizeof(row.step), "latency");
    row.threads = c->threads;
    row.iterations = total * c->s->window;
    const unsigned long long pool = (unsigned long long)(c->s->window * c->s->windows);
    snprintf(row.note, sizeof(row.note), "verified %llu/%llu", pool, pool);
    int ret = shmb_rows_push_samples(rows, &row, all, total);
    if (ret == 0 && c->threads > 1 && last > first)
        rows->v[rows->n - 1].items_per_second = (double)row.iterations * 1e9 / (double)(last - first);
    free(all);
    return ret;
}

/* Times one path, throughput or latency, on cfg->threads threads (the
 * calling thread alone when 1), and appends its row. */
static int measure(const shmb_lookup_config_t *cfg, const setup_t *s, int path, int latency,
                   shmb_rows_t *rows, char *why, size_t cap)
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
    if (ret == 0)
        ret = crew_row(cfg, &c, runners, rows);
    for (int i = 0; runners && i < cfg->threads; i++)
        shmb_stats_release(&runners[i].samples);
    free(runners);
    free(cpus);
    return ret;
}

/* The first_use row: mooncake's attach on each buffer's first request;
 * unmeasured for a system that has none here. */
static int first_use_row(const shmb_lookup_config_t *cfg, setup_t *s, int path, shmb_rows_t *rows)
{
    shmb_row_t row = row_template(cfg, path);
    snprintf(row.step, sizeof(row.step), "first_use");
    if (path != SHMB_LOOKUP_MOONCAKE)
        return shmb_rows_push(rows, &row);
    row.iterations = s->first_use.n;
    snprintf(row.note, sizeof(row.note), "shm_open + mmap, once a buffer");
    return shmb_rows_push_samples(rows, &row, s->first_use.v, s->first_use.n);
}

static int run_paths(const shmb_lookup_config_t *cfg, setup_t *s, shmb_rows_t *rows, char *why,
                     size_t cap)
{
    int ret = 0;
    if (cfg->run_system[SHMB_LOOKUP_MOONCAKE])
        ret = setup_mooncake(cfg, s, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_LOOKUP_FLOWIPC_JEMALLOC])
        ret = setup_jemalloc_repo(cfg, s);
    /* Correctness first: no path is timed unless every one translates right. */
    for (int p = 0; p < PATHS && ret == 0; p++)
        if (path_runs(cfg, p))
            ret = verify(s, p, s->window * s->windows, why, cap);
    for (int p = 0; p < PATHS && ret == 0; p++) {
        if (!path_runs(cfg, p))
            continue;
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = measure(cfg, s, p, 0, rows, why, cap);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = measure(cfg, s, p, 1, rows, why, cap);
        if (ret == 0 && (p == SHMB_LOOKUP_MOONCAKE || (cfg->system_rows && p < SHMB_LOOKUP_SYSTEMS)))
            ret = first_use_row(cfg, s, p, rows);
    }
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
    setup_t s;
    ret = prepare(cfg, &s);
    if (ret < 0)
        return ret;
    size_t first = rows->n;
    ret = run_paths(cfg, &s, rows, why, why_cap);
    teardown(&s);
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
