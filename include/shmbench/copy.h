/* copy: the kernels that move bytes through SHM (memcpy: glibc's; loop: 8-byte
 * words through a register, never vectorised nor a memcpy call; nt: the
 * widest non-temporal stores; movsb: rep movsb), their verification, and a
 * crew of pinned threads that splits one transfer. Sizes in bytes. */
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

/* What it runs as here: "avx512", "avx2" or "sse2" for nt; "" for the others. */
const char *shmb_copy_kernel_variant(shmb_copy_method_t m);

/* The loop kernel itself (exported so its machine code can be inspected). */
void shmb_copy_loop(void *dst, const void *src, size_t n);

/* A pattern of each byte's position: a shifted, partial or stale copy does not match. */
void shmb_copy_fill_pattern(void *buf, size_t len);

/* 0 if buf holds the pattern, else 1 and the first differing offset in *first_bad. */
int shmb_copy_verify(const void *buf, size_t len, size_t *first_bad);

/* The same for bytes copied from offset `from` of a filled buffer. */
int shmb_copy_verify_from(const void *buf, size_t len, size_t from, size_t *first_bad);

/* The caller (thread 0) and threads - 1 waiting workers; with cpu >= 0 each is
 * pinned as shmb_sysinfo_plan_cpus plans. */
typedef struct shmb_copy_crew shmb_copy_crew_t;

/* 0, -EINVAL (threads < 1), -ENOMEM, or -errno recorded (a pin's object "CPU n"). */
int shmb_copy_crew_start(shmb_copy_crew_t **crew, int threads, int cpu);

/* The CPU thread i of the crew is pinned to; -1 when not pinned. */
int shmb_copy_crew_cpu(const shmb_copy_crew_t *crew, int i);

/* One transfer: [0, n) in 64-byte-aligned chunks, one per thread, copied with fn. */
void shmb_copy_crew_run(shmb_copy_crew_t *crew, shmb_copy_fn fn, void *dst, const void *src,
                        size_t n);

/* One transfer into unreserved pages, each chunk guarded by
 * shmb_segment_first_write_copy on its thread (crew may be NULL); dst consumed.
 * 0, or -ENOSPC (recorded "first write") with dst partly written. */
int shmb_copy_first_write(shmb_copy_crew_t *crew, shmb_copy_fn fn, void *dst, const void *src, size_t n);

/* Joins the workers, restores the caller's affinity, frees; NULL is fine. */
void shmb_copy_crew_stop(shmb_copy_crew_t *crew);

/* The timed loop: `count` transfers with fn, through the crew if any. */
void shmb_copy_batch(shmb_copy_crew_t *crew, shmb_copy_fn fn, void *dst, const void *src, size_t n,
                     uint64_t count);

#ifdef __cplusplus
}
#endif

#endif
