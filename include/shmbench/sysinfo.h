/*
 * sysinfo: the facts of the machine a result was measured on.
 *
 * Each fact is read from its real source (/proc, /sys, uname, statvfs of
 * /dev/shm, glibc's dynamic loader) and degrades to "unknown" (strings) or a
 * negative value (numbers) when the source is absent. Nothing here fails a
 * run. Sizes are in bytes.
 */
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

/* Reads the /proc, /sys and /dev/shm facts below `root` instead of "/" (a test
 * points it at a fake tree); host, kernel, glibc and the non-temporal
 * threshold still come from this process. */
void shmb_sysinfo_read_at(const char *root, shmb_sysinfo_t *out);

/* Space of the file system holding `path`: total and available bytes.
 * Returns 0 or -errno (statvfs). */
int shmb_sysinfo_fs_space(const char *path, int64_t *total, int64_t *avail);

/* Parses the value of tunable `name` (e.g. "glibc.cpu.x86_non_temporal_threshold")
 * from the text `ld.so --list-tunables` prints. Returns it, or -1 if absent. */
int64_t shmb_sysinfo_parse_tunable(const char *tunables_text, const char *name);

/* Extracts the selected mode from a sysfs mode line such as
 * "always [madvise] never" into out ("madvise"); "unknown" if none. */
void shmb_sysinfo_parse_mode(const char *line, char *out, size_t cap);

/* 1 when the 1-minute load average exceeds the online CPU count (other work
 * competes for the CPUs, so figures are noisier); 0 otherwise, or when either
 * is unknown. */
int shmb_sysinfo_overloaded(const shmb_sysinfo_t *s);

/* Pins the calling thread to one CPU. Returns 0, -EINVAL for a CPU that does
 * not exist, or -errno (sched_setaffinity). */
int shmb_sysinfo_pin_cpu(int cpu);

/* The CPUs this process may run on (sched_getaffinity: cpuset, taskset), in
 * increasing order, into cpus (at most cap): the calling thread's mask, or,
 * while that mask is the one CPU shmb_sysinfo_pin_cpu() pinned this thread
 * to, the mask the first pinned thread had before (so threads planned after
 * --cpu pinned the main thread still see every allowed CPU). Returns how
 * many, or -errno. */
int shmb_sysinfo_allowed_cpus(int *cpus, int cap);

/* Where `threads` threads run, one CPU each, over the CPUs this process may use
 * (shmb_sysinfo_allowed_cpus): from the first allowed CPU at or after `cpu` (-1: the first
 * allowed), wrapping around, into cpus[0..threads). Returns 1 when every thread has a CPU of
 * its own, 0 when there are fewer allowed CPUs than threads (cpus still filled, wrapping, so
 * every allowed CPU appears), or -EINVAL (threads < 1, recorded nothing) or -errno
 * (sched_getaffinity, recorded). */
int shmb_sysinfo_plan_cpus(int cpu, int threads, int *cpus);

/* Formats a sorted CPU list as ranges, "0-3,6", into out. */
void shmb_sysinfo_format_cpu_list(const int *cpus, int n, char *out, size_t cap);

/* How many more bytes the memory cgroup of this process may charge, SHM
 * pages included: the least limit - usage over its cgroup and the cgroups
 * above it, found through /proc/self/cgroup: v2's memory.max -
 * memory.current, v1's memory.limit_in_bytes - memory.usage_in_bytes (under
 * /sys/fs/cgroup/memory), the lesser of both on a hybrid system. Returns it
 * (0 when a limit is reached), or -1 when no limit applies or none can be
 * read (no memory controller). */
int64_t shmb_sysinfo_cgroup_memory_free(void);

/* The same below `root` (a test points it at a fake tree). */
int64_t shmb_sysinfo_cgroup_memory_free_at(const char *root);

/* The pool of huge pages of page_size bytes (hugetlb):
 * /sys/kernel/mm/hugepages/hugepages-<kB>kB/nr_hugepages and
 * free_hugepages less resv_hugepages (pages other mappings reserved are not
 * free) into *total and *free_pages (pages, not bytes). Returns 0,
 * -ENOENT (no pool of that size on this machine or kernel) or -EIO (a file
 * that does not hold a number). */
int shmb_sysinfo_hugepages(uint64_t page_size, int64_t *total, int64_t *free_pages);

/* The same below `root` (a test points it at a fake tree). */
int shmb_sysinfo_hugepages_at(const char *root, uint64_t page_size, int64_t *total, int64_t *free_pages);

/* MemAvailable of /proc/meminfo in bytes: what the kernel reckons can
 * still be allocated without swapping; -1 unknown. */
int64_t shmb_sysinfo_mem_available(void);

/* vm.max_map_count (/proc/sys/vm/max_map_count): how many mappings a
 * process may have; -1 unknown. */
int64_t shmb_sysinfo_max_map_count(void);

/* The mappings this process has now (the lines of /proc/self/maps); -1
 * unknown. */
int64_t shmb_sysinfo_map_count(void);

/* Formats bytes as "24.0 GiB", "768 KiB", "12 B" into out. */
void shmb_sysinfo_format_bytes(int64_t bytes, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
