/* file: the files a run writes (--json_out, --write_trace), replacing a
 * regular file only once whole, and the bounded lines it reads (a trace, a
 * flagfile). Functions return 0 (or a count) or -errno, a failed system call
 * recorded. */
#ifndef SHMBENCH_FILE_H
#define SHMBENCH_FILE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_FILE_PATH_MAX 4096 /* bytes of a path, its NUL included */

/* An output being written. */
typedef struct shmb_file_out {
    FILE *f;       /* where to write */
    int replace;   /* 1: f is the private temporary tmp, renamed over path by commit */
    int tracked;   /* tmp's id among the files a signal removes (shmbench/segment.h); -1: none */
    char path[SHMB_FILE_PATH_MAX];
    char tmp[SHMB_FILE_PATH_MAX];
} shmb_file_out_t;

/* Opens path for output: a regular file or none into a private temporary
 * ".NAME.tmp.XXXXXX" beside it (tracked for signals, the old file's mode or
 * 0666 less umask); a device or FIFO (or a link to one) written through.
 * 0, -ELOOP (a link to anything else), -EISDIR, -EINVAL (empty path, a
 * socket, a block device), -ENAMETOOLONG or -errno (recorded). */
int shmb_file_out_open(const char *path, shmb_file_out_t *out);

/* Flushes, fsyncs and renames the temporary over path (-EEXIST if path is no
 * longer a regular file); on failure path stays as it was. out is closed
 * either way. 0 or the failed call's -errno (recorded; -EIO if none said). */
int shmb_file_out_commit(shmb_file_out_t *out);

/* Closes and removes the temporary; path stays. Safe when ended already. */
void shmb_file_out_abort(shmb_file_out_t *out);

/* The next line without its newline into buf, NUL-terminated, its length
 * (NULs included) into *len. 1 (a line), 0 (end of file), -E2BIG (longer
 * than cap - 1: the rest unread), -EINVAL (cap < 2) or -errno (-EIO). */
int shmb_file_read_line(FILE *in, char *buf, size_t cap, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
