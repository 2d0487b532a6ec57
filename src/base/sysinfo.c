/* sysinfo: the machine facts a result's header reports, each read from its
 * real source (shmbench/sysinfo.h). */
#include "shmbench/sysinfo.h"

#include <errno.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sysinfo_internal.h"

#define UNKNOWN "unknown"
int shmb_sysinfo_read_line_at(const char *root, const char *path, char *out, size_t cap)
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
    if (shmb_sysinfo_read_line_at(root, path, out, cap) != 0 || out[0] == '\0')
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
    if (shmb_sysinfo_read_line_at(root, path, line, sizeof(line)) != 0)
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
        if (shmb_sysinfo_read_line_at(root, path, level, sizeof(level)) != 0)
            break;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        read_string_at(root, path, type, sizeof(type));
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (shmb_sysinfo_read_line_at(root, path, size, sizeof(size)) != 0)
            snprintf(size, sizeof(size), "-1");
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        if (shmb_sysinfo_read_line_at(root, path, shared, sizeof(shared)) != 0)
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
    if (shmb_sysinfo_read_line_at(root, "/proc/loadavg", line, sizeof(line)) == 0)
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

int shmb_sysinfo_read_count_at(const char *root, const char *path, int64_t *value)
{
    char line[64];
    if (shmb_sysinfo_read_line_at(root, path, line, sizeof(line)) != 0)
        return -ENOENT;
    char *end;
    long long n = strtoll(line, &end, 10);
    if (end == line || n < 0)
        return -EIO;
    *value = n;
    return 0;
}
