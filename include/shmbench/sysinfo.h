/* sysinfo: the facts of the machine a result was measured on, each from its
 * real source (/proc, /sys, uname, statvfs, glibc's loader): "unknown" or a
 * negative number when absent, never a failure. Sizes in bytes. */
#ifndef SHMBENCH_SYSINFO_H
#define SHMBENCH_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_SYSINFO_STR 128
#define SHMB_SYSINFO_MAX_CACHES 8

typedef struct shmb_cache_info {
    int level;                   /* 1, 2, 3 */
    char type[16];               /* "Data", "Instruction", "Unified" */
    int64_t size;                /* bytes */
    int num_sharing;             /* CPUs sharing one instance */
} shmb_cache_info_t;

typedef struct shmb_sysinfo {
    char host[SHMB_SYSINFO_STR];
    char cpu_model[SHMB_SYSINFO_STR];
    int num_cpus;                /* online CPUs; -1 unknown */
    double mhz;                  /* of CPU 0 per /proc/cpuinfo; -1 unknown */
    char kernel[SHMB_SYSINFO_STR];   /* "release version" from uname */
    char clocksource[SHMB_SYSINFO_STR];
    char governor[SHMB_SYSINFO_STR]; /* of cpu0; "unknown" without cpufreq */
    int scaling_enabled;         /* 1 if a governor other than performance; 0; -1 unknown */
    char thp_enabled[SHMB_SYSINFO_STR];  /* the bracketed mode, e.g. "madvise" */
    char thp_shmem[SHMB_SYSINFO_STR];    /* shmem_enabled mode, e.g. "never" */
    int64_t shm_total;           /* /dev/shm size; -1 unknown */
    int64_t shm_free;            /* /dev/shm space available; -1 unknown */
    int64_t nt_threshold;        /* glibc.cpu.x86_non_temporal_threshold; -1 unknown */
    int64_t rep_movsb_threshold; /* glibc.cpu.x86_rep_movsb_threshold; -1 unknown */
    char glibc_version[32];
    double load_avg[3];          /* -1 unknown */
    int num_caches;
    shmb_cache_info_t caches[SHMB_SYSINFO_MAX_CACHES];
} shmb_sysinfo_t;

/* Reads every fact of this machine. Always succeeds. */
void shmb_sysinfo_read(shmb_sysinfo_t *out);

/* The /proc, /sys and /dev/shm facts below `root` (a test's fake tree); host,
 * kernel, glibc and its tunables from this process. */
void shmb_sysinfo_read_at(const char *root, shmb_sysinfo_t *out);

/* Total and available bytes of path's file system. 0 or -errno (statvfs). */
int shmb_sysinfo_fs_space(const char *path, int64_t *total, int64_t *avail);

/* Tunable `name`'s value in `ld.so --list-tunables` text, or -1. */
int64_t shmb_sysinfo_parse_tunable(const char *tunables_text, const char *name);

/* The bracketed mode of "always [madvise] never" into out; "unknown" if none. */
void shmb_sysinfo_parse_mode(const char *line, char *out, size_t cap);

/* 1 when the 1-minute load exceeds the online CPUs (noisier figures); else 0. */
int shmb_sysinfo_overloaded(const shmb_sysinfo_t *s);

/* Pins the calling thread to cpu. 0, -EINVAL (no such CPU) or -errno. */
int shmb_sysinfo_pin_cpu(int cpu);

/* The CPUs this process may run on, ascending, at most cap: the thread's mask,
 * or while pin_cpu narrowed it, the mask from before. How many, or -errno. */
int shmb_sysinfo_allowed_cpus(int *cpus, int cap);

/* A CPU per thread into cpus[0..threads): the allowed CPUs from the first at or
 * after cpu (-1: the first), wrapping. 1 if each has its own, 0 if they share,
 * -EINVAL (threads < 1) or -errno (recorded). */
int shmb_sysinfo_plan_cpus(int cpu, int threads, int *cpus);

/* A sorted CPU list as ranges, "0-3,6". */
void shmb_sysinfo_format_cpu_list(const int *cpus, int n, char *out, size_t cap);

/* The bytes this process's memory cgroups (v2, v1, both) may still charge,
 * SHM included: the least limit - usage up the tree; -1 when no limit applies. */
int64_t shmb_sysinfo_cgroup_memory_free(void);

/* The same below `root` (a test points it at a fake tree). */
int64_t shmb_sysinfo_cgroup_memory_free_at(const char *root);

/* The hugetlb pool of page_size: nr_hugepages, and free_hugepages less
 * resv_hugepages, in pages. 0, -ENOENT (no such pool) or -EIO (not a number). */
int shmb_sysinfo_hugepages(uint64_t page_size, int64_t *total, int64_t *free_pages);

/* The same below `root` (a test points it at a fake tree). */
int shmb_sysinfo_hugepages_at(const char *root, uint64_t page_size, int64_t *total, int64_t *free_pages);

/* MemAvailable of /proc/meminfo in bytes; -1 unknown. */
int64_t shmb_sysinfo_mem_available(void);

/* vm.max_map_count; -1 unknown. */
int64_t shmb_sysinfo_max_map_count(void);

/* The mappings this process has now (/proc/self/maps); -1 unknown. */
int64_t shmb_sysinfo_map_count(void);

/* bytes as "24.0 GiB", "768 KiB", "12 B". */
void shmb_sysinfo_format_bytes(int64_t bytes, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
