/* rng: splitmix64, so that --seed makes a run's random inputs the same
 * again. Not for anything secret. */
#ifndef SHMBENCH_RNG_H
#define SHMBENCH_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shmb_rng {
    uint64_t state;
} shmb_rng_t;

/* Starts a sequence; equal seeds give equal sequences. */
void shmb_rng_seed(shmb_rng_t *rng, uint64_t seed);

/* The next 64 random bits. */
uint64_t shmb_rng_next(shmb_rng_t *rng);

/* A number in [0, bound), without modulo bias; 0 when bound is 0. */
uint64_t shmb_rng_below(shmb_rng_t *rng, uint64_t bound);

/* Puts v[0..n) in a uniformly random order (Fisher-Yates). */
void shmb_rng_shuffle(shmb_rng_t *rng, uint64_t *v, size_t n);

#ifdef __cplusplus
}
#endif

#endif
