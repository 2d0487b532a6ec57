/* backing: a shared pool's pages (shmbench/backing.h): the kinds, create,
 * map, destroy, and giving a backing to a peer (a name or a descriptor).
 * Prefault, residency and time to ready are in backing_ready.c. */
#include "shmbench/backing.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"

#include "backing_internal.h"
#include "names_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* memfd_create's huge page sizes (linux/memfd.h, from hugetlb_encode.h),
 * for C libraries that lack them. */
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21u << MFD_HUGE_SHIFT)
#endif
#ifndef MFD_HUGE_1GB
#define MFD_HUGE_1GB (30u << MFD_HUGE_SHIFT)
#endif

#define WIRE_MAGIC 0x73686d62u /* "shmb": a backing's message */

static const char *const kind_names[SHMB_BACKING_KINDS] = {"tmpfs", "memfd", "thp", "hugetlb"};
static const char *const prefault_names[SHMB_PREFAULT_KINDS] = {"none", "touch", "populate",
                                                                "populate_write", "fallocate"};

const char *shmb_backing_name(shmb_backing_kind_t kind)
{
    return (unsigned)kind < SHMB_BACKING_KINDS ? kind_names[kind] : NULL;
}

int shmb_backing_parse(const char *name, shmb_backing_kind_t *out)
{
    const int k = shmb_names_find(kind_names, SHMB_BACKING_KINDS, name);
    return k < 0 ? k : (*out = (shmb_backing_kind_t)k, 0);
}

const char *shmb_prefault_name(shmb_prefault_t how)
{
    return (unsigned)how < SHMB_PREFAULT_KINDS ? prefault_names[how] : NULL;
}

int shmb_prefault_parse(const char *name, shmb_prefault_t *out)
{
    const int k = shmb_names_find(prefault_names, SHMB_PREFAULT_KINDS, name);
    return k < 0 ? k : (*out = (shmb_prefault_t)k, 0);
}

int shmb_backing_page_size(const shmb_backing_config_t *cfg, uint64_t *out)
{
    if (!cfg)
        return -EINVAL;
    switch (cfg->kind) {
    case SHMB_BACKING_TMPFS:
    case SHMB_BACKING_MEMFD:
        *out = SHMB_BACKING_SMALL_PAGE;
        return 0;
    case SHMB_BACKING_THP:
        *out = SHMB_BACKING_HUGE_2MB;
        return 0;
    case SHMB_BACKING_HUGETLB:
        if (cfg->hugepage_size != 0 && cfg->hugepage_size != SHMB_BACKING_HUGE_2MB &&
            cfg->hugepage_size != SHMB_BACKING_HUGE_1GB)
            return -EINVAL;
        *out = cfg->hugepage_size ? cfg->hugepage_size : SHMB_BACKING_HUGE_2MB;
        return 0;
    default:
        return -EINVAL;
    }
}

int shmb_backing_round(const shmb_backing_config_t *cfg, uint64_t size, uint64_t *out)
{
    uint64_t page;
    int ret = shmb_backing_page_size(cfg, &page);
    if (ret < 0)
        return ret;
    if (size == 0)
        return -EINVAL;
    if (size > SIZE_MAX - (page - 1) || size > (uint64_t)INT64_MAX - (page - 1))
        return -EOVERFLOW;
    *out = (size + page - 1) / page * page;
    return 0;
}

static void reset(shmb_backing_t *b, shmb_backing_kind_t kind, uint64_t size, uint64_t page)
{
    memset(b, 0, sizeof(*b));
    b->kind = kind;
    b->seg.fd = -1;
    b->seg.slot = -1;
    b->seg.size = (size_t)size;
    b->page_size = page;
}

/* The memfd kinds: an anonymous shmem (or hugetlbfs) file, sized. */
static int create_memfd(shmb_backing_t *b, uint64_t *ns)
{
    unsigned flags = MFD_CLOEXEC;
    if (b->kind == SHMB_BACKING_HUGETLB)
        flags |= MFD_HUGETLB | (b->page_size == SHMB_BACKING_HUGE_1GB ? MFD_HUGE_1GB : MFD_HUGE_2MB);
    const char *what = shmb_backing_name(b->kind);
    uint64_t t0 = shmb_clock_now_ns();
    int fd = memfd_create(what, flags);
    if (fd < 0)
        return shmb_error_record("memfd_create", errno, what);
    if (ftruncate(fd, (off_t)b->seg.size) != 0) {
        int ret = shmb_error_record("ftruncate", errno, what);
        close(fd);
        return ret;
    }
    *ns = shmb_clock_now_ns() - t0;
    b->seg.fd = fd;
    return 0;
}

int shmb_backing_create(shmb_backing_t *b, const shmb_backing_config_t *cfg, uint64_t size, uint64_t *ns)
{
    uint64_t page = 0, rounded = 0;
    int ret = shmb_backing_round(cfg, size, &rounded);
    if (ret == 0)
        ret = shmb_backing_page_size(cfg, &page);
    if (ret < 0)
        return ret;
    shmb_backing_t fresh;
    reset(&fresh, cfg->kind, rounded, page);
    fresh.owner = 1;
    uint64_t t = 0;
    if (cfg->kind == SHMB_BACKING_TMPFS) {
        uint64_t open_ns = 0, truncate_ns = 0;
        ret = shmb_segment_create(&fresh.seg, cfg->shm_prefix, (size_t)rounded, &open_ns, &truncate_ns);
        t = open_ns + truncate_ns;
    } else {
        ret = create_memfd(&fresh, &t);
    }
    if (ret < 0)
        return ret;
    *b = fresh;
    if (ns)
        *ns = t;
    return 0;
}

/* mmap at a 2 MiB-aligned address (a PROT_NONE reservation 2 MiB larger,
 * the file mapped over its aligned part, the ends given back), so that
 * every 2 MiB of the file can be mapped by one PMD. */
static void *map_pmd_aligned(shmb_backing_t *b, int flags)
{
    size_t size = b->seg.size, align = SHMB_BACKING_HUGE_2MB;
    char *r = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED)
        return MAP_FAILED;
    char *a = (char *)(((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1));
    void *p = mmap(a, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | flags, b->seg.fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        munmap(r, size + align);
        errno = err;
        return MAP_FAILED;
    }
    if (a > r)
        munmap(r, (size_t)(a - r));
    if (a + size < r + size + align)
        munmap(a + size, (size_t)(r + size + align - (a + size)));
    return p;
}

const char *shmb_backing_object(const shmb_backing_t *b)
{
    return b->seg.name[0] ? b->seg.name : shmb_backing_name(b->kind);
}

int shmb_backing_map(shmb_backing_t *b, int populate, uint64_t *ns)
{
    if (!b || b->seg.fd < 0 || b->seg.addr)
        return -EINVAL;
    int flags = populate ? MAP_POPULATE : 0;
    uint64_t t0 = shmb_clock_now_ns();
    void *p = b->kind == SHMB_BACKING_THP
                  ? map_pmd_aligned(b, flags)
                  : mmap(NULL, b->seg.size, PROT_READ | PROT_WRITE, MAP_SHARED | flags, b->seg.fd, 0);
    if (p == MAP_FAILED)
        return shmb_error_record("mmap", errno, shmb_backing_object(b));
    if (b->kind == SHMB_BACKING_THP && madvise(p, b->seg.size, MADV_HUGEPAGE) != 0) {
        int ret = shmb_error_record("madvise(MADV_HUGEPAGE)", errno, shmb_backing_object(b));
        munmap(p, b->seg.size);
        return ret;
    }
    uint64_t t1 = shmb_clock_now_ns();
    b->seg.addr = p;
    if (ns)
        *ns = t1 - t0;
    return 0;
}

int shmb_backing_destroy(shmb_backing_t *b)
{
    if (!b)
        return -EINVAL;
    int ret = b->owner ? shmb_segment_destroy(&b->seg, NULL) : shmb_segment_release(&b->seg);
    b->seg.name[0] = '\0';
    b->seg.addr = NULL;
    b->seg.fd = -1;
    b->seg.slot = -1;
    return ret;
}

/* ---- giving a backing to a peer ---- */

typedef struct wire {
    uint32_t magic;
    uint32_t kind;
    uint64_t size;
    uint64_t page_size;
    char name[SHMB_SEGMENT_NAME_MAX + 1]; /* tmpfs: the name; else "" */
} wire_t;

int shmb_backing_send(const shmb_backing_t *b, shmb_channel_t *ch)
{
    if (!b || b->seg.fd < 0 || (unsigned)b->kind >= SHMB_BACKING_KINDS)
        return -EINVAL;
    wire_t w;
    memset(&w, 0, sizeof(w));
    w.magic = WIRE_MAGIC;
    w.kind = (uint32_t)b->kind;
    w.size = b->seg.size;
    w.page_size = b->page_size;
    if (b->kind == SHMB_BACKING_TMPFS) {
        snprintf(w.name, sizeof(w.name), "%s", b->seg.name);
        return shmb_channel_send(ch, &w, sizeof(w));
    }
    return shmb_channel_send_fd(ch, &w, sizeof(w), b->seg.fd);
}

/* A received message that holds together: known kind, a size that is a
 * whole number of its pages, a name only (and always) for tmpfs, a
 * descriptor only (and always) for the memfd kinds. */
static int wire_ok(const wire_t *w, size_t len, int fd)
{
    if (len != sizeof(*w) || w->magic != WIRE_MAGIC || w->kind >= SHMB_BACKING_KINDS)
        return 0;
    if (w->page_size == 0 || w->size == 0 || w->size % w->page_size != 0 || w->size > SIZE_MAX)
        return 0;
    if (memchr(w->name, '\0', sizeof(w->name)) == NULL)
        return 0;
    if (w->kind == SHMB_BACKING_TMPFS)
        return fd < 0 && w->name[0] == '/';
    return fd >= 0 && w->name[0] == '\0';
}

/* The received descriptor must be a file of the size announced. */
static int check_size(int fd, uint64_t size, const char *what)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return shmb_error_record("fstat", errno, what);
    if ((uint64_t)st.st_size != size)
        return shmb_error_record("fstat size check", EPROTO, what);
    return 0;
}

int shmb_backing_receive(shmb_backing_t *b, shmb_channel_t *ch)
{
    if (!b)
        return -EINVAL;
    wire_t w;
    size_t len = 0;
    int fd = -1;
    int ret = shmb_channel_recv_fd(ch, &w, sizeof(w), &len, &fd);
    if (ret < 0)
        return ret == -EMSGSIZE ? -EPROTO : ret;
    if (!wire_ok(&w, len, fd)) {
        if (fd >= 0)
            close(fd);
        return shmb_error_record("receive backing", EPROTO, "a malformed message");
    }
    shmb_backing_t got;
    reset(&got, (shmb_backing_kind_t)w.kind, w.size, w.page_size);
    if (w.kind == SHMB_BACKING_TMPFS) {
        fd = shmb_segment_open_existing(w.name, w.size);
        if (fd < 0)
            return fd;
        snprintf(got.seg.name, sizeof(got.seg.name), "%s", w.name);
    } else if ((ret = check_size(fd, w.size, shmb_backing_name(got.kind))) < 0) {
        close(fd);
        return ret;
    }
    got.seg.fd = fd;
    *b = got;
    return 0;
}
