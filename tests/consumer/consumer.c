/* Uses the installed library as a user would: the umbrella header, a stats
 * summary and an arena over plain memory. Prints "ok" and exits 0 on success. */
#include <shmbench/shmbench.h>

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    double v[] = {3, 1, 2};
    shmb_stats_t s;
    if (shmb_stats_compute(v, 3, &s) != 0 || s.p50 != 2.0)
        return 1;
    void *region = aligned_alloc(SHMB_ARENA_GRANULE, 1 << 20);
    shmb_arena_t arena;
    shmb_handle_t h;
    if (!region || shmb_arena_init(&arena, region, 1 << 20) != 0 ||
        shmb_arena_alloc(&arena, 5000, &h) != 0 || shmb_arena_free(&arena, h) != 0)
        return 1;
    shmb_arena_fini(&arena);
    free(region);
    printf("ok %s\n", SHMB_VERSION);
    return 0;
}
