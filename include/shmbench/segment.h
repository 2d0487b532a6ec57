/*
 * segment: one POSIX shared-memory segment, step by step, each step timed.
 *
 * Names are "<prefix><pid>_<random>_<n>" (prefix such as "/mooncake_bench_",
 * 16 hex digits of fresh getrandom(2) randomness per name, n a counter),
 * created with O_CREAT | O_EXCL and mode 0600, so a run never opens a segment
 * it did not create; a name that exists already is retried with a new one.
 * A name enters a process-wide registry only once this process has created it
 * (signals blocked across create + register), and stays there until it is
 * unlinked or released on purpose, so that a signal or a fatal error unlinks
 * everything of ours, and nothing else, before the process dies: a name is
 * unlinked only while it still names the file created (same device, inode,
 * owner and mode as fstat said right after shm_open).
 *
 * Forks: a child starts with a registry of its own (the module watches
 * forks), so a signal in the child unlinks only what the child created. The
 * parent's registry stays readable in the child until the end, so that a
 * child that outlives a parent killed without cleanup (SIGKILL) can unlink
 * the parent's names: shmb_segment_unlink_inherited().
 *
 * Signals: every signal whose default action ends the process is caught
 * (HUP INT QUIT ILL TRAP ABRT BUS FPE USR1 SEGV USR2 PIPE ALRM TERM STKFLT IO
 * XCPU VTALRM PROF PWR SYS and the real-time signals): the handler unlinks
 * what is registered and lets the signal take its default action; when that
 * action is discarded (PID 1 of a PID namespace, a container's init), it
 * _exit()s with 128 + the signal's number, as a shell reports a death by
 * that signal. A signal ignored when the process started (nohup, `trap ''
 * INT`) stays ignored, except the faults (SEGV BUS FPE ILL), which the
 * kernel delivers anyway. A signal the system refuses with EINVAL (valgrind
 * keeps some real-time signals for itself) is skipped. SIGXFSZ is
 * ignored on purpose, so a segment above the file-size limit (ulimit -f)
 * fails with EFBIG instead of killing the run. SIGKILL and SIGSTOP cannot be
 * caught: a SIGKILL (the OOM killer's too) leaves segments behind.
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

/* Checks a name prefix: starts with '/', has no other '/', and leaves room
 * for the generated suffix. Returns 0, -EINVAL or -ENAMETOOLONG. */
int shmb_segment_check_prefix(const char *prefix);

/* Writes a fresh unique name "<prefix><pid>_<random>_<n>" into buf.
 * Returns 0, -EINVAL (bad prefix) or -ENAMETOOLONG (cap too small). */
int shmb_segment_make_name(char *buf, size_t cap, const char *prefix);

/* shm_open(O_CREAT|O_EXCL|O_RDWR, 0600) under a fresh name (up to 16 names
 * are tried while they exist already), then ftruncate(size); the segment is
 * not mapped yet. open_ns and truncate_ns (may be NULL) receive the time of
 * each call. On failure nothing is left behind: the name is unlinked (only if
 * we created it), the descriptor closed, seg->name is "". Returns 0, -EEXIST
 * (every name tried was taken), -ENOBUFS (registry full) or -errno. */
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
 * cost a fresh mapping pays. addr must be page-aligned. A SIGBUS (a full
 * /dev/shm) kills the process, after the handler unlinked our segments. */
void shmb_segment_touch(void *addr, size_t bytes);

/* A write of n bytes at dst (from src, which may be NULL if fn ignores it),
 * such as a copy kernel; the same signature as shmb_copy_fn. */
typedef void (*shmb_segment_write_fn)(void *dst, const void *src, size_t n);

/* fn(dst, src, n), for a first write into fresh pages that is timed and so
 * not reserved beforehand (Mooncake's path: shm_open + ftruncate + mmap, then
 * the first write allocates the tmpfs pages): when /dev/shm runs out of space
 * inside it (a SIGBUS at an address in [dst, dst + n)), fn is left where it
 * was (siglongjmp) and -ENOSPC is returned (recorded as "first write") with
 * the thread's signal mask as it was; else 0. fn must hold no lock and no
 * resource a jump out of it would leak (copy kernels do not). No system call
 * on the way (sigsetjmp without saving the mask; a thread-local jump buffer
 * armed only during fn); thread-safe: each thread guards its own writes.
 * Needs shmb_segment_install_signal_cleanup() first, else a SIGBUS kills as
 * in shmb_segment_touch. */
int shmb_segment_first_write_copy(void *dst, const void *src, size_t n, shmb_segment_write_fn fn);

/* The writes of shmb_segment_touch, guarded as shmb_segment_first_write_copy
 * guards a copy: 0, or -ENOSPC when /dev/shm ran out of space inside them. */
int shmb_segment_first_write(void *addr, size_t bytes);

/* The bytes of the segment's file that hold pages (fstat st_blocks * 512):
 * 0 for a segment only ftruncated, its size once every page was written or
 * reserved. Needs the descriptor open. Returns 0 or -errno (fstat). */
int shmb_segment_allocated(const shmb_segment_t *seg, uint64_t *bytes);

/* Opens a segment another process created, as its receiver does:
 * shm_open(name, O_RDWR) and fstat, whose size must be `bytes`. Nothing is
 * registered (a receiver never unlinks the owner's names). Returns the
 * descriptor, or -errno recorded as "shm_open", "fstat", or "fstat size
 * check" (-EPROTO, object "<name>: <size> bytes, expected <bytes>"); on
 * failure no descriptor is left open. */
int shmb_segment_open_existing(const char *name, uint64_t bytes);

/* Installs the handlers that unlink every registered segment and tracked file
 * and then end the process by the signal (see the top of this file for the
 * list, and for the signals left as they are), and ignores SIGXFSZ so that
 * a segment above the file-size limit fails with EFBIG. Returns 0 or -errno
 * (sigaction, an error other than EINVAL). */
int shmb_segment_install_signal_cleanup(void);

/* The line the SIGBUS handler writes to stderr (a newline added), after
 * unlinking what is registered, before it _exit()s with status 1, when
 * /dev/shm ran out of space under a write that no first-write guard covers:
 * an allocator's own headers in pages nobody reserved (boost.interprocess's
 * rbtree_best_fit writes one beside every block it hands out), so that the
 * run ends with the caller's "no space" line, never a bare SIGBUS. Such a
 * fault is a SIGBUS with si_code BUS_ADRERR (what tmpfs gives when it has no
 * page for a shared mapping). Without a line (never set, or NULL or ""),
 * the signal kills as the top of this file says. The line is copied. Call it
 * once at start-up, before other threads write into segments. Returns 0 or
 * -ENAMETOOLONG (SHMB_SEGMENT_FAULT_LINE_MAX bytes or more). */
int shmb_segment_set_fault_line(const char *line);

/* The status the SIGBUS handler exits with after the fault line (a peer that
 * exits so has said why: shmb_peer_record_end). */
#define SHMB_SEGMENT_FAULT_EXIT 1

/* Unlinks every registered segment and tracked file now (for fatal-error
 * paths). Async-signal safe. Returns how many names were unlinked. */
size_t shmb_segment_unlink_all(void);

/* Adds a file outside /dev/shm (a temporary output file) to what a signal or
 * shmb_segment_unlink_all removes. Returns an id >= 0, -ENAMETOOLONG or
 * -ENOBUFS (more than SHMB_SEGMENT_TRACKED_FILES at once). */
int shmb_segment_track_file(const char *path);

/* Forgets a tracked file (once it is renamed into place); -1 is fine. */
void shmb_segment_untrack_file(int id);

/* How many names the registry holds. */
size_t shmb_segment_registered(void);

/* In a child of fork(): unlinks the names the parent had registered (up to
 * the moment it died) and that still name the files it created, and nothing
 * else; for a child whose parent died without cleaning up (SIGKILL). Call it
 * only once the parent is gone. Async-signal-safe (lstat, unlink). Returns
 * how many names were unlinked; 0 in a process that was not forked from one
 * that registered names. */
size_t shmb_segment_unlink_inherited(void);

/* Forgets every registered name and tracked file without unlinking any, so
 * that a signal or shmb_segment_unlink_all() unlinks only what is created
 * afterwards. (A forked child needs no call: it starts with a registry of
 * its own, and the parent's shmb_segment_t objects copied into it must not
 * be destroyed or released there.) Returns how many names were forgotten. */
size_t shmb_segment_forget_all(void);

#ifdef __cplusplus
}
#endif

#endif
