/* alloc_grow: live bytes reached through one segment or through jemalloc's
 * pools, and what each took (shmbench/alloc_grow.h). */
#include "shmbench/alloc_grow.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static const char *const system_names[SHMB_ALLOC_GROW_SYSTEMS] = {"mooncake", "flowipc_jemalloc"};

const char *shmb_alloc_grow_system_name(shmb_alloc_grow_system_t s)
{
    return (unsigned)s < SHMB_ALLOC_GROW_SYSTEMS ? system_names[s] : NULL;
}

static uint64_t faults_now(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/* Mappings of SHM files under prefix: lines of /proc/self/maps naming
 * /dev/shm<prefix>...; -1 when it cannot be read. */
static int64_t shm_mappings(const char *prefix)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -1;
    char path[SHMB_SEGMENT_NAME_MAX + 16], line[4096];
    snprintf(path, sizeof(path), "/dev/shm%s", prefix);
    int64_t n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, path) != NULL;
    fclose(f);
    return n;
}

/* Where the counting started. */
typedef struct start {
    const char *prefix;
    int64_t maps;
    uint64_t faults, ns;
} start_t;

/* Everything is live: the time, the faults and the mappings since s (taken
 * before anything is undone). */
static void peak(const start_t *s, shmb_alloc_grow_t *g)
{
    g->ns = shmb_clock_now_ns() - s->ns;
    g->faults = faults_now() - s->faults;
    const int64_t maps = shm_mappings(s->prefix);
    g->mappings = maps >= 0 && s->maps >= 0 ? maps - s->maps : -1;
}

/* One segment of bytes, createSharedMemory's way, written once per page. */
static int grow_mooncake(uint64_t bytes, const char *prefix, const start_t *s, shmb_alloc_grow_t *g)
{
    shmb_segment_t seg;
    int ret = shmb_segment_create(&seg, prefix, (size_t)((bytes + 4095) / 4096 * 4096), NULL, NULL);
    if (ret < 0)
        return ret;
    ret = shmb_segment_map(&seg, NULL);
    if (ret == 0)
        ret = shmb_segment_first_write(seg.addr, seg.size);
    peak(s, g);
    g->live_bytes = seg.size;
    g->pools = 1;
    g->pool_bytes = seg.size;
    int rc = shmb_segment_destroy(&seg, NULL);
    return ret < 0 ? ret : rc;
}

/* Blocks of block_bytes from the jemalloc model until bytes are live, each
 * written once per page; the pools it made counted before they go. */
static int grow_jemalloc(uint64_t bytes, uint64_t block_bytes, const char *prefix, const start_t *s,
                         shmb_alloc_grow_t *g)
{
    const uint64_t n = (bytes + block_bytes - 1) / block_bytes;
    void **blocks = calloc((size_t)n, sizeof(*blocks));
    if (!blocks)
        return shmb_error_record("malloc", ENOMEM, NULL);
    shmb_fipc_jemalloc_t *j = NULL;
    int ret = shmb_fipc_jemalloc_create(prefix, 0, &j);
    uint64_t made = 0;
    for (; ret == 0 && made < n; made++) {
        ret = shmb_fipc_jemalloc_alloc(j, (size_t)block_bytes, &blocks[made]);
        if (ret == 0)
            ret = shmb_segment_first_write(blocks[made], (size_t)block_bytes);
    }
    if (ret == 0) {
        peak(s, g);
        g->live_bytes = n * block_bytes;
        g->pools = shmb_fipc_jemalloc_pools(j, &g->pool_bytes);
    }
    for (uint64_t i = 0; i < made; i++)
        if (blocks[i])
            shmb_fipc_jemalloc_free(j, blocks[i]);
    int rc = shmb_fipc_jemalloc_destroy(j, 1, NULL);
    free(blocks);
    return ret < 0 ? ret : rc;
}

int shmb_alloc_grow_run(shmb_alloc_grow_system_t system, uint64_t bytes, uint64_t block_bytes, const char *prefix,
                        shmb_alloc_grow_t *out)
{
    if ((unsigned)system >= SHMB_ALLOC_GROW_SYSTEMS || bytes == 0 || block_bytes == 0 || !out ||
        bytes > SIZE_MAX / 2 || (bytes + block_bytes - 1) / block_bytes > SHMB_ALLOC_GROW_MAX_BLOCKS)
        return -EINVAL;
    shmb_alloc_grow_t g;
    memset(&g, 0, sizeof(g));
    const start_t s = {prefix, shm_mappings(prefix), faults_now(), shmb_clock_now_ns()};
    int ret = system == SHMB_ALLOC_GROW_MOONCAKE ? grow_mooncake(bytes, prefix, &s, &g)
                                                 : grow_jemalloc(bytes, block_bytes, prefix, &s, &g);
    if (ret == 0)
        *out = g;
    return ret;
}

int shmb_alloc_grow_rows(uint64_t bytes, uint64_t block_bytes, const char *prefix, int repetition,
                         shmb_rows_t *rows)
{
    for (int sys = 0; sys < SHMB_ALLOC_GROW_SYSTEMS; sys++) {
        shmb_alloc_grow_t g;
        int ret = shmb_alloc_grow_run((shmb_alloc_grow_system_t)sys, bytes, block_bytes, prefix, &g);
        if (ret < 0)
            return ret;
        shmb_row_t row = shmb_row_make(system_names[sys], "pool_mb", bytes >> 20, repetition);
        snprintf(row.step, sizeof(row.step), "grow");
        row.iterations = 1;
        snprintf(row.note, sizeof(row.note), "%llu pools %lld maps %llu faults", (unsigned long long)g.pools,
                 (long long)g.mappings, (unsigned long long)g.faults);
        double ns = (double)g.ns;
        if ((ret = shmb_rows_push_samples(rows, &row, &ns, 1)) < 0)
            return ret;
        rows->v[rows->n - 1].bytes_per_second = ns > 0 ? (double)g.live_bytes * 1e9 / ns : 0;
    }
    return 0;
}
