/*
 * backing: what the pages of a shared pool are, and how they are made ready.
 *
 * A backing is one shared file, sized, mapped MAP_SHARED, and given to a
 * peer process:
 * - tmpfs: shm_open in /dev/shm through the segment module (a fresh name
 *   under the prefix, O_CREAT | O_EXCL, 0600, in the registry that a signal
 *   unlinks; destroy unlinks the name only while it is still ours), 4 KiB
 *   pages; a peer opens it by name. Mooncake's path.
 * - memfd: memfd_create(MFD_CLOEXEC), 4 KiB shmem pages, no name anywhere:
 *   nothing to leak when the process dies (the pages go with the last
 *   descriptor and mapping); a peer gets the descriptor over a Unix socket
 *   (SCM_RIGHTS, shmb_backing_send / shmb_backing_receive).
 * - thp: a memfd mapped at a 2 MiB-aligned address and advised
 *   MADV_HUGEPAGE before the first touch, so that shmem may back it with
 *   2 MiB pages (Linux: /sys/kernel/mm/transparent_hugepage/shmem_enabled
 *   "advise", "always" or "within_size"; "never" and "deny" refuse). What the
 *   kernel granted is read back from /proc/self/smaps
 *   (shmb_backing_residency), never assumed. Sizes are rounded to 2 MiB.
 * - hugetlb: memfd_create(MFD_CLOEXEC | MFD_HUGETLB | MFD_HUGE_2MB or
 *   MFD_HUGE_1GB): pages of the reserved pool (vm.nr_hugepages, or the
 *   pool of that size under /sys/kernel/mm/hugepages); a MAP_SHARED mapping
 *   reserves its pages at mmap time, so a pool without enough free pages
 *   fails mmap with -ENOMEM, never later. Sizes are rounded to the page.
 *
 * Prefault: how the pages come to exist before first use:
 * - none: nothing; the first writer pays the faults (and meets a full
 *   backing as SIGBUS, see shmb_segment_first_write);
 * - touch: one write per page, guarded: a full backing is -ENOSPC;
 * - populate: mmap with MAP_POPULATE; the kernel ignores a failure to
 *   populate (the mapping is made anyway), so residency is what tells;
 * - populate_write: madvise(MADV_POPULATE_WRITE) (Linux 5.14+; older
 *   kernels -EINVAL): -ENOMEM / -EFAULT as the kernel reports a full backing;
 * - fallocate: fallocate(2) of the whole file before mmap: -ENOSPC cleanly;
 *   the pages exist but are not mapped (faults still come, minor ones).
 * touch, populate_write and fallocate split the range over threads (whole
 * pages each).
 *
 * Sizes are in bytes (KiB = 1024), times in nanoseconds. Functions return 0
 * or -errno; a failed system call is also recorded with shmb_error_record();
 * out-parameters are written only on success.
 */
#ifndef SHMBENCH_BACKING_H
#define SHMBENCH_BACKING_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/channel.h"
#include "shmbench/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_BACKING_SMALL_PAGE 4096ull        /* bytes: tmpfs, memfd */
#define SHMB_BACKING_HUGE_2MB (2ull << 20)     /* bytes: thp, hugetlb's default */
#define SHMB_BACKING_HUGE_1GB (1ull << 30)     /* bytes: hugetlb with 1 GiB pages */
#define SHMB_BACKING_MAX_THREADS 256           /* prefault threads, at most */

typedef enum shmb_backing_kind {
    SHMB_BACKING_TMPFS,   /* "tmpfs": shm_open in /dev/shm */
    SHMB_BACKING_MEMFD,   /* "memfd": memfd_create, 4 KiB pages */
    SHMB_BACKING_THP,     /* "thp": memfd + MADV_HUGEPAGE before the first touch */
    SHMB_BACKING_HUGETLB, /* "hugetlb": memfd_create(MFD_HUGETLB), the reserved pool */
    SHMB_BACKING_KINDS
} shmb_backing_kind_t;

typedef enum shmb_prefault {
    SHMB_PREFAULT_NONE,           /* "none" */
    SHMB_PREFAULT_TOUCH,          /* "touch": one guarded write per page */
    SHMB_PREFAULT_POPULATE,       /* "populate": MAP_POPULATE */
    SHMB_PREFAULT_POPULATE_WRITE, /* "populate_write": MADV_POPULATE_WRITE */
    SHMB_PREFAULT_FALLOCATE,      /* "fallocate": fallocate(2) before mmap */
    SHMB_PREFAULT_KINDS
} shmb_prefault_t;

typedef struct shmb_backing_config {
    shmb_backing_kind_t kind;
    const char *shm_prefix; /* tmpfs: name prefix ("/mooncake_bench_"); others: unused */
    uint64_t hugepage_size; /* hugetlb: SHMB_BACKING_HUGE_2MB or _1GB (0: 2 MiB); others: unused */
} shmb_backing_config_t;

/* One backing, created here (owner) or received from its owner. */
typedef struct shmb_backing {
    shmb_backing_kind_t kind;
    shmb_segment_t seg;  /* name: tmpfs only ("" for the memfd kinds); fd, addr,
                          * size (bytes, rounded to page_size), registry slot */
    uint64_t page_size;  /* bytes: the backing's page */
    int owner;           /* 1: created here (destroy unlinks a tmpfs name); 0: received */
} shmb_backing_t;

/* What a mapping holds, read back from the kernel. */
typedef struct shmb_backing_residency {
    uint64_t resident_bytes; /* smaps Rss (+ Shared/Private_Hugetlb for hugetlb) */
    uint64_t huge_bytes;     /* smaps ShmemPmdMapped + FilePmdMapped + AnonHugePages,
                              * or the Hugetlb lines for hugetlb: bytes mapped by huge pages */
    uint64_t allocated_bytes; /* the file's pages, fstat st_blocks * 512 (0: fd closed) */
} shmb_backing_residency_t;

/* Time to ready of one pool: each step and what it cost. */
typedef struct shmb_backing_ready {
    uint64_t create_ns;   /* open (shm_open / memfd_create) + ftruncate */
    uint64_t map_ns;      /* mmap (+ MAP_POPULATE; + madvise MADV_HUGEPAGE for thp) */
    uint64_t prefault_ns; /* touch, MADV_POPULATE_WRITE or fallocate; 0 for none and populate */
    uint64_t total_ns;    /* from before create to after the prefault */
    uint64_t faults;      /* minor + major page faults of the process meanwhile (getrusage) */
    shmb_backing_residency_t residency; /* after the prefault */
} shmb_backing_ready_t;

/* "tmpfs", "memfd", "thp", "hugetlb"; NULL for a kind out of range. */
const char *shmb_backing_name(shmb_backing_kind_t kind);

/* The kind named `name` into *out. Returns 0 or -EINVAL. */
int shmb_backing_parse(const char *name, shmb_backing_kind_t *out);

/* "none", "touch", "populate", "populate_write", "fallocate"; NULL out of range. */
const char *shmb_prefault_name(shmb_prefault_t how);

/* The prefault method named `name` into *out. Returns 0 or -EINVAL. */
int shmb_prefault_parse(const char *name, shmb_prefault_t *out);

/* The page size of cfg's backing into *out (bytes). Returns 0 or -EINVAL
 * (an unknown kind; hugetlb with a hugepage_size other than 0, 2 MiB or
 * 1 GiB). */
int shmb_backing_page_size(const shmb_backing_config_t *cfg, uint64_t *out);

/* size rounded up to the page size of cfg's backing into *out. Returns 0,
 * -EINVAL (as shmb_backing_page_size, or size 0) or -EOVERFLOW. */
int shmb_backing_round(const shmb_backing_config_t *cfg, uint64_t size, uint64_t *out);

/* Creates a backing of `size` bytes rounded up to its page size: opens it
 * (shm_open of a fresh name, or memfd_create) and ftruncates it; not
 * mapped. ns (may be NULL) receives the time of both. On failure nothing is
 * left (no name, no descriptor). Returns 0, -EINVAL (a bad config or size
 * 0), -EOVERFLOW, or -errno of shm_open / memfd_create (-EINVAL for an
 * MFD_HUGE_* size this kernel lacks) / ftruncate. */
int shmb_backing_create(shmb_backing_t *b, const shmb_backing_config_t *cfg, uint64_t size, uint64_t *ns);

/* fallocate(fd, 0, 0, size) split into `threads` ranges run at once (1:
 * this thread): the file's pages exist, none mapped. Returns 0, -EINVAL
 * (threads out of 1..SHMB_BACKING_MAX_THREADS), -ENOSPC (tmpfs or memfd
 * full, the memory cgroup's limit), -ENOMEM, or -errno. */
int shmb_backing_fallocate(shmb_backing_t *b, int threads);

/* mmap(PROT_READ | PROT_WRITE, MAP_SHARED) of the whole backing, with
 * MAP_POPULATE when populate is 1. thp: at a 2 MiB-aligned address, then
 * madvise(MADV_HUGEPAGE), which comes after MAP_POPULATE's faults (the
 * populated pages are then what shmem_enabled alone allows). ns (may be
 * NULL) receives the time of it all. A MAP_POPULATE that could not
 * populate still succeeds (the kernel's behaviour): check the residency.
 * Returns 0, -ENOMEM (hugetlb: too few free huge pages), or -errno. */
int shmb_backing_map(shmb_backing_t *b, int populate, uint64_t *ns);

/* The prefault that follows map: touch (a guarded write per page, split
 * over `threads` threads) or populate_write (MADV_POPULATE_WRITE, split
 * likewise); none, populate and fallocate do nothing here (see
 * shmb_backing_ready for the order of the steps). Needs the backing
 * mapped. Returns 0, -EINVAL (not mapped; threads out of range; or
 * MADV_POPULATE_WRITE unknown to this kernel: recorded), -ENOSPC (touch
 * met a full backing: the guard of shmb_segment_first_write, which needs
 * shmb_segment_install_signal_cleanup()), -ENOMEM or -EFAULT
 * (populate_write met a full backing), or -errno. */
int shmb_backing_prefault(shmb_backing_t *b, shmb_prefault_t how, int threads);

/* Makes a pool ready, timed step by step: create, fallocate (for
 * fallocate), map (MAP_POPULATE for populate), prefault (touch,
 * populate_write), with getrusage's page faults around it all and the
 * residency after. On success the backing stays created and mapped (the
 * caller destroys it); on failure nothing is left. Returns 0 or the first
 * step's -errno. */
int shmb_backing_ready(shmb_backing_t *b, const shmb_backing_config_t *cfg, uint64_t size,
                       shmb_prefault_t how, int threads, shmb_backing_ready_t *out);

/* What the backing's mapping holds now, from /proc/self/smaps (the entries
 * covering [addr, addr + size)) and fstat. Needs it mapped. Returns 0,
 * -EINVAL (not mapped) or -errno (opening /proc/self/smaps, fstat). */
int shmb_backing_residency(const shmb_backing_t *b, shmb_backing_residency_t *out);

/* Unmaps, closes and (owner, tmpfs) unlinks, and leaves the registry; safe
 * on a backing whose steps failed part-way and on one destroyed already.
 * Returns the first error met, after trying every step. */
int shmb_backing_destroy(shmb_backing_t *b);

/* Gives the backing to the peer at the other end of ch: one message with
 * its kind, size and page size, plus the name (tmpfs) or the descriptor
 * itself (the memfd kinds, SCM_RIGHTS). The backing must be open (not
 * closed with shmb_segment_close). Returns 0, -EINVAL (no descriptor),
 * -EPIPE (the peer is gone) or -errno. */
int shmb_backing_send(const shmb_backing_t *b, shmb_channel_t *ch);

/* Receives a backing sent with shmb_backing_send: opens the name (tmpfs,
 * checking its size; never registered: the owner unlinks it) or takes the
 * descriptor; not mapped yet (shmb_backing_map, then shmb_backing_destroy,
 * which unlinks nothing here). Returns 0, -EPIPE (the owner is gone before
 * or during the message), -EPROTO (a malformed message, or a memfd kind
 * without a descriptor: anything received is closed) or -errno. */
int shmb_backing_receive(shmb_backing_t *b, shmb_channel_t *ch);

#ifdef __cplusplus
}
#endif

#endif
