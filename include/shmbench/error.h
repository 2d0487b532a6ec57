/*
 * error: what the library's last failed system call was.
 *
 * Library functions return 0 (or a count) on success and -errno on failure.
 * When the failure comes from a system call, the function also records the
 * call's name and the object it acted on, so that the caller can print
 * "shm_open(/name) failed: Permission denied" without the library printing.
 * The record is per thread and is overwritten by the next failure.
 */
#ifndef SHMBENCH_ERROR_H
#define SHMBENCH_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ERROR_OBJECT_MAX 256

/* Marks the declaration of a function the library implements in C++ (the
 * system models): noexcept seen from C++, nothing in C. Such a function
 * catches every exception itself and returns -errno instead. */
#ifdef __cplusplus
#define SHMB_NOEXCEPT noexcept
#else
#define SHMB_NOEXCEPT
#endif

typedef struct shmb_error {
    const char *call;                   /* static string, e.g. "shm_open"; NULL if none */
    int err;                            /* positive errno value */
    char object[SHMB_ERROR_OBJECT_MAX]; /* what the call acted on, may be "" */
} shmb_error_t;

/* Records a failed call for this thread. Returns -err, so a caller can write
 * `return shmb_error_record("mmap", errno, name);`. object may be NULL. */
int shmb_error_record(const char *call, int err, const char *object);

/* The last failure recorded on this thread (call is NULL if there was none). */
const shmb_error_t *shmb_error_last(void);

/* Forgets the last failure of this thread. */
void shmb_error_clear(void);

/* What a user can try when `call` (as recorded, e.g. "shm_open"; NULL if
 * unknown) failed with err: one line into out (cap bytes, truncated to fit),
 * "" when there is nothing specific to say. The advice depends on the call
 * (EINVAL from shm_open is the name prefix, from mmap the size, from
 * sched_setaffinity the CPU; ENOSPC from shm_open is a lack of inodes, from
 * the others a lack of space). Clean-up advice names scripts/clean_shm.sh
 * with `prefix` (the --shm_prefix in use; NULL: its default), shell-quoted.
 * Returns the hint's length. */
size_t shmb_error_hint(const char *call, int err, const char *prefix, char *out, size_t cap);

/* The same, knowing the object the call acted on (NULL or "": as above): a
 * backing without a name in /dev/shm (shmbench/backing.h's "memfd", "thp",
 * "hugetlb") runs out of memory or of reserved huge pages, not of /dev/shm. */
size_t shmb_error_hint_for(const char *call, int err, const char *object, const char *prefix, char *out,
                           size_t cap);

/* The command that removes segments of dead runs named after `prefix` (NULL:
 * the default): "scripts/clean_shm.sh --prefix '<prefix>'", the prefix
 * shell-quoted so that a shell takes it as one word whatever it holds. Into
 * out (cap bytes, truncated to fit). */
void shmb_error_clean_command(const char *prefix, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
