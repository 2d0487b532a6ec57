#include "shmbench/lookup_bench.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/mooncake.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <fcntl.h>
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
        (unsigned)cfg->placement >= SHMB_LOOKUP_PLACEMENTS)
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

/* Times batches of one path, throughput or latency, each checked against its
 * window's sum, and appends the row. */
static int measure(const shmb_lookup_config_t *cfg, const setup_t *s, int path, int latency,
                   shmb_rows_t *rows, char *why, size_t cap)
{
    const size_t w = (size_t)s->window;
    const uint64_t budget_ns = (uint64_t)(cfg->min_time_ms * 1e6);
    shmb_samples_t samples = {0};
    int ret = 0;

    shmb_escape((void *)(uintptr_t)timed_batch(s, path, latency, 0));
    uint64_t spent = 0;
    while (ret == 0 && (samples.n < SHMB_LOOKUP_MIN_BATCHES || spent < budget_ns)) {
        const size_t win = samples.n % s->windows;
        uint64_t t0 = shmb_clock_now_ns();
        uint64_t sum = timed_batch(s, path, latency, win);
        uint64_t t1 = shmb_clock_now_ns();
        if (sum != s->expected_sum[win]) {
            snprintf(why, cap, "%s%s: checksum of a timed batch is 0x%llx, expected 0x%llx", path_name(path),
                     latency ? " latency" : "", (unsigned long long)sum,
                     (unsigned long long)s->expected_sum[win]);
            ret = -EPROTO;
        } else if (shmb_stats_append(&samples, (double)(t1 - t0) / (double)w) < 0) {
            ret = shmb_error_record("malloc", ENOMEM, NULL);
        }
        spent += t1 - t0;
    }
    if (ret == 0) {
        shmb_row_t row = row_template(cfg, path);
        if (latency)
            snprintf(row.step, sizeof(row.step), "latency");
        row.iterations = samples.n * w;
        const unsigned long long pool = (unsigned long long)(s->window * s->windows);
        snprintf(row.note, sizeof(row.note), "verified %llu/%llu", pool, pool);
        ret = shmb_rows_push_samples(rows, &row, samples.v, samples.n);
    }
    shmb_stats_release(&samples);
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
