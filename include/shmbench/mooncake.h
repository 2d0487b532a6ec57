/* mooncake: Mooncake's SHM path per request (docs/models.md): TENT's
 * ShmTransport relocate and its submitTransfer path, C++17 behind this
 * header. Functions return 0 or -errno; no exception crosses it. */
#ifndef SHMBENCH_MOONCAKE_H
#define SHMBENCH_MOONCAKE_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/error.h"

#include "shmbench/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One buffer the peer registered. */
typedef struct shmb_mooncake_buffer {
    uint64_t addr;        /* base in the peer's address space */
    uint64_t length;      /* bytes, > 0 */
    const char *shm_path; /* SHM name to open on first use; "" = not SHM (skipped) */
} shmb_mooncake_buffer_t;

/* How a buffer is mapped on first use: attach maps `length` bytes of
 * shm_path (index: its registration index) into *local; detach (may be
 * NULL) undoes one. */
typedef struct shmb_mooncake_ops {
    int (*attach)(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local);
    void (*detach)(void *ctx, void *local, uint64_t length);
    void *ctx;
} shmb_mooncake_ops_t;

typedef struct shmb_mooncake shmb_mooncake_t; /* opaque */

/* A peer's metadata: segment target_id holding buffers[0..n) (copied) beside
 * other_segments segments of one non-SHM buffer each; nothing attached.
 * -EINVAL: n = 0, a zero length, a NULL shm_path, or no ops->attach. */
int shmb_mooncake_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id, size_t other_segments,
                         const shmb_mooncake_ops_t *ops, shmb_mooncake_t **out) SHMB_NOEXCEPT;

/* Detaches every attached buffer and frees everything. NULL: a no-op. */
void shmb_mooncake_destroy(shmb_mooncake_t *m) SHMB_NOEXCEPT;

/* relocateSharedMemoryAddress: [addr, addr + len) of segment target_id into
 * our address, attaching the buffer on first use. -ENOENT: unknown segment;
 * -EINVAL: no SHM buffer holds it all; or attach's error. */
int shmb_mooncake_relocate(shmb_mooncake_t *m, uint64_t target_id, uint64_t addr, uint64_t len,
                           void **out) SHMB_NOEXCEPT;

/* The timed loop: the sum of the relocations of requests[0..n) (a failure
 * counts 0). */
uint64_t shmb_mooncake_relocate_batch(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests, size_t n) SHMB_NOEXCEPT;

/* The latency loop: the same as a dependent chain (shmb_lookup_chain). */
uint64_t shmb_mooncake_relocate_chain(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests,
                                      const uint64_t *expected, size_t n) SHMB_NOEXCEPT;

/* How many buffers have been attached so far. */
size_t shmb_mooncake_attached(const shmb_mooncake_t *m) SHMB_NOEXCEPT;

/* ---- the request path: TENT's submitTransfer of one descriptor ---- */

/* The steps the path leaves to the system measured, each skipped when NULL:
 * translate (without it the task carries the peer's address and nothing is
 * copied) and copy. */
typedef struct shmb_mooncake_hooks {
    int (*translate)(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local);
    void (*copy)(void *ctx, void *dst, const void *src, uint64_t len);
    void *ctx;
} shmb_mooncake_hooks_t;

/* The translate hook of a Mooncake model (ctx: the shmb_mooncake_t). */
int shmb_mooncake_translate(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local) SHMB_NOEXCEPT;

/* One descriptor, as TENT's Request carries it. */
typedef enum shmb_mooncake_opcode {
    SHMB_MOONCAKE_READ = 0,  /* target -> source */
    SHMB_MOONCAKE_WRITE = 1, /* source -> target */
} shmb_mooncake_opcode_t;

typedef struct shmb_mooncake_request {
    shmb_mooncake_opcode_t opcode;
    void *source;           /* local bytes */
    uint64_t target_id;     /* the peer's segment (0: the local segment) */
    uint64_t target_offset; /* the peer's address of the target bytes */
    uint64_t length;        /* bytes, > 0 */
} shmb_mooncake_request_t;

/* What one request did. */
typedef struct shmb_mooncake_submitted {
    void *target;                /* translated target (the peer's address if translate is NULL) */
    uint64_t buffer_addr;        /* base (peer address) of the buffer the selection found */
    uint64_t transferred_bytes;  /* as getTransferStatus reported it */
} shmb_mooncake_submitted_t;

typedef struct shmb_mooncake_engine shmb_mooncake_engine_t; /* opaque */

/* The engine over shmb_mooncake_create's metadata, the local segment holding
 * [local_addr, local_addr + local_length) (NULL, 0: none), the SHM transport
 * and the default policies. -EINVAL also for target_id 0. */
int shmb_mooncake_engine_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
                                size_t other_segments, void *local_addr, uint64_t local_length,
                                shmb_mooncake_engine_t **out) SHMB_NOEXCEPT;

/* The buffers segment target_id registered (what findBuffer walks); 0 for
 * an unknown segment. */
size_t shmb_mooncake_engine_buffers(shmb_mooncake_engine_t *e, uint64_t target_id) SHMB_NOEXCEPT;

/* Frees everything. NULL: a no-op. */
void shmb_mooncake_engine_destroy(shmb_mooncake_engine_t *e) SHMB_NOEXCEPT;

/* One request through the path, the hooks (may be NULL) where upstream
 * translates and copies; out may be NULL. -EINVAL: no buffer holds the
 * target; -ENOENT: unknown segment; or translate's error. */
int shmb_mooncake_engine_submit(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *req,
                                const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out) SHMB_NOEXCEPT;

/* reqs[0..n) in ONE batch, one submitTransfer of the vector (SGLang's
 * batch_transfer_sync), each task polled; out (may be NULL) gets n entries:
 * targets in the order the transport took the tasks (TENT's merge may
 * reorder contiguous ones and fold them: a folded entry's target is NULL),
 * buffer_addr the last selection's. -EINVAL: n = 0 or a bad request; else
 * as shmb_mooncake_engine_submit, for the first that failed. */
int shmb_mooncake_engine_submit_n(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *reqs, size_t n,
                                  const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out) SHMB_NOEXCEPT;

/* The timed loop: the sum of the targets and buffer bases of requests[0..n)
 * submitted one by one (a failure counts 0). */
uint64_t shmb_mooncake_engine_submit_batch(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *requests,
                                           size_t n, const shmb_mooncake_hooks_t *hooks) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
