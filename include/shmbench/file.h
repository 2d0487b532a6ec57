/*
 * file: the files a run writes (--json_out, --write_trace) and the lines it
 * reads from a file someone gave it (a trace, a flagfile).
 *
 * Output never goes where it must not: a regular file (or none yet) is
 * written into a private temporary file beside it and renamed over it once
 * whole, so that a failed or interrupted run leaves the old file as it was;
 * a character device or FIFO (a terminal, /dev/null, a pipe) is written
 * straight through, never replaced; anything else is refused. Lines are read
 * into a buffer of the caller's size, never more, whatever the file holds.
 *
 * Functions return 0 (or a count) or -errno, a failed system call recorded
 * (shmbench/error.h); nothing here prints or exits.
 */
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

/* Opens path for output, as the top of this file says:
 * - none yet, or a regular file: a fresh temporary file beside it
 *   (".NAME.tmp.XXXXXX", mkstemp: ours alone, checked with fstat to be a
 *   regular file we own with one link), removed by a fatal signal, given the
 *   old file's permissions (a new file: 0666 less the umask);
 * - a character device or a FIFO, or a symbolic link to one (/dev/stdout):
 *   opened for writing without O_CREAT or O_TRUNC, written straight through
 *   (a FIFO waits for its reader, as a shell's > does).
 * Returns 0 with out filled, or -ELOOP (a symbolic link to anything else,
 * or to nothing), -EISDIR (a directory, or a path ending in '/'), -EINVAL
 * (an empty path, or another kind of file: a socket, a block device),
 * -ENAMETOOLONG, or the -errno of a call (the directory missing or not
 * writable: -ENOENT, -EACCES; recorded). */
int shmb_file_out_open(const char *path, shmb_file_out_t *out);

/* Ends the output: flushes it, and for a regular file fsyncs, closes and
 * renames the temporary file over path (refused if path has meanwhile
 * become anything but a regular file: -EEXIST); on any failure the
 * temporary file is removed and path left as it was. Returns 0, or the
 * -errno of the write, fsync, close or rename that failed (recorded with
 * the path; -EIO when a write failed without saying why). out is closed
 * either way. */
int shmb_file_out_commit(shmb_file_out_t *out);

/* Gives the output up: closes it and removes the temporary file; path
 * stays as it was. Safe on an output already committed or aborted. */
void shmb_file_out_abort(shmb_file_out_t *out);

/* Reads the next line of in into buf (cap >= 2 bytes): its bytes without the
 * newline, then a NUL (the line itself may hold NUL bytes: *len says how
 * long it is). Reads at most cap - 1 bytes of a line: a longer one is
 * -E2BIG once cap - 1 bytes are read, the rest left unread. Returns 1 (a
 * line; the last one may lack its newline), 0 (end of file), -E2BIG, -EINVAL
 * (cap < 2) or the read's -errno (-EIO when it set none). */
int shmb_file_read_line(FILE *in, char *buf, size_t cap, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
