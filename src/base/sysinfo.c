/* sysinfo: the machine facts a result's header reports, each read from its
 * real source (shmbench/sysinfo.h). */
#include "shmbench/sysinfo.h"

#include <errno.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "shmbench/error.h"

#define UNKNOWN "unknown"

/* Reads the first line of root/path into out, without its newline. Returns 0
 * or -1 when the file cannot be read. */
static int read_line_at(const char *root, const char *path, char *out, size_t cap)
{
    char full[2048];
    snprintf(full, sizeof(full), "%s%s", root, path);
    FILE *f = fopen(full, "r");
    if (!f)
        return -1;
    char *line = fgets(out, (int)cap, f);
    fclose(f);
    if (!line)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

static void read_string_at(const char *root, const char *path, char *out, size_t cap)
{
    if (read_line_at(root, path, out, cap) != 0 || out[0] == '\0')
        snprintf(out, cap, "%s", UNKNOWN);
}

void shmb_sysinfo_parse_mode(const char *line, char *out, size_t cap)
{
    const char *open = line ? strchr(line, '[') : NULL;
    const char *close = open ? strchr(open, ']') : NULL;
    if (!close) {
        snprintf(out, cap, "%s", UNKNOWN);
        return;
    }
    snprintf(out, cap, "%.*s", (int)(close - open - 1), open + 1);
}

static void read_mode_at(const char *root, const char *path, char *out, size_t cap)
{
    char line[256];
    if (read_line_at(root, path, line, sizeof(line)) != 0)
        line[0] = '\0';
    shmb_sysinfo_parse_mode(line, out, cap);
}

/* CPU model and MHz of the first processor in /proc/cpuinfo. */
static void read_cpuinfo_at(const char *root, shmb_sysinfo_t *out)
{
    char path[512], line[512];
    snprintf(path, sizeof(path), "%s/proc/cpuinfo", root);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        const char *value = colon + 1 + strspn(colon + 1, " \t");
        if (strncmp(line, "model name", 10) == 0 && strcmp(out->cpu_model, UNKNOWN) == 0)
            snprintf(out->cpu_model, sizeof(out->cpu_model), "%.*s", (int)strcspn(value, "\n"), value);
        else if (strncmp(line, "cpu MHz", 7) == 0 && out->mhz < 0)
            out->mhz = strtod(value, NULL);
    }
    fclose(f);
}

/* Counts the CPUs in a list such as "0-3,8,10-11". */
static int count_cpu_list(const char *list)
{
    int n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10);
        if (end == p)
            break;
        long hi = lo;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        n += (int)(hi - lo + 1);
        p = *end == ',' ? end + 1 : end;
        if (*end != ',')
            break;
    }
    return n;
}

static int64_t parse_cache_size(const char *text)
{
    char *end;
    int64_t v = strtoll(text, &end, 10);
    if (end == text)
        return -1;
    if (*end == 'K')
        v *= 1024;
    else if (*end == 'M')
        v *= 1024 * 1024;
    return v;
}

static void read_caches_at(const char *root, shmb_sysinfo_t *out)
{
    for (int i = 0; i < SHMB_SYSINFO_MAX_CACHES; i++) {
        char path[128], level[32], type[32], size[32], shared[256];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (read_line_at(root, path, level, sizeof(level)) != 0)
            break;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        read_string_at(root, path, type, sizeof(type));
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (read_line_at(root, path, size, sizeof(size)) != 0)
            snprintf(size, sizeof(size), "-1");
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        if (read_line_at(root, path, shared, sizeof(shared)) != 0)
            shared[0] = '\0';
        shmb_cache_info_t *c = &out->caches[out->num_caches++];
        c->level = atoi(level);
        snprintf(c->type, sizeof(c->type), "%.15s", type);
        c->size = parse_cache_size(size);
        c->num_sharing = shared[0] ? count_cpu_list(shared) : -1;
    }
}

int shmb_sysinfo_fs_space(const char *path, int64_t *total, int64_t *avail)
{
    struct statvfs vfs;
    if (statvfs(path, &vfs) != 0)
        return -errno;
    *total = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize;
    *avail = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
    return 0;
}

int64_t shmb_sysinfo_parse_tunable(const char *text, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, len) == 0 && p[len] == ':') {
            char *end;
            unsigned long long v = strtoull(p + len + 1, &end, 0);
            return end == p + len + 1 || v > INT64_MAX ? -1 : (int64_t)v;
        }
    }
    return -1;
}

/* The dynamic loader this process runs under, as mapped in /proc/self/maps. */
static int find_loader(char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[1024];
    int ret = -1;
    while (ret != 0 && fgets(line, sizeof(line), f)) {
        char *path = strchr(line, '/');
        if (path && strstr(path, "/ld-linux")) {
            path[strcspn(path, "\n")] = '\0';
            snprintf(out, cap, "%s", path);
            ret = 0;
        }
    }
    fclose(f);
    return ret;
}

/* Asks glibc's loader for its tunables (glibc >= 2.33), as this process
 * would see them, GLIBC_TUNABLES included. */
static void read_tunables(shmb_sysinfo_t *out)
{
    char loader[512], cmd[600];
    if (find_loader(loader, sizeof(loader)) != 0 || strchr(loader, '\''))
        return;
    snprintf(cmd, sizeof(cmd), "'%s' --list-tunables 2>/dev/null", loader);
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    char text[16384];
    size_t n = fread(text, 1, sizeof(text) - 1, p);
    text[n] = '\0';
    pclose(p);
    out->nt_threshold = shmb_sysinfo_parse_tunable(text, "glibc.cpu.x86_non_temporal_threshold");
    out->rep_movsb_threshold = shmb_sysinfo_parse_tunable(text, "glibc.cpu.x86_rep_movsb_threshold");
}

static void read_process_facts(shmb_sysinfo_t *out)
{
    if (gethostname(out->host, sizeof(out->host)) != 0)
        snprintf(out->host, sizeof(out->host), "%s", UNKNOWN);
    out->host[sizeof(out->host) - 1] = '\0';
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(out->kernel, sizeof(out->kernel), "%.40s %.80s", u.release, u.version);
    else
        snprintf(out->kernel, sizeof(out->kernel), "%s", UNKNOWN);
    snprintf(out->glibc_version, sizeof(out->glibc_version), "%s", gnu_get_libc_version());
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    out->num_cpus = n > 0 ? (int)n : -1;
    read_tunables(out);
}

static void read_file_facts(const char *root, shmb_sysinfo_t *out)
{
    read_cpuinfo_at(root, out);
    read_caches_at(root, out);
    read_string_at(root, "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                   out->clocksource, sizeof(out->clocksource));
    read_string_at(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", out->governor,
                   sizeof(out->governor));
    if (strcmp(out->governor, UNKNOWN) != 0)
        out->scaling_enabled = strcmp(out->governor, "performance") != 0;
    read_mode_at(root, "/sys/kernel/mm/transparent_hugepage/enabled", out->thp_enabled,
                 sizeof(out->thp_enabled));
    read_mode_at(root, "/sys/kernel/mm/transparent_hugepage/shmem_enabled", out->thp_shmem,
                 sizeof(out->thp_shmem));

    char path[512], line[128];
    snprintf(path, sizeof(path), "%s/dev/shm", root);
    if (shmb_sysinfo_fs_space(path, &out->shm_total, &out->shm_free) != 0)
        out->shm_total = out->shm_free = -1;
    if (read_line_at(root, "/proc/loadavg", line, sizeof(line)) == 0)
        sscanf(line, "%lf %lf %lf", &out->load_avg[0], &out->load_avg[1], &out->load_avg[2]);
}

static void set_unknown(shmb_sysinfo_t *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->cpu_model, sizeof(out->cpu_model), "%s", UNKNOWN);
    out->num_cpus = -1;
    out->mhz = -1;
    out->scaling_enabled = -1;
    out->shm_total = out->shm_free = -1;
    out->nt_threshold = out->rep_movsb_threshold = -1;
    for (int i = 0; i < 3; i++)
        out->load_avg[i] = -1;
}

void shmb_sysinfo_read_at(const char *root, shmb_sysinfo_t *out)
{
    set_unknown(out);
    read_process_facts(out);
    read_file_facts(root, out);
}

void shmb_sysinfo_read(shmb_sysinfo_t *out)
{
    shmb_sysinfo_read_at("", out);
}

int shmb_sysinfo_overloaded(const shmb_sysinfo_t *s)
{
    return s->num_cpus > 0 && s->load_avg[0] > (double)s->num_cpus;
}

/* The affinity of the first thread shmb_sysinfo_pin_cpu() narrowed to one
 * CPU, from before: the CPUs the process may use (taskset, cpuset), which a
 * thread pinned by --cpu can no longer read from its own mask. It stands in
 * for a thread's mask only while that mask is still the one CPU this thread
 * was pinned to here (t_pinned_cpu; threads inherit it across fork); any
 * other mask, set by someone else since, is taken as it is. */
static pthread_mutex_t g_allowed_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_set_t g_allowed;
static int g_allowed_saved;
static _Thread_local int t_pinned_cpu = -1;

int shmb_sysinfo_pin_cpu(int cpu)
{
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return -EINVAL;
    cpu_set_t set;
    pthread_mutex_lock(&g_allowed_lock);
    if (!g_allowed_saved && sched_getaffinity(0, sizeof(set), &set) == 0) {
        g_allowed = set;
        g_allowed_saved = 1;
    }
    pthread_mutex_unlock(&g_allowed_lock);
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        return -errno;
    t_pinned_cpu = cpu;
    return 0;
}

int shmb_sysinfo_allowed_cpus(int *cpus, int cap)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return -errno;
    if (t_pinned_cpu >= 0 && CPU_COUNT(&set) == 1 && CPU_ISSET(t_pinned_cpu, &set)) {
        pthread_mutex_lock(&g_allowed_lock);
        if (g_allowed_saved)
            set = g_allowed;
        pthread_mutex_unlock(&g_allowed_lock);
    }
    int n = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && n < cap; cpu++)
        if (CPU_ISSET(cpu, &set))
            cpus[n++] = cpu;
    return n;
}

int shmb_sysinfo_plan_cpus(int cpu, int threads, int *cpus)
{
    if (threads < 1)
        return -EINVAL;
    int allowed[CPU_SETSIZE];
    int n = shmb_sysinfo_allowed_cpus(allowed, CPU_SETSIZE);
    if (n <= 0)
        return shmb_error_record("sched_getaffinity", n < 0 ? -n : ESRCH, NULL);
    int first = 0;
    while (cpu >= 0 && first < n && allowed[first] < cpu)
        first++;
    for (int i = 0; i < threads; i++)
        cpus[i] = allowed[(first + i) % n];
    return threads <= n;
}

void shmb_sysinfo_format_cpu_list(const int *cpus, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n && len < cap; i++) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        int w = j > i ? snprintf(out + len, cap - len, "%s%d-%d", len ? "," : "", cpus[i], cpus[j])
                      : snprintf(out + len, cap - len, "%s%d", len ? "," : "", cpus[i]);
        len += w > 0 ? (size_t)w : 0;
        i = j;
    }
}

/* One number from a cgroup file: its value, or -1 for "max", absent or
 * unreadable. */
static int64_t read_cgroup_number(const char *root, const char *dir, const char *file)
{
    char path[1200], line[64];
    snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", dir, file);
    if (read_line_at(root, path, line, sizeof(line)) != 0)
        return -1;
    char *end;
    long long v = strtoll(line, &end, 10);
    return end == line || v < 0 ? -1 : (int64_t)v;
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
    char path[128], line[64];
    int64_t v[3] = {0, 0, 0};
    static const char *const files[3] = {"nr_hugepages", "free_hugepages", "resv_hugepages"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/%s", page_size / 1024,
                 files[i]);
        if (read_line_at(root, path, line, sizeof(line)) != 0) {
            if (i == 2)
                break;
            return -ENOENT;
        }
        char *end;
        long long n = strtoll(line, &end, 10);
        if (end == line || n < 0)
            return -EIO;
        v[i] = n;
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
    char line[64];
    if (read_line_at("", "/proc/sys/vm/max_map_count", line, sizeof(line)) != 0)
        return -1;
    char *end;
    long long n = strtoll(line, &end, 10);
    return end == line || n < 0 ? -1 : (int64_t)n;
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

void shmb_sysinfo_format_bytes(int64_t bytes, char *out, size_t cap)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0 || v == (double)(int64_t)v)
        snprintf(out, cap, "%.0f %s", v, units[u]);
    else
        snprintf(out, cap, "%.1f %s", v, units[u]);
}
