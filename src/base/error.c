/* error: the record of the last failed system call, per thread, and the hint
 * and clean-up command a failure line offers (shmbench/error.h). */
#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static _Thread_local shmb_error_t last_error;

int shmb_error_record(const char *call, int err, const char *object)
{
    last_error.call = call;
    last_error.err = err;
    last_error.object[0] = '\0';
    if (object) {
        strncpy(last_error.object, object, sizeof(last_error.object) - 1);
        last_error.object[sizeof(last_error.object) - 1] = '\0';
    }
    return -err;
}

const shmb_error_t *shmb_error_last(void)
{
    return &last_error;
}

void shmb_error_clear(void)
{
    memset(&last_error, 0, sizeof(last_error));
}

/* s in single quotes, each ' written as '\'', so that a shell takes it as
 * one word whatever it holds. cap >= 8. */
static void shell_quote(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    out[n++] = '\'';
    for (; *s && n + 6 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *s;
        }
    }
    out[n++] = '\'';
    out[n] = '\0';
}

static int is_call(const char *call, const char *name)
{
    return call && strcmp(call, name) == 0;
}

void shmb_error_clean_command(const char *prefix, char *out, size_t cap)
{
    char quoted[4 * SHMB_ERROR_OBJECT_MAX + 8];
    shell_quote(prefix ? prefix : "/mooncake_bench_", quoted, sizeof(quoted));
    snprintf(out, cap, "scripts/clean_shm.sh --prefix %s", quoted);
}

/* A pool of backing.c's memfd kinds: its pages come from memory (memfd,
 * thp) or from the reserved huge page pool (hugetlb), never from /dev/shm's
 * size. A hugetlb MAP_SHARED mapping reserves its pages at mmap (ENOMEM);
 * fallocate allocates them (ENOSPC). */
static int backing_hint(int err, const char *object, char *out, size_t cap)
{
    if (!object || (err != ENOMEM && err != ENOSPC))
        return -1;
    if (strcmp(object, "hugetlb") == 0)
        return snprintf(out, cap, "too few free huge pages: HugePages_Free less HugePages_Rsvd in "
                        "/proc/meminfo (pages that other mappings reserved are not free); reserve more as "
                        "root: echo N > /proc/sys/vm/nr_hugepages (2 MiB pages; 1 GiB pages: "
                        "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages)");
    if (strcmp(object, "memfd") == 0 || strcmp(object, "thp") == 0)
        return snprintf(out, cap, "out of memory for a %s pool (not /dev/shm's size): check MemAvailable "
                        "in /proc/meminfo and the memory.max of this process's cgroup, or lower the size",
                        object);
    return -1;
}

/* What snprintf wrote of n characters into cap bytes. */
static size_t written(int n, size_t cap)
{
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
}

size_t shmb_error_hint_for(const char *call, int err, const char *object, const char *prefix, char *out,
                           size_t cap)
{
    int n = backing_hint(err, object, out, cap);
    return n < 0 ? shmb_error_hint(call, err, prefix, out, cap) : written(n, cap);
}

size_t shmb_error_hint(const char *call, int err, const char *prefix, char *out, size_t cap)
{
    char clean[4 * SHMB_ERROR_OBJECT_MAX + 40];
    shmb_error_clean_command(prefix, clean, sizeof(clean));
    int n;
    switch (err) {
    case EACCES:
    case EPERM:
        n = snprintf(out, cap, "check the permissions of /dev/shm (ls -ld /dev/shm; it should be "
                     "drwxrwxrwt: sudo chmod 1777 /dev/shm) or run with sufficient permissions");
        break;
    case EFBIG:
        n = snprintf(out, cap, "the segment is larger than this process may create: check "
                     "ulimit -f, and the free space with df -h /dev/shm");
        break;
    case ENOSPC:
        if (is_call(call, "shm_open"))
            n = snprintf(out, cap, "/dev/shm has no free inodes (df -i /dev/shm): remove stale "
                         "segments of earlier runs with %s, or "
                         "remount it with more (mount -o remount,nr_inodes=N /dev/shm)", clean);
        else
            n = snprintf(out, cap, "/dev/shm is full: check it with df -h /dev/shm and remove "
                         "stale segments of earlier runs with %s", clean);
        break;
    case ENOMEM:
        n = snprintf(out, cap, "out of memory: lower the sizes or counts, or check ulimit -v, "
                     "vm.max_map_count and the memory.max of this process's cgroup");
        break;
    case EMFILE:
    case ENFILE:
        n = snprintf(out, cap, "too many open files: raise the limit with ulimit -n");
        break;
    case EEXIST:
        n = snprintf(out, cap, "every fresh name tried exists already (another process creates "
                     "them?): remove stale segments with %s or "
                     "choose another --shm_prefix", clean);
        break;
    case ENAMETOOLONG:
        n = snprintf(out, cap, "shorten --shm_prefix");
        break;
    case EINVAL:
        if (is_call(call, "shm_open") || is_call(call, "shm_unlink"))
            n = snprintf(out, cap, "check --shm_prefix: one leading '/', no other '/', short enough");
        else if (is_call(call, "ftruncate") || is_call(call, "mmap") ||
                 is_call(call, "posix_fallocate"))
            n = snprintf(out, cap, "the size is not valid for this call: lower the size flags");
        else if (is_call(call, "sched_setaffinity"))
            n = snprintf(out, cap, "the CPU is outside this process's allowed set (taskset -p "
                         "$$; cpuset of its cgroup): choose --cpu within it");
        else
            n = snprintf(out, cap, "%s", "");
        break;
    default:
        n = snprintf(out, cap, "%s", "");
    }
    return written(n, cap);
}
