/* backing_ready: making a backing's pages exist before first use
 * (shmbench/backing.h): fallocate, touch and MADV_POPULATE_WRITE split over
 * threads, what the mapping holds afterwards (smaps), and the time to ready
 * of a whole pool, step by step. */
#include "shmbench/backing.h"

#include "backing_internal.h"
#include "crew_internal.h"
#include "segment_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14, asm-generic/mman-common.h */
#endif

/* One member's share of [0, size): whole pages, the last member taking the
 * rest. */
static void share(const shmb_backing_t *b, int member, int threads, uint64_t *lo, uint64_t *hi)
{
    uint64_t pages = b->seg.size / b->page_size;
    *lo = pages * (uint64_t)member / (uint64_t)threads * b->page_size;
    *hi = pages * (uint64_t)(member + 1) / (uint64_t)threads * b->page_size;
}

typedef struct split {
    shmb_backing_t *b;
    shmb_prefault_t how;
} split_t;

/* This member's range, prefaulted the way split->how says. */
static int prefault_range(shmb_backing_t *b, shmb_prefault_t how, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return 0;
    char *addr = (char *)b->seg.addr;
    /* Only hugetlb is sure of its page size; thp may have been given 4 KiB
     * pages (shmem_enabled), each of which needs its own write. */
    const uint64_t stride = b->kind == SHMB_BACKING_HUGETLB ? b->page_size : SHMB_BACKING_SMALL_PAGE;
    switch (how) {
    case SHMB_PREFAULT_FALLOCATE:
        if (fallocate(b->seg.fd, 0, (off_t)lo, (off_t)(hi - lo)) != 0)
            return shmb_error_record("fallocate", errno, shmb_backing_object(b));
        return 0;
    case SHMB_PREFAULT_TOUCH:
        return shmb_segment_first_write_copy(addr + lo, &stride, (size_t)(hi - lo), shmb_segment_touch_stride);
    case SHMB_PREFAULT_POPULATE_WRITE:
        if (madvise(addr + lo, (size_t)(hi - lo), MADV_POPULATE_WRITE) != 0)
            return shmb_error_record("madvise(MADV_POPULATE_WRITE)", errno, shmb_backing_object(b));
        return 0;
    default:
        return 0;
    }
}

static void split_member(shmb_crew_t *crew, int member, void *arg)
{
    split_t *s = arg;
    uint64_t lo, hi;
    share(s->b, member, shmb_crew_threads(crew), &lo, &hi);
    int ret = prefault_range(s->b, s->how, lo, hi);
    if (ret < 0)
        shmb_crew_fail(crew, member, ret);
}

/* how over the whole backing, split across `threads` (1: this thread). */
static int run_split(shmb_backing_t *b, shmb_prefault_t how, int threads)
{
    if (threads < 1 || threads > SHMB_BACKING_MAX_THREADS)
        return -EINVAL;
    if (threads == 1)
        return prefault_range(b, how, 0, b->seg.size);
    shmb_crew_t *crew = NULL;
    shmb_crew_config_t cfg = {.threads = threads, .cpu = -1, .pin = SHMB_CREW_PIN_OWN, .caller_joins = 1};
    int ret = shmb_crew_start(&crew, &cfg);
    if (ret < 0)
        return ret;
    split_t s = {b, how};
    ret = shmb_crew_run(crew, split_member, &s);
    shmb_crew_stop(crew);
    return ret;
}

int shmb_backing_fallocate(shmb_backing_t *b, int threads)
{
    if (!b || b->seg.fd < 0)
        return -EINVAL;
    return run_split(b, SHMB_PREFAULT_FALLOCATE, threads);
}

int shmb_backing_prefault(shmb_backing_t *b, shmb_prefault_t how, int threads)
{
    if (!b || !b->seg.addr || (unsigned)how >= SHMB_PREFAULT_KINDS)
        return -EINVAL;
    if (how != SHMB_PREFAULT_TOUCH && how != SHMB_PREFAULT_POPULATE_WRITE)
        return threads >= 1 && threads <= SHMB_BACKING_MAX_THREADS ? 0 : -EINVAL;
    return run_split(b, how, threads);
}

/* ---- what the mapping holds ---- */

/* Adds a "Name:   N kB" line of smaps to the residency it counts for. */
static void count_line(const char *line, shmb_backing_residency_t *r)
{
    static const struct {
        const char *key;
        int resident, huge;
    } keys[] = {
        {"Rss:", 1, 0},           {"ShmemPmdMapped:", 0, 1}, {"FilePmdMapped:", 0, 1},
        {"AnonHugePages:", 0, 1}, {"Shared_Hugetlb:", 1, 1}, {"Private_Hugetlb:", 1, 1},
    };
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        size_t len = strlen(keys[k].key);
        unsigned long long kb;
        if (strncmp(line, keys[k].key, len) != 0 || sscanf(line + len, "%llu", &kb) != 1)
            continue;
        if (keys[k].resident)
            r->resident_bytes += kb * 1024;
        if (keys[k].huge)
            r->huge_bytes += kb * 1024;
    }
}

/* Sums the smaps entries inside [lo, hi). */
static int read_smaps(uintptr_t lo, uintptr_t hi, shmb_backing_residency_t *r)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f)
        return shmb_error_record("fopen", errno, "/proc/self/smaps");
    char line[512];
    int inside = 0;
    while (fgets(line, sizeof(line), f)) {
        uintptr_t start, end;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = start >= lo && end <= hi;
        else if (inside)
            count_line(line, r);
    }
    fclose(f);
    return 0;
}

int shmb_backing_residency(const shmb_backing_t *b, shmb_backing_residency_t *out)
{
    if (!b || !b->seg.addr)
        return -EINVAL;
    shmb_backing_residency_t r;
    memset(&r, 0, sizeof(r));
    uintptr_t lo = (uintptr_t)b->seg.addr;
    int ret = read_smaps(lo, lo + b->seg.size, &r);
    if (ret < 0)
        return ret;
    struct stat st;
    if (b->seg.fd >= 0) {
        if (fstat(b->seg.fd, &st) != 0)
            return shmb_error_record("fstat", errno, shmb_backing_object(b));
        r.allocated_bytes = (uint64_t)st.st_blocks * 512; /* st_blocks counts 512-byte units */
    }
    *out = r;
    return 0;
}

/* ---- time to ready ---- */

static uint64_t faults_now(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/* The steps after create, in the order how needs them. */
static int ready_steps(shmb_backing_t *b, shmb_prefault_t how, int threads, shmb_backing_ready_t *r)
{
    int ret = 0;
    if (how == SHMB_PREFAULT_FALLOCATE) {
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_backing_fallocate(b, threads);
        r->prefault_ns = shmb_clock_now_ns() - t0;
    }
    if (ret == 0)
        ret = shmb_backing_map(b, how == SHMB_PREFAULT_POPULATE, &r->map_ns);
    if (ret == 0 && (how == SHMB_PREFAULT_TOUCH || how == SHMB_PREFAULT_POPULATE_WRITE)) {
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_backing_prefault(b, how, threads);
        r->prefault_ns = shmb_clock_now_ns() - t0;
    }
    return ret;
}

int shmb_backing_ready(shmb_backing_t *b, const shmb_backing_config_t *cfg, uint64_t size,
                       shmb_prefault_t how, int threads, shmb_backing_ready_t *out)
{
    if (!b || !out || (unsigned)how >= SHMB_PREFAULT_KINDS || threads < 1 || threads > SHMB_BACKING_MAX_THREADS)
        return -EINVAL;
    shmb_backing_ready_t r;
    memset(&r, 0, sizeof(r));
    shmb_backing_t fresh;
    uint64_t faults0 = faults_now();
    uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_backing_create(&fresh, cfg, size, &r.create_ns);
    if (ret < 0)
        return ret;
    ret = ready_steps(&fresh, how, threads, &r);
    r.total_ns = shmb_clock_now_ns() - t0;
    r.faults = faults_now() - faults0;
    if (ret == 0)
        ret = shmb_backing_residency(&fresh, &r.residency);
    if (ret < 0) {
        shmb_backing_destroy(&fresh);
        return ret;
    }
    *b = fresh;
    *out = r;
    return 0;
}
