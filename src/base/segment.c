/* segment: one POSIX SHM segment's life cycle (shmbench/segment.h): its
 * names, and create, attach, map, unmap, close and unlink, each step timed.
 * The registry of live names is in segment_registry.c, the signal cleanup and
 * the first-write guard in segment_signals.c. */
#include "shmbench/segment.h"

#include "segment_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define SUFFIX_MAX 48   /* "<pid>_<16 hex>_<n>" with room to spare */
#define CREATE_TRIES 16 /* names tried before EEXIST is reported */
/* ---- names and segments ---- */

int shmb_segment_check_prefix(const char *prefix)
{
    if (!prefix || prefix[0] != '/' || strchr(prefix + 1, '/'))
        return -EINVAL;
    if (strlen(prefix) + SUFFIX_MAX > SHMB_SEGMENT_NAME_MAX)
        return -ENAMETOOLONG;
    return 0;
}

int shmb_segment_make_name(char *buf, size_t cap, const char *prefix)
{
    static atomic_uint_fast64_t counter;
    int ret = shmb_segment_check_prefix(prefix);
    if (ret < 0)
        return ret;
    uint64_t r;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = shmb_clock_now_ns() * 0x9e3779b97f4a7c15ull;
    uint64_t n = atomic_fetch_add(&counter, 1);
    int len = snprintf(buf, cap, "%s%ld_%016llx_%llu", prefix, (long)getpid(), (unsigned long long)r,
                       (unsigned long long)n);
    if (len < 0 || (size_t)len >= cap)
        return -ENAMETOOLONG;
    return 0;
}

/* shm_open(O_CREAT | O_EXCL) under fresh names until one is free; the name
 * enters the registry in the same signal-free stretch as its creation, so no
 * signal unlinks a name someone else created, nor misses one of ours. */
static int open_fresh(shmb_segment_t *seg, const char *prefix, uint64_t *ns)
{
    sigset_t old;
    shmb_segment_creation_begin(&old);
    int slot = shmb_segment_slot_take();
    int ret = slot;
    for (int i = 0; slot >= 0 && i < CREATE_TRIES; i++) {
        ret = shmb_segment_make_name(seg->name, sizeof(seg->name), prefix);
        if (ret < 0)
            break;
        shmb_segment_slot_pending(slot, seg->name);
        uint64_t t0 = shmb_clock_now_ns();
        int fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        uint64_t t1 = shmb_clock_now_ns();
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) != 0) { /* what the registry checks before unlinking */
            ret = -errno;
            shm_unlink(seg->name);
            close(fd);
            break;
        }
        if (fd >= 0) {
            shmb_segment_slot_publish(slot, seg->name, &st);
            seg->fd = fd;
            seg->slot = slot;
            *ns = t1 - t0;
            ret = 0;
            break;
        }
        ret = -errno;
        shmb_segment_slot_unpend(slot); /* not ours */
        if (errno != EEXIST)
            break;
    }
    shmb_segment_creation_end(&old);
    if (ret < 0) {
        if (slot >= 0)
            shmb_segment_slot_give(slot);
        shmb_error_record(ret == -ENOBUFS ? "registry" : "shm_open", -ret, seg->name[0] ? seg->name : prefix);
        seg->name[0] = '\0';
    }
    return ret;
}

int shmb_segment_open_existing(const char *name, uint64_t bytes)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return shmb_error_record("shm_open", errno, name);
    struct stat st;
    int ret = 0;
    if (fstat(fd, &st) != 0) {
        ret = shmb_error_record("fstat", errno, name);
    } else if ((uint64_t)st.st_size != bytes) {
        char what[SHMB_ERROR_OBJECT_MAX];
        snprintf(what, sizeof(what), "%.200s: %lld bytes, expected %llu", name, (long long)st.st_size,
                 (unsigned long long)bytes);
        ret = shmb_error_record("fstat size check", EPROTO, what);
    }
    if (ret < 0) {
        close(fd);
        return ret;
    }
    return fd;
}

int shmb_segment_create(shmb_segment_t *seg, const char *prefix, size_t size,
                        uint64_t *open_ns, uint64_t *truncate_ns)
{
    seg->fd = -1;
    seg->addr = NULL;
    seg->size = size;
    seg->slot = -1;
    seg->name[0] = '\0';
    uint64_t t_open = 0;
    int ret = open_fresh(seg, prefix, &t_open);
    if (ret < 0)
        return ret;

    uint64_t t2 = shmb_clock_now_ns();
    int rc = ftruncate(seg->fd, (off_t)size);
    uint64_t t3 = shmb_clock_now_ns();
    if (rc != 0) {
        ret = shmb_error_record("ftruncate", errno, seg->name);
        shmb_segment_destroy(seg, NULL);
        return ret;
    }
    if (open_ns)
        *open_ns = t_open;
    if (truncate_ns)
        *truncate_ns = t3 - t2;
    return 0;
}

int shmb_segment_reserve(shmb_segment_t *seg)
{
    int err = posix_fallocate(seg->fd, 0, (off_t)seg->size);
    if (err != 0)
        return shmb_error_record("posix_fallocate", err, seg->name);
    return 0;
}

int shmb_segment_map(shmb_segment_t *seg, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    void *p = mmap(NULL, seg->size, PROT_READ | PROT_WRITE, MAP_SHARED, seg->fd, 0);
    uint64_t t1 = shmb_clock_now_ns();
    if (p == MAP_FAILED)
        return shmb_error_record("mmap", errno, seg->name);
    seg->addr = p;
    if (ns)
        *ns = t1 - t0;
    return 0;
}

int shmb_segment_close(shmb_segment_t *seg, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int rc = close(seg->fd);
    uint64_t t1 = shmb_clock_now_ns();
    seg->fd = -1;
    if (rc != 0)
        return shmb_error_record("close", errno, seg->name);
    if (ns)
        *ns = t1 - t0;
    return 0;
}

int shmb_segment_unmap(shmb_segment_t *seg, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int rc = munmap(seg->addr, seg->size);
    uint64_t t1 = shmb_clock_now_ns();
    if (rc != 0)
        return shmb_error_record("munmap", errno, seg->name);
    seg->addr = NULL;
    if (ns)
        *ns = t1 - t0;
    return 0;
}

static int unmap_and_close(shmb_segment_t *seg)
{
    int ret = 0;
    if (seg->addr && munmap(seg->addr, seg->size) != 0)
        ret = shmb_error_record("munmap", errno, seg->name);
    seg->addr = NULL;
    if (seg->fd >= 0 && close(seg->fd) != 0 && ret == 0)
        ret = shmb_error_record("close", errno, seg->name);
    seg->fd = -1;
    return ret;
}

static void unregister(shmb_segment_t *seg)
{
    if (seg->slot >= 0)
        shmb_segment_slot_give(seg->slot);
    seg->slot = -1;
}

int shmb_segment_destroy(shmb_segment_t *seg, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int ret = unmap_and_close(seg);
    int rc = seg->name[0] ? shm_unlink(seg->name) : 0;
    uint64_t t1 = shmb_clock_now_ns();
    if (rc != 0 && ret == 0)
        ret = shmb_error_record("shm_unlink", errno, seg->name);
    unregister(seg);
    if (ns && ret == 0)
        *ns = t1 - t0;
    return ret;
}

int shmb_segment_release(shmb_segment_t *seg)
{
    int ret = unmap_and_close(seg);
    unregister(seg);
    return ret;
}

int shmb_segment_allocated(const shmb_segment_t *seg, uint64_t *bytes)
{
    struct stat st;
    if (fstat(seg->fd, &st) != 0)
        return shmb_error_record("fstat", errno, seg->name);
    *bytes = (uint64_t)st.st_blocks * 512; /* st_blocks counts 512-byte units */
    return 0;
}
