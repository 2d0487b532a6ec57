/*
 * copy: the kernels that move bytes through SHM, their verification, and a
 * crew of pinned threads that splits one transfer between them.
 *
 *   memcpy  glibc's memcpy (its own choice of vector width, rep movsb and,
 *           above glibc.cpu.x86_non_temporal_threshold, non-temporal stores)
 *   loop    a plain C loop of 8-byte words (then the last n % 8 bytes one by
 *           one), each word through a general register: the compiler can
 *           neither turn it into a memcpy call nor vectorise it (a test checks
 *           the machine code: 8-byte moves, no SSE/AVX, no call)
 *   nt      non-temporal (cache-bypassing) stores, the widest the CPU has at
 *           run time: AVX-512, AVX2 or SSE2 (x86-64 only)
 *   movsb   rep movsb (x86-64 only)
 *
 * Sizes in bytes. Functions return 0 or -errno.
 */
#ifndef SHMBENCH_COPY_H
#define SHMBENCH_COPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum shmb_copy_method {
    SHMB_COPY_MEMCPY,
    SHMB_COPY_LOOP,
    SHMB_COPY_NT,
    SHMB_COPY_MOVSB,
    SHMB_COPY_METHODS /* how many there are */
} shmb_copy_method_t;

typedef void (*shmb_copy_fn)(void *dst, const void *src, size_t n);

/* "memcpy", "loop", "nt", "movsb". */
const char *shmb_copy_method_name(shmb_copy_method_t m);

/* Name -> method. Returns 0 or -EINVAL. */
int shmb_copy_parse_method(const char *name, shmb_copy_method_t *out);

/* The kernel of a method on this CPU, or NULL where it does not exist. */
shmb_copy_fn shmb_copy_kernel(shmb_copy_method_t m);

/* What the method runs as here: "avx512", "avx2" or "sse2" for nt; "" for
 * the others. */
const char *shmb_copy_kernel_variant(shmb_copy_method_t m);

/* The loop kernel itself (exported so its machine code can be inspected). */
void shmb_copy_loop(void *dst, const void *src, size_t n);

/* Fills buf with a pattern that depends on each byte's position, so that a
 * shifted, partial or stale copy does not match it. */
void shmb_copy_fill_pattern(void *buf, size_t len);

/* Compares buf with the pattern. Returns 0 if it matches, else 1 and the
 * offset of the first differing byte in *first_bad. */
int shmb_copy_verify(const void *buf, size_t len, size_t *first_bad);

/* A crew of `threads` threads: the caller is thread 0, threads - 1 workers
 * wait (spinning briefly, then yielding) for transfers. With cpu >= 0, each
 * thread is pinned, the caller included, within the CPUs this process may use
 * (sched_getaffinity: a cpuset or taskset restricts them): thread i to the
 * i-th allowed CPU counting from the first allowed one at or after `cpu`,
 * wrapping around. */
typedef struct shmb_copy_crew shmb_copy_crew_t;

/* Starts a crew. Returns 0, -EINVAL (threads < 1), -ENOMEM, or -errno of
 * pthread_create, sched_getaffinity or sched_setaffinity, recorded with
 * shmb_error_record under that call's name (object "CPU n" for a pin). */
int shmb_copy_crew_start(shmb_copy_crew_t **crew, int threads, int cpu);

/* The CPU thread i of the crew is pinned to; -1 when not pinned. */
int shmb_copy_crew_cpu(const shmb_copy_crew_t *crew, int i);

/* One transfer: [0, n) split in 64-byte-aligned chunks, one per thread, each
 * copied with fn; returns when all are done. */
void shmb_copy_crew_run(shmb_copy_crew_t *crew, shmb_copy_fn fn, void *dst, const void *src,
                        size_t n);

/* One transfer of n bytes into pages nothing wrote before, whose first write
 * is timed and not reserved: with a crew, each thread's chunk is guarded by
 * shmb_segment_first_write_copy on that thread, else the caller's copy is;
 * dst is consumed (shmb_escape) as in shmb_copy_batch. Returns 0, or -ENOSPC
 * (recorded as "first write" on this thread) when /dev/shm ran out of space
 * inside any chunk: the copy stopped there, dst is partly written. Needs
 * shmb_segment_install_signal_cleanup(). crew may be NULL. */
int shmb_copy_first_write(shmb_copy_crew_t *crew, shmb_copy_fn fn, void *dst, const void *src, size_t n);

/* Stops and joins the workers, gives the caller back the affinity it had
 * before shmb_copy_crew_start, frees the crew. NULL is fine. */
void shmb_copy_crew_stop(shmb_copy_crew_t *crew);

/* The timed loop: `count` transfers of n bytes from src to dst with fn,
 * through the crew when there is one (else on this thread). */
void shmb_copy_batch(shmb_copy_crew_t *crew, shmb_copy_fn fn, void *dst, const void *src, size_t n,
                     uint64_t count);

#ifdef __cplusplus
}
#endif

#endif
