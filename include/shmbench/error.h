/* error: the last failed system call, per thread (its name and object), so
 * that a caller prints "shm_open(/name) failed: ..." and the library never
 * prints; and the hint a failure line offers. */
#ifndef SHMBENCH_ERROR_H
#define SHMBENCH_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ERROR_OBJECT_MAX 256

/* A C function implemented in C++ (the models): noexcept, exceptions become -errno. */
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

/* Records a failed call for this thread (object may be NULL). Returns -err. */
int shmb_error_record(const char *call, int err, const char *object);

/* The last failure recorded on this thread (call is NULL if there was none). */
const shmb_error_t *shmb_error_last(void);

/* Forgets the last failure of this thread. */
void shmb_error_clear(void);

/* One line of what to try after `call` (may be NULL) failed with err, by call
 * and errno, "" if nothing specific; clean-up advice names
 * shmb_error_clean_command(prefix). Into out (truncated). Returns its length. */
size_t shmb_error_hint(const char *call, int err, const char *prefix, char *out, size_t cap);

/* The same, knowing the object: a "memfd", "thp" or "hugetlb" backing runs out
 * of memory or huge pages, not of /dev/shm. */
size_t shmb_error_hint_for(const char *call, int err, const char *object, const char *prefix, char *out,
                           size_t cap);

/* "scripts/clean_shm.sh --prefix '<prefix>'" (NULL: the default; shell-quoted)
 * into out, truncated. */
void shmb_error_clean_command(const char *prefix, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
