#include "shmbench/error.h"

#include <errno.h>
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

const char *shmb_error_hint(int err)
{
    switch (err) {
    case EACCES:
    case EPERM:
        return "check the permissions of /dev/shm (ls -ld /dev/shm; it should be "
               "drwxrwxrwt: sudo chmod 1777 /dev/shm) or run with sufficient permissions";
    case EFBIG:
        return "the segment is larger than this process may create: check ulimit -f, "
               "and the free space with df -h /dev/shm";
    case ENOSPC:
        return "/dev/shm is full: check it with df -h /dev/shm and remove stale "
               "segments of earlier runs (rm /dev/shm/mooncake_bench_*)";
    case ENOMEM:
        return "out of memory: lower the sizes or counts, or check ulimit -v and "
               "vm.max_map_count";
    case EMFILE:
    case ENFILE:
        return "too many open files: raise the limit with ulimit -n";
    case EEXIST:
        return "a segment of that name exists: remove stale segments "
               "(rm /dev/shm/mooncake_bench_*) or choose another --shm_prefix";
    case ENAMETOOLONG:
    case EINVAL:
        return "check --shm_prefix: one leading '/', no other '/', short enough";
    default:
        return "";
    }
}
