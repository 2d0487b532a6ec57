/* sysinfo_memory: the memory a run may still take (cgroup limits, huge
 * page pools, MemAvailable) and the mappings it may still make. */
#include "shmbench/sysinfo.h"

#include "sysinfo_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* One number from a cgroup file: its value, or -1 for "max", absent or
 * unreadable. */
static int64_t read_cgroup_number(const char *root, const char *dir, const char *file)
{
    char path[1200];
    int64_t v;
    snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", dir, file);
    return shmb_sysinfo_read_count_at(root, path, &v) == 0 ? v : -1;
}

/* v1 writes "no limit" as a page counter's maximum, about 2^63: any figure
 * from 2^62 on is no limit. */
#define CGROUP_V1_NO_LIMIT (INT64_C(1) << 62)

/* The least limit - usage over the cgroup `dir` of the hierarchy mounted at
 * /sys/fs/cgroup<mount> and its parents, or -1 if none has a limit. */
static int64_t least_left(const char *root, const char *mount, char *dir, const char *max_file,
                          const char *cur_file)
{
    int64_t least = -1;
    for (;;) { /* this cgroup, then each parent up to the root of the tree */
        char d[1100];
        snprintf(d, sizeof(d), "%s%s", mount, strcmp(dir, "/") == 0 ? "" : dir);
        int64_t max = read_cgroup_number(root, d, max_file);
        int64_t cur = read_cgroup_number(root, d, cur_file);
        if (max >= 0 && max < CGROUP_V1_NO_LIMIT && cur >= 0) {
            int64_t left = max > cur ? max - cur : 0;
            if (least < 0 || left < least)
                least = left;
        }
        char *slash = strrchr(dir, '/');
        if (strcmp(dir, "/") == 0 || !slash)
            break;
        slash[slash == dir] = '\0'; /* "/a/b" -> "/a", "/a" -> "/" */
    }
    return least;
}

/* The controllers field of a v1 line "N:ctl,ctl:/path" names memory. */
static int names_memory(const char *controllers, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = strcspn(controllers + i, ",:");
        if (n == 6 && strncmp(controllers + i, "memory", 6) == 0)
            return 1;
        i += n + 1;
    }
    return 0;
}

int64_t shmb_sysinfo_cgroup_memory_free_at(const char *root)
{
    char line[1024], v2[1024] = "", v1[1024] = "";
    char path[512];
    snprintf(path, sizeof(path), "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *ctl = strchr(line, ':');
        char *dir = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!dir)
            continue;
        if (strncmp(line, "0::", 3) == 0) /* the v2 hierarchy */
            snprintf(v2, sizeof(v2), "%s", dir + 1);
        else if (names_memory(ctl + 1, (size_t)(dir - ctl - 1)))
            snprintf(v1, sizeof(v1), "%s", dir + 1);
    }
    fclose(f);
    int64_t a = v2[0] == '/' ? least_left(root, "", v2, "memory.max", "memory.current") : -1;
    int64_t b = v1[0] == '/' ? least_left(root, "/memory", v1, "memory.limit_in_bytes", "memory.usage_in_bytes") : -1;
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

int64_t shmb_sysinfo_cgroup_memory_free(void)
{
    return shmb_sysinfo_cgroup_memory_free_at("");
}

/* free_hugepages counts the pages other mappings have reserved (a
 * MAP_SHARED hugetlb mapping reserves at mmap, allocates at first touch):
 * they are not free to us, so resv_hugepages is taken off (0 when absent). */
int shmb_sysinfo_hugepages_at(const char *root, uint64_t page_size, int64_t *total, int64_t *free_pages)
{
    char path[128];
    int64_t v[3] = {0, 0, 0};
    static const char *const files[3] = {"nr_hugepages", "free_hugepages", "resv_hugepages"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/%s", page_size / 1024,
                 files[i]);
        int ret = shmb_sysinfo_read_count_at(root, path, &v[i]);
        if (ret == -ENOENT && i == 2)
            break;
        if (ret < 0)
            return ret;
    }
    *total = v[0];
    *free_pages = v[1] > v[2] ? v[1] - v[2] : 0;
    return 0;
}

int shmb_sysinfo_hugepages(uint64_t page_size, int64_t *total, int64_t *free_pages)
{
    return shmb_sysinfo_hugepages_at("", page_size, total, free_pages);
}

int64_t shmb_sysinfo_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return -1;
    char line[256];
    long long kb = -1;
    while (kb < 0 && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) != 1)
            kb = -1;
    fclose(f);
    return kb < 0 ? -1 : (int64_t)kb * 1024;
}

int64_t shmb_sysinfo_max_map_count(void)
{
    int64_t n;
    return shmb_sysinfo_read_count_at("", "/proc/sys/vm/max_map_count", &n) == 0 ? n : -1;
}

int64_t shmb_sysinfo_map_count(void)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -1;
    int64_t n = 0;
    int c, last = '\n';
    while ((c = getc(f)) != EOF) {
        n += c == '\n';
        last = c;
    }
    fclose(f);
    return n + (last != '\n');
}
