/* file: output that replaces only a regular file, through a private
 * temporary, or writes straight through to a device or FIFO; bounded lines. */
#include "shmbench/file.h"

#include "shmbench/error.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file of this type is as an output: 0 for a regular file (replaced),
 * 1 for one written through, else -errno (refused). */
static int kind_of(mode_t mode)
{
    if (S_ISREG(mode))
        return 0;
    if (S_ISCHR(mode) || S_ISFIFO(mode))
        return 1;
    return S_ISDIR(mode) ? -EISDIR : -EINVAL;
}

static void reset(shmb_file_out_t *out)
{
    out->f = NULL;
    out->replace = 0;
    out->tracked = -1;
    out->tmp[0] = '\0';
}

/* A device or FIFO: no O_CREAT (it exists; a vanished one is an error, not a
 * new file) and no O_TRUNC; fstat says it is still one once open. */
static int open_through(const char *path, shmb_file_out_t *out)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return shmb_error_record("open", errno, path);
    struct stat st;
    int ret = fstat(fd, &st) != 0 ? shmb_error_record("fstat", errno, path) : kind_of(st.st_mode);
    if (ret == 1 && !(out->f = fdopen(fd, "w")))
        ret = shmb_error_record("fdopen", errno, path);
    if (ret != 1) {
        close(fd);
        return ret == 0 ? -EEXIST : ret; /* a regular file took its place: not ours to write into */
    }
    return 0;
}

/* The temporary file beside path: created and tracked with every signal
 * blocked, so that no signal comes between the two and leaves it behind. */
static int open_temporary(shmb_file_out_t *out, mode_t mode)
{
    const char *slash = strrchr(out->path, '/');
    const size_t dir = slash ? (size_t)(slash - out->path) + 1 : 0;
    if (!out->path[dir])
        return -EISDIR;
    if (snprintf(out->tmp, sizeof(out->tmp), "%.*s.%s.tmp.XXXXXX", (int)dir, out->path, out->path + dir) >=
        (int)sizeof(out->tmp))
        return -ENAMETOOLONG;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int fd = mkostemp(out->tmp, O_CLOEXEC);
    int err = errno;
    if (fd >= 0)
        out->tracked = shmb_segment_track_file(out->tmp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        out->tmp[0] = '\0';
        return shmb_error_record("mkstemp", err, out->path);
    }
    out->replace = 1;
    /* Ours alone: a regular file with one link, owned by us, empty. */
    struct stat st;
    int ret = 0;
    if (fstat(fd, &st) != 0)
        ret = shmb_error_record("fstat", errno, out->tmp);
    else if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid() || st.st_size != 0)
        ret = shmb_error_record("mkstemp", EEXIST, out->tmp);
    else if (fchmod(fd, mode) != 0)
        ret = shmb_error_record("fchmod", errno, out->tmp);
    else if (!(out->f = fdopen(fd, "w")))
        ret = shmb_error_record("fdopen", errno, out->tmp);
    if (ret < 0) {
        close(fd);
        shmb_file_out_abort(out);
    }
    return ret;
}

int shmb_file_out_open(const char *path, shmb_file_out_t *out)
{
    shmb_file_out_t o;
    reset(&o);
    const size_t n = path ? strlen(path) : 0;
    if (n == 0)
        return -EINVAL;
    /* room for the temporary's ".", ".tmp.XXXXXX" and NUL */
    if (n + 13 > sizeof(o.path))
        return -ENAMETOOLONG;
    memcpy(o.path, path, n + 1);
    struct stat st;
    mode_t mode;
    int ret;
    if (lstat(path, &st) == 0) {
        const int link = S_ISLNK(st.st_mode);
        if (link && stat(path, &st) != 0)
            return -ELOOP; /* to nothing, or a loop */
        ret = kind_of(st.st_mode);
        if (ret == 1) {
            ret = open_through(path, &o);
            if (ret == 0)
                *out = o;
            return ret;
        }
        if (link)
            return -ELOOP; /* renaming would replace the link, writing through it a file elsewhere */
        if (ret < 0)
            return ret;
        mode = st.st_mode & 07777;
    } else if (errno == ENOENT) {
        /* umask only reads by setting: put back at once */
        const mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    } else {
        return shmb_error_record("lstat", errno, path);
    }
    ret = open_temporary(&o, mode);
    if (ret == 0)
        *out = o;
    return ret;
}

int shmb_file_out_commit(shmb_file_out_t *out)
{
    if (!out->f)
        return -EBADF;
    int ret = 0;
    errno = 0;
    if (fflush(out->f) != 0 || ferror(out->f))
        ret = shmb_error_record("write", errno ? errno : EIO, out->path);
    if (ret == 0 && out->replace && fsync(fileno(out->f)) != 0)
        ret = shmb_error_record("fsync", errno, out->path);
    if (fclose(out->f) != 0 && ret == 0)
        ret = shmb_error_record("close", errno, out->path);
    out->f = NULL;
    if (ret == 0 && out->replace) {
        /* What was a regular file or nothing at open may have become a device
         * or a link since: never renamed over. */
        struct stat st;
        if (lstat(out->path, &st) == 0 && !S_ISREG(st.st_mode))
            ret = shmb_error_record("rename", EEXIST, out->path);
        else if (rename(out->tmp, out->path) != 0)
            ret = shmb_error_record("rename", errno, out->path);
        else
            out->tmp[0] = '\0';
    }
    shmb_file_out_abort(out);
    return ret;
}

void shmb_file_out_abort(shmb_file_out_t *out)
{
    if (out->f)
        fclose(out->f);
    if (out->tmp[0])
        unlink(out->tmp);
    shmb_segment_untrack_file(out->tracked);
    reset(out);
}

int shmb_file_read_line(FILE *in, char *buf, size_t cap, size_t *len)
{
    if (cap < 2)
        return -EINVAL;
    size_t n = 0;
    int c;
    int ret = 1;
    flockfile(in);
    errno = 0;
    while ((c = getc_unlocked(in)) != '\n') {
        if (c == EOF) {
            if (ferror(in))
                ret = errno ? -errno : -EIO;
            else if (n == 0)
                ret = 0;
            break;
        }
        if (n == cap - 1) {
            ungetc(c, in);
            ret = -E2BIG;
            break;
        }
        buf[n++] = (char)c;
    }
    funlockfile(in);
    buf[n] = '\0';
    if (ret > 0)
        *len = n;
    return ret;
}
