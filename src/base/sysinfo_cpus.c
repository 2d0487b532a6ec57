/* sysinfo_cpus: the CPUs this process may use, pinning a thread, and where
 * a crew's threads run. */
#include "shmbench/sysinfo.h"

#include "shmbench/error.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

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
