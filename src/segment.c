#include "shmbench/segment.h"

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

#define SHM_DIR "/dev/shm"
#define SUFFIX_MAX 48 /* "<pid>_<8 hex>_<n>" with room to spare */

/* The registry: full paths under /dev/shm, so that a signal handler can
 * unlink them with unlink(2), which is async-signal-safe. */
static char registry_path[SHMB_SEGMENT_REGISTRY_SLOTS][sizeof(SHM_DIR) + SHMB_SEGMENT_NAME_MAX + 1];
static volatile sig_atomic_t registry_used[SHMB_SEGMENT_REGISTRY_SLOTS];

static atomic_uint_fast64_t name_counter;
static uint32_t name_random;

static int registry_add(const char *name)
{
    for (int i = 0; i < SHMB_SEGMENT_REGISTRY_SLOTS; i++) {
        if (registry_used[i])
            continue;
        snprintf(registry_path[i], sizeof(registry_path[i]), "%s%s", SHM_DIR, name);
        atomic_signal_fence(memory_order_seq_cst);
        registry_used[i] = 1;
        return 0;
    }
    return shmb_error_record("registry", ENOBUFS, name);
}

static void registry_remove(const char *name)
{
    for (int i = 0; i < SHMB_SEGMENT_REGISTRY_SLOTS; i++) {
        if (registry_used[i] && strcmp(registry_path[i] + sizeof(SHM_DIR) - 1, name) == 0) {
            registry_used[i] = 0;
            return;
        }
    }
}

size_t shmb_segment_unlink_all(void)
{
    size_t n = 0;
    for (int i = 0; i < SHMB_SEGMENT_REGISTRY_SLOTS; i++) {
        if (!registry_used[i])
            continue;
        if (unlink(registry_path[i]) == 0)
            n++;
        registry_used[i] = 0;
    }
    return n;
}

size_t shmb_segment_registered(void)
{
    size_t n = 0;
    for (int i = 0; i < SHMB_SEGMENT_REGISTRY_SLOTS; i++)
        n += registry_used[i] != 0;
    return n;
}

static void cleanup_and_reraise(int sig)
{
    int saved = errno;
    shmb_segment_unlink_all();
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
}

int shmb_segment_install_signal_cleanup(void)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGBUS, SIGSEGV, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = cleanup_and_reraise;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
        sigaddset(&sa.sa_mask, signals[i]);
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        if (sigaction(signals[i], &sa, NULL) != 0)
            return shmb_error_record("sigaction", errno, NULL);
    }
    /* A segment above the file-size limit is an error (EFBIG), not a death. */
    if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
        return shmb_error_record("signal", errno, "SIGXFSZ");
    return 0;
}

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
    int ret = shmb_segment_check_prefix(prefix);
    if (ret < 0)
        return ret;
    if (name_random == 0 && getrandom(&name_random, sizeof(name_random), 0) != sizeof(name_random))
        name_random = (uint32_t)shmb_clock_now_ns();
    uint64_t n = atomic_fetch_add(&name_counter, 1);
    int len = snprintf(buf, cap, "%s%ld_%08x_%llu", prefix, (long)getpid(), (unsigned)name_random,
                       (unsigned long long)n);
    if (len < 0 || (size_t)len >= cap)
        return -ENAMETOOLONG;
    return 0;
}

int shmb_segment_create(shmb_segment_t *seg, const char *prefix, size_t size,
                        uint64_t *open_ns, uint64_t *truncate_ns)
{
    seg->fd = -1;
    seg->addr = NULL;
    seg->size = size;
    int ret = shmb_segment_make_name(seg->name, sizeof(seg->name), prefix);
    if (ret < 0)
        return shmb_error_record("shm_open", -ret, prefix);

    /* Registered before it exists, so no signal can fall between creation
     * and registration; unlinking a name not yet created is harmless. */
    ret = registry_add(seg->name);
    if (ret < 0)
        return ret;
    uint64_t t0 = shmb_clock_now_ns();
    int fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    uint64_t t1 = shmb_clock_now_ns();
    if (fd < 0) {
        ret = shmb_error_record("shm_open", errno, seg->name);
        registry_remove(seg->name);
        return ret;
    }
    seg->fd = fd;

    uint64_t t2 = shmb_clock_now_ns();
    int rc = ftruncate(fd, (off_t)size);
    uint64_t t3 = shmb_clock_now_ns();
    if (rc != 0) {
        ret = shmb_error_record("ftruncate", errno, seg->name);
        close(fd);
        shm_unlink(seg->name);
        registry_remove(seg->name);
        seg->fd = -1;
        return ret;
    }
    if (open_ns)
        *open_ns = t1 - t0;
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

int shmb_segment_destroy(shmb_segment_t *seg, uint64_t *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int ret = unmap_and_close(seg);
    int rc = shm_unlink(seg->name);
    uint64_t t1 = shmb_clock_now_ns();
    if (rc != 0 && ret == 0)
        ret = shmb_error_record("shm_unlink", errno, seg->name);
    registry_remove(seg->name);
    if (ns && ret == 0)
        *ns = t1 - t0;
    return ret;
}

int shmb_segment_release(shmb_segment_t *seg)
{
    int ret = unmap_and_close(seg);
    registry_remove(seg->name);
    return ret;
}

void shmb_segment_touch(void *addr, size_t bytes)
{
    static size_t page;
    if (page == 0)
        page = (size_t)sysconf(_SC_PAGESIZE);
    volatile unsigned char *p = addr;
    for (size_t off = 0; off < bytes; off += page)
        p[off] = 1;
}
