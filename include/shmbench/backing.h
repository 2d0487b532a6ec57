/* backing: what a shared pool's pages are (tmpfs: a named segment; memfd,
 * thp, hugetlb: a memfd passed over a channel) and how they are made ready
 * (prefault: none, touch, populate, populate_write, fallocate); what the
 * kernel granted is read back from smaps, never assumed (docs/backing.md).
 * Sizes in bytes, times in ns; functions return 0 or -errno, a failed system
 * call recorded, out-parameters written only on success. */
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

/* The page size of cfg's backing. 0 or -EINVAL (unknown kind, hugetlb size not 0, 2 MiB, 1 GiB). */
int shmb_backing_page_size(const shmb_backing_config_t *cfg, uint64_t *out);

/* size rounded up to the page. 0, -EINVAL (as page_size, or size 0) or -EOVERFLOW. */
int shmb_backing_round(const shmb_backing_config_t *cfg, uint64_t size, uint64_t *out);

/* Opens (shm_open or memfd_create) and ftruncates size rounded to the page,
 * not mapped, timed into ns (may be NULL); on failure nothing is left. 0,
 * -EINVAL (bad config, size 0, an MFD_HUGE_* size unknown here), -EOVERFLOW or -errno. */
int shmb_backing_create(shmb_backing_t *b, const shmb_backing_config_t *cfg, uint64_t size, uint64_t *ns);

/* fallocate of the whole file in `threads` ranges at once. 0, -EINVAL (threads
 * out of 1..SHMB_BACKING_MAX_THREADS), -ENOSPC (full, cgroup limit), -ENOMEM or -errno. */
int shmb_backing_fallocate(shmb_backing_t *b, int threads);

/* mmap(MAP_SHARED) of the whole backing (MAP_POPULATE if populate; thp:
 * 2 MiB-aligned, then MADV_HUGEPAGE), timed into ns (may be NULL). A populate
 * that failed still succeeds: check the residency. 0, -ENOMEM (hugetlb) or -errno. */
int shmb_backing_map(shmb_backing_t *b, int populate, uint64_t *ns);

/* After map: touch (guarded writes) or populate_write over `threads` threads;
 * other methods do nothing here. 0, -EINVAL (not mapped, threads out of range,
 * no MADV_POPULATE_WRITE), -ENOSPC (touch: full), -ENOMEM or -EFAULT
 * (populate_write: full) or -errno. */
int shmb_backing_prefault(shmb_backing_t *b, shmb_prefault_t how, int threads);

/* create, fallocate, map, prefault as `how` needs, each timed, with the page
 * faults and the residency after; mapped on success (the caller destroys),
 * nothing left on failure. 0 or the first step's -errno. */
int shmb_backing_ready(shmb_backing_t *b, const shmb_backing_config_t *cfg, uint64_t size,
                       shmb_prefault_t how, int threads, shmb_backing_ready_t *out);

/* What the mapping holds now (/proc/self/smaps, fstat). 0, -EINVAL (not mapped) or -errno. */
int shmb_backing_residency(const shmb_backing_t *b, shmb_backing_residency_t *out);

/* Unmaps, closes, (owner, tmpfs) unlinks; safe part-way and twice. The first error, after every step. */
int shmb_backing_destroy(shmb_backing_t *b);

/* One message to the peer on ch: kind, size, page size, and the name (tmpfs)
 * or the descriptor. Needs the fd open. 0, -EINVAL (no fd), -EPIPE or -errno. */
int shmb_backing_send(const shmb_backing_t *b, shmb_channel_t *ch);

/* Receives what shmb_backing_send sent: opens the name (size checked, not
 * registered) or takes the fd; not mapped. 0, -EPIPE, -EPROTO (malformed:
 * anything received closed) or -errno. */
int shmb_backing_receive(shmb_backing_t *b, shmb_channel_t *ch);

#ifdef __cplusplus
}
#endif

#endif
