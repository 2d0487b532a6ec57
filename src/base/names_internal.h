/*
 * names (library-internal): a module's names are a table indexed by its
 * enum (copy methods, lookup strategies, placements, allocators, output
 * formats); these two look a value's name and a name's value up, so that
 * each module's name and parse functions only say which table.
 */
#ifndef SHMBENCH_NAMES_INTERNAL_H
#define SHMBENCH_NAMES_INTERNAL_H

#include <errno.h>
#include <string.h>

/* names[value], or "unknown" for a value outside 0 .. count - 1. */
static inline const char *shmb_names_get(const char *const *names, int count, int value)
{
    return value >= 0 && value < count ? names[value] : "unknown";
}

/* The index of `name` in names[0 .. count - 1], or -EINVAL (no such name,
 * or name NULL). */
static inline int shmb_names_find(const char *const *names, int count, const char *name)
{
    for (int i = 0; name && i < count; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -EINVAL;
}

#endif
