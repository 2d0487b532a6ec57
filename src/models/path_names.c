/* path_names: each translation path's name (as in flags and rows) and kind,
 * by its index in the paths table (paths.c), which the names need not. */
#include "paths_internal.h"

#include <errno.h>
#include <string.h>

static const struct {
    const char *name;
    shmb_path_kind_t kind;
} rows[SHMB_PATHS] = {
    [SHMB_SYSTEM_MOONCAKE] = {"mooncake", SHMB_PATH_SYSTEM},
    [SHMB_SYSTEM_FLOWIPC_CLASSIC] = {"flowipc_classic", SHMB_PATH_SYSTEM},
    [SHMB_SYSTEM_FLOWIPC_JEMALLOC] = {"flowipc_jemalloc", SHMB_PATH_SYSTEM},
    [SHMB_SYSTEMS + SHMB_LOOKUP_LINEAR] = {"linear", SHMB_PATH_KERNEL},
    [SHMB_SYSTEMS + SHMB_LOOKUP_LOWER_BOUND] = {"lower_bound", SHMB_PATH_KERNEL},
    [SHMB_SYSTEMS + SHMB_LOOKUP_TREE] = {"tree", SHMB_PATH_KERNEL},
    [SHMB_SYSTEMS + SHMB_LOOKUP_ARITHMETIC] = {"arithmetic", SHMB_PATH_KERNEL},
};

const char *shmb_path_name(int path)
{
    return rows[path].name;
}

shmb_path_kind_t shmb_path_kind(int path)
{
    return rows[path].kind;
}

int shmb_path_names(unsigned kinds, char *buf, size_t cap)
{
    if (!buf || (kinds & (SHMB_PATH_SYSTEM | SHMB_PATH_KERNEL)) == 0)
        return -EINVAL;
    size_t len = 0;
    for (int i = 0; i < SHMB_PATHS; i++)
        if (kinds & rows[i].kind)
            len += (len ? 1 : 0) + strlen(rows[i].name);
    if (len >= cap)
        return -ENOSPC;
    buf[0] = '\0';
    for (int i = 0; i < SHMB_PATHS; i++) {
        if (!(kinds & rows[i].kind))
            continue;
        if (buf[0])
            strcat(buf, ",");
        strcat(buf, rows[i].name);
    }
    return (int)len;
}

/* The index of the path called name, or -EINVAL. */
static int path_index(const char *name)
{
    for (int i = 0; name && i < SHMB_PATHS; i++)
        if (strcmp(name, rows[i].name) == 0)
            return i;
    return -EINVAL;
}

int shmb_path_kind_of(const char *name)
{
    const int i = path_index(name);
    return i < 0 ? i : (int)rows[i].kind;
}

int shmb_path_system(const char *name)
{
    const int i = path_index(name);
    return i >= 0 && i < SHMB_SYSTEMS ? i : -EINVAL;
}

/* The systems' names are the table's. */
const char *shmb_system_name(shmb_system_t system)
{
    return (unsigned)system < SHMB_SYSTEMS ? rows[system].name : "unknown";
}
