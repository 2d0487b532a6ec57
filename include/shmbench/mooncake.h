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

/* How a buffer is mapped on first use and unmapped at the end. attach maps
 * `length` bytes of the SHM object `shm_path` and returns our address in
 * *local (0 or -errno); `index` is the buffer's registration index (Mooncake
 * itself opens by path alone; the index lets a caller place or count
 * mappings). detach (may be NULL) undoes one attach. */
typedef struct shmb_mooncake_ops {
    int (*attach)(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local);
    void (*detach)(void *ctx, void *local, uint64_t length);
    void *ctx;
} shmb_mooncake_ops_t;

typedef struct shmb_mooncake shmb_mooncake_t; /* opaque */

/* Builds the metadata of one peer: segment target_id holding buffers[0..n)
 * in registration order (strings copied), beside `other_segments` further
 * segments of one small non-SHM buffer each. Nothing is attached yet.
 * Returns 0, -EINVAL (n = 0, a zero length, a NULL shm_path, ops or
 * ops->attach NULL) or -ENOMEM. */
int shmb_mooncake_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id, size_t other_segments,
                         const shmb_mooncake_ops_t *ops, shmb_mooncake_t **out) SHMB_NOEXCEPT;

/* Detaches every attached buffer (ops->detach) and frees everything. NULL is
 * a no-op. */
void shmb_mooncake_destroy(shmb_mooncake_t *m) SHMB_NOEXCEPT;

/* One request through the whole relocate path: translates [addr, addr + len)
 * of segment target_id into our address in *out, attaching the buffer on
 * first use. Returns 0, -ENOENT (unknown target_id), -EINVAL (no SHM buffer
 * holds the whole range, or len = 0) or attach's error. */
int shmb_mooncake_relocate(shmb_mooncake_t *m, uint64_t target_id, uint64_t addr, uint64_t len,
                           void **out) SHMB_NOEXCEPT;

/* The timed loop: relocates requests[0..n) (their addr and len) in segment
 * target_id and returns the sum of the translated addresses (a failed
 * request counts 0), so that nothing can be optimised away. */
uint64_t shmb_mooncake_relocate_batch(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests, size_t n) SHMB_NOEXCEPT;

/* The latency loop: relocates requests[0..n) as a dependent chain, each
 * request's addr shifted by how far the previous relocation landed from
 * expected[] (0 when it is right: shmbench/lookup.h, shmb_lookup_chain).
 * Returns the sum of the translated addresses (a failed request counts 0). */
uint64_t shmb_mooncake_relocate_chain(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests,
                                      const uint64_t *expected, size_t n) SHMB_NOEXCEPT;

/* How many buffers have been attached so far. */
size_t shmb_mooncake_attached(const shmb_mooncake_t *m) SHMB_NOEXCEPT;

/* The request path around the translation: TENT's submitTransfer of one
 * descriptor (allocateBatch, submit, one poll, freeBatch; docs/models.md).
 * The translation and the copy are the caller's hooks, so that a driver
 * times the path alone, the translation alone or the whole request. */

/* The two steps the request path leaves to the system being measured.
 * translate maps [addr, addr + len) of segment target_id to our address in
 * *local (0 or -errno); NULL skips it (the task then carries the peer's
 * address, and no copy runs). copy moves len bytes from src to dst; NULL
 * skips it. Both get ctx. */
typedef struct shmb_mooncake_hooks {
    int (*translate)(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local);
    void (*copy)(void *ctx, void *dst, const void *src, uint64_t len);
    void *ctx;
} shmb_mooncake_hooks_t;

/* shmb_mooncake_hooks_t.translate for a Mooncake model: ctx is the
 * shmb_mooncake_t; it runs shmb_mooncake_relocate. */
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

/* Builds the engine side of one peer: the same metadata as
 * shmb_mooncake_create (segment target_id holding buffers[0..n) in
 * registration order, other_segments further segments), the local segment
 * holding [local_addr, local_addr + local_length) (NULL, 0: none), the SHM
 * transport and the default selection policies. Returns 0, -EINVAL (n = 0, a
 * zero length, a NULL shm_path, target_id 0, local_length without
 * local_addr) or -ENOMEM. */
int shmb_mooncake_engine_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
                                size_t other_segments, void *local_addr, uint64_t local_length,
                                shmb_mooncake_engine_t **out) SHMB_NOEXCEPT;

/* How many buffers segment target_id registered, as the engine's descriptor
 * lists them (what SegmentDesc::findBuffer walks per look-up); 0 for an
 * unknown segment or a NULL engine. */
size_t shmb_mooncake_engine_buffers(shmb_mooncake_engine_t *e, uint64_t target_id) SHMB_NOEXCEPT;

/* Frees everything. NULL is a no-op. */
void shmb_mooncake_engine_destroy(shmb_mooncake_engine_t *e) SHMB_NOEXCEPT;

/* Runs one request through the path above, calling hooks->translate and
 * hooks->copy where upstream translates and copies (hooks may be NULL: both
 * skipped). Returns 0 (*out written, out may be NULL), -EINVAL (bad
 * arguments, or no registered buffer of the segment holds the target: the
 * task fails), -ENOENT (unknown segment: the task fails), translate's error
 * (the SHM submit fails), or -ENOMEM. */
int shmb_mooncake_engine_submit(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *req,
                                const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out) SHMB_NOEXCEPT;

/* The timed loop: submits requests[0..n) one by one and returns the sum of
 * their targets and found buffer bases (a failed request counts 0), so that
 * nothing can be optimised away. */
uint64_t shmb_mooncake_engine_submit_batch(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *requests,
                                           size_t n, const shmb_mooncake_hooks_t *hooks) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
