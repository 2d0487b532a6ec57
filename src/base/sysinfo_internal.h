/* sysinfo_internal: the readers of /proc and /sys files that sysinfo.c and
 * sysinfo_memory.c share. Not installed. */
#ifndef SHMB_SYSINFO_INTERNAL_H
#define SHMB_SYSINFO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* The first line of root/path into out, without its newline: 0, or -1 unreadable. */
int shmb_sysinfo_read_line_at(const char *root, const char *path, char *out, size_t cap);

/* The count a file of one number holds (a decimal >= 0): 0, -ENOENT
 * (unreadable) or -EIO (not such a number: "max", a negative). */
int shmb_sysinfo_read_count_at(const char *root, const char *path, int64_t *value);

#endif
