/*
 * segment: one POSIX shared-memory segment, step by step, each step timed.
 *
 * Names are "<prefix><pid>_<random>_<n>" (prefix such as "/mooncake_bench_"),
 * created with O_CREAT | O_EXCL and mode 0600, so a run never opens a segment
 * it did not create. Every created name is kept in a process-wide registry
 * until it is unlinked or released on purpose, so that a signal (SIGINT,
 * SIGTERM, SIGHUP, SIGBUS, SIGSEGV, SIGABRT) or a fatal error can unlink
 * everything of ours before the process dies.
 *
 * Sizes are in bytes, times in nanoseconds. Functions return 0 or -errno; a
 * failed system call is also recorded with shmb_error_record().
 */
#ifndef SHMBENCH_SEGMENT_H
#define SHMBENCH_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_SEGMENT_NAME_MAX 255   /* NAME_MAX of /dev/shm */
#define SHMB_SEGMENT_REGISTRY_SLOTS 64

typedef struct shmb_segment {
    char name[SHMB_SEGMENT_NAME_MAX + 1]; /* as given to shm_open, "/..." */
    int fd;                                /* -1 when closed */
    void *addr;                            /* NULL when not mapped */
    size_t size;                           /* bytes */
} shmb_segment_t;

/* Checks a name prefix: starts with '/', has no other '/', and leaves room
 * for the generated suffix. Returns 0, -EINVAL or -ENAMETOOLONG. */
int shmb_segment_check_prefix(const char *prefix);

/* Writes a fresh unique name "<prefix><pid>_<random>_<n>" into buf.
 * Returns 0, -EINVAL (bad prefix) or -ENAMETOOLONG (cap too small). */
int shmb_segment_make_name(char *buf, size_t cap, const char *prefix);

/* shm_open(O_CREAT|O_EXCL|O_RDWR, 0600) under a fresh name, then
 * ftruncate(size); the segment is not mapped yet. open_ns and truncate_ns (may
 * be NULL) receive the time of each call. On failure nothing is left behind:
 * the name is unlinked, the descriptor closed. */
int shmb_segment_create(shmb_segment_t *seg, const char *prefix, size_t size,
                        uint64_t *open_ns, uint64_t *truncate_ns);

/* Reserves the segment's pages with posix_fallocate, so that a full /dev/shm
 * is reported here (-ENOSPC) instead of as SIGBUS on first touch. */
int shmb_segment_reserve(shmb_segment_t *seg);

/* mmap(PROT_READ|PROT_WRITE, MAP_SHARED) of the whole segment; ns (may be
 * NULL) receives the time of the call. */
int shmb_segment_map(shmb_segment_t *seg, uint64_t *ns);

/* close of the segment's descriptor, the mapping and the name staying (as
 * Mooncake's createSharedMemory does after mmap); ns (may be NULL) receives
 * its time. Later destroy or release skip the close. */
int shmb_segment_close(shmb_segment_t *seg, uint64_t *ns);

/* munmap of the segment's mapping; ns (may be NULL) receives its time. */
int shmb_segment_unmap(shmb_segment_t *seg, uint64_t *ns);

/* munmap (if mapped) + close + shm_unlink, timed as one step into ns (may be
 * NULL), and the name leaves the registry. Safe on a segment whose steps
 * failed part-way. Returns the first error met, after trying every step. */
int shmb_segment_destroy(shmb_segment_t *seg, uint64_t *ns);

/* munmap (if mapped) + close, but the name stays in /dev/shm on purpose and
 * leaves the registry (for --cleanup=false). */
int shmb_segment_release(shmb_segment_t *seg);

/* Writes one byte in every page of [addr, addr + bytes): the first-touch
 * cost a fresh mapping pays. addr must be page-aligned. */
void shmb_segment_touch(void *addr, size_t bytes);

/* Installs the handlers that unlink every registered segment and then let the
 * signal take its default action, and ignores SIGXFSZ so that a segment above
 * the file-size limit fails with EFBIG. Returns 0 or -errno (sigaction). */
int shmb_segment_install_signal_cleanup(void);

/* Unlinks every registered segment now (for fatal-error paths). Async-signal
 * safe. Returns how many names were unlinked. */
size_t shmb_segment_unlink_all(void);

/* How many names the registry holds. */
size_t shmb_segment_registered(void);

#ifdef __cplusplus
}
#endif

#endif
