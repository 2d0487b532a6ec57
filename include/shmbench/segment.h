/* segment: one POSIX shared-memory segment, step by step, each step timed.
 * Names "<prefix><pid>_<random>_<n>" (O_CREAT | O_EXCL, 0600) enter a
 * registry that a fatal signal unlinks (only while they still name the file
 * created); a forked child registers into its own. Sizes in bytes, times in
 * ns; functions return 0 or -errno, a failed system call recorded. */
#ifndef SHMBENCH_SEGMENT_H
#define SHMBENCH_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_SEGMENT_NAME_MAX 255   /* NAME_MAX of /dev/shm */
#define SHMB_SEGMENT_REGISTRY_SLOTS 131072 /* live segments per process */
#define SHMB_SEGMENT_TRACKED_FILES 4       /* other files, see track_file */
#define SHMB_SEGMENT_FAULT_LINE_MAX 1024   /* bytes of a fault line, see set_fault_line */

typedef struct shmb_segment {
    char name[SHMB_SEGMENT_NAME_MAX + 1]; /* as given to shm_open, "/..."; "" if none */
    int fd;                                /* -1 when closed */
    void *addr;                            /* NULL when not mapped */
    size_t size;                           /* bytes */
    int slot;                              /* registry slot; -1 when not registered */
} shmb_segment_t;

/* A name prefix: one leading '/', no other, room for the suffix. 0, -EINVAL or -ENAMETOOLONG. */
int shmb_segment_check_prefix(const char *prefix);

/* A fresh name into buf. 0, -EINVAL (bad prefix) or -ENAMETOOLONG (cap too small). */
int shmb_segment_make_name(char *buf, size_t cap, const char *prefix);

/* shm_open of a fresh name (16 tried) + ftruncate, registered, not mapped;
 * open_ns, truncate_ns (may be NULL) time each. On failure nothing is left,
 * seg->name "". 0, -EEXIST (every name taken), -ENOBUFS (registry full) or -errno. */
int shmb_segment_create(shmb_segment_t *seg, const char *prefix, size_t size,
                        uint64_t *open_ns, uint64_t *truncate_ns);

/* posix_fallocate of the pages: a full /dev/shm is -ENOSPC here, not a SIGBUS later. */
int shmb_segment_reserve(shmb_segment_t *seg);

/* mmap(MAP_SHARED) of the whole segment, timed into ns (may be NULL). */
int shmb_segment_map(shmb_segment_t *seg, uint64_t *ns);

/* close of the descriptor, mapping and name staying (as Mooncake does after
 * mmap), timed into ns (may be NULL). */
int shmb_segment_close(shmb_segment_t *seg, uint64_t *ns);

/* munmap, timed into ns (may be NULL). */
int shmb_segment_unmap(shmb_segment_t *seg, uint64_t *ns);

/* munmap + close + shm_unlink as one timed step (ns may be NULL), leaving the
 * registry; safe part-way. Returns the first error, after trying every step. */
int shmb_segment_destroy(shmb_segment_t *seg, uint64_t *ns);

/* munmap + close; the name stays in /dev/shm and leaves the registry (--cleanup=false). */
int shmb_segment_release(shmb_segment_t *seg);

/* One byte into every page of [addr, addr + bytes) (page-aligned); unguarded:
 * a full /dev/shm's SIGBUS kills, after the cleanup. */
void shmb_segment_touch(void *addr, size_t bytes);

/* A write of n bytes at dst from src (may be NULL), as shmb_copy_fn. */
typedef void (*shmb_segment_write_fn)(void *dst, const void *src, size_t n);

/* fn(dst, src, n) into unreserved pages, guarded: a SIGBUS inside [dst, dst + n)
 * (/dev/shm full) jumps out of fn and returns -ENOSPC (recorded "first write").
 * No system call on the way; per thread; fn must hold no lock. Needs
 * shmb_segment_install_signal_cleanup(). */
int shmb_segment_first_write_copy(void *dst, const void *src, size_t n, shmb_segment_write_fn fn);

/* shmb_segment_touch, guarded as first_write_copy: 0 or -ENOSPC. */
int shmb_segment_first_write(void *addr, size_t bytes);

/* The bytes of the file that hold pages (st_blocks * 512); needs the fd. 0 or -errno. */
int shmb_segment_allocated(const shmb_segment_t *seg, uint64_t *bytes);

/* shm_open(name, O_RDWR) of another process's segment of `bytes` bytes, not
 * registered. Returns the fd, or -errno recorded ("fstat size check": -EPROTO,
 * "<name>: <size> bytes, expected <bytes>"). */
int shmb_segment_open_existing(const char *name, uint64_t bytes);

/* Catches every signal whose default ends the process (not those inherited
 * ignored, except faults; not those the system refuses): unlinks what is
 * registered, then dies by the signal (PID 1: _exit(128 + sig)). Ignores
 * SIGXFSZ (EFBIG instead). 0 or -errno (sigaction). */
int shmb_segment_install_signal_cleanup(void);

/* The line (copied; NULL or "": none) a SIGBUS BUS_ADRERR outside a guard (an
 * allocator's headers in a full /dev/shm) writes to stderr before
 * _exit(SHMB_SEGMENT_FAULT_EXIT), instead of a bare SIGBUS. Call at start-up.
 * 0 or -ENAMETOOLONG. */
int shmb_segment_set_fault_line(const char *line);

/* The exit status after the fault line (a peer that exits so said why). */
#define SHMB_SEGMENT_FAULT_EXIT 1

/* Unlinks every registered name and tracked file now; async-signal-safe. Returns how many. */
size_t shmb_segment_unlink_all(void);

/* Adds a file outside /dev/shm to what unlink_all removes. An id >= 0,
 * -ENAMETOOLONG or -ENOBUFS (SHMB_SEGMENT_TRACKED_FILES in use). */
int shmb_segment_track_file(const char *path);

/* Forgets a tracked file (renamed into place); -1 is fine. */
void shmb_segment_untrack_file(int id);

/* Holds the cleanup signals on this thread (faults stay deliverable) until
 * shmb_segment_release_signals, which restores the mask from before; not
 * nested. For code that creates segments itself, then adopts them. */
void shmb_segment_hold_signals(void);
void shmb_segment_release_signals(void);

/* Registers a segment that other code of this process created (its name as
 * given to shm_open, with or without the leading '/'), so that a fatal
 * signal unlinks it too while the name still names that file. Its slot, or
 * -errno (lstat's, -ENAMETOOLONG, -ENOBUFS). */
int shmb_segment_adopt(const char *name);

/* Takes an adopted segment out of the registry once its creator removed it; -1 is fine. */
void shmb_segment_disown(int slot);

/* How many names the registry holds. */
size_t shmb_segment_registered(void);

/* In a forked child whose parent is gone (SIGKILL): unlinks the parent's
 * registered names that still name its files. Async-signal-safe. Returns how many. */
size_t shmb_segment_unlink_inherited(void);

/* Forgets every registered name and tracked file, unlinking none. Returns how many. */
size_t shmb_segment_forget_all(void);

#ifdef __cplusplus
}
#endif

#endif
