/* rng: splitmix64, the reproducible generator behind --seed
 * (shmbench/rng.h). */
#include "shmbench/rng.h"

void shmb_rng_seed(shmb_rng_t *rng, uint64_t seed)
{
    rng->state = seed;
}

uint64_t shmb_rng_next(shmb_rng_t *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t shmb_rng_below(shmb_rng_t *rng, uint64_t bound)
{
    if (bound == 0)
        return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do
        x = shmb_rng_next(rng);
    while (x >= limit);
    return x % bound;
}

void shmb_rng_shuffle(shmb_rng_t *rng, uint64_t *v, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)shmb_rng_below(rng, i);
        uint64_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}
