/*
 * mooncake: a model of Mooncake's SHM path, per request and per allocation
 * (a system model: C++17 inside, this C header outside).
 *
 * Two relocate paths, chosen when the model is created
 * (shmb_mooncake_create_path):
 *
 * SHMB_MOONCAKE_TENT ("tent", the default): what upstream ships today, the
 * TENT engine's ShmTransport::relocateSharedMemoryAddress (kvcache-ai/Mooncake,
 * mooncake-transfer-engine/tent/src/transport/shm/shm_transport.cpp, with
 * tent/include/tent/common/concurrent/rw_spinlock.h,
 * tent/src/runtime/segment_manager.cpp and segment.cpp):
 *   1. relocate_lock_ (TENT's RWSpinlock, whose shared unlock is a CAS loop)
 *      taken shared; relocate_map_, an std::unordered_map<SegmentID,
 *      std::unordered_map<uint64_t, OpenedShmEntry>>, probed with find();
 *   2. tryResolve: the segment's mapped entries walked in the hash map's
 *      iteration order until one holds [addr, addr + len): a node-chasing
 *      walk over every buffer mapped so far, so its cost grows with the
 *      number of buffers in use;
 *   3. on a miss (first use of a buffer, or an address in no mapped buffer):
 *      the lock taken exclusive, the map probed again, then
 *      SegmentManager::withCachedSegment: the calling thread's cache of
 *      segment descriptors (a thread-local std::unordered_map of
 *      std::shared_ptr<SegmentDesc>, under a TTL and version check),
 *      SegmentDesc::findBuffer (a scan of the descriptor's buffers in
 *      registration order, the first that holds the range), and, if that
 *      buffer has no SHM path or none holds the range, the thread's cache
 *      entry dropped, the descriptor fetched again from the registry and
 *      the scan repeated; a found buffer not yet mapped is attached through
 *      ops->attach (upstream: shm_open(O_RDWR) + fstat size check + mmap of
 *      the buffer's length + close) and enters relocate_map_.
 *   Upstream's answer depends on history in one corner: findBuffer takes the
 *   first buffer in registration order, even one without an SHM path, while
 *   tryResolve takes any mapped buffer; with overlapping registrations the
 *   two can disagree. The model keeps that.
 *
 * SHMB_MOONCAKE_PR192 ("pr192"): the path of the pull request that first
 * added ShmTransport (24893a21e, "[TransferEngine] Support Shared Memory
 * Transports", PR #192, never merged), ShmTransport::relocateSharedMemoryAddress
 * in mooncake-transfer-engine/src/transport/shm_transport/shm_transport.cpp,
 * with transfer_metadata.{h,cpp}, step by step:
 *   1. TransferMetadata::getSegmentDescByID(target_id) with the metadata
 *      cache on: an RWSpinlock read guard, an
 *      std::unordered_map<SegmentID, std::shared_ptr<SegmentDesc>> probed
 *      with count() and operator[], the shared_ptr copied out;
 *   2. the descriptor's std::vector<BufferDesc> scanned in registration
 *      order; an entry matches when its shm_path is not empty and it holds
 *      [addr, addr + len). A BufferDesc carries its strings (name, location,
 *      shm_path) and vectors (lkey, rkey) beside addr and length, so the scan
 *      strides over records of well over 128 bytes;
 *   3. on a hit, the remap cache (std::unordered_map<uint64_t,
 *      OpenedShmEntry> keyed by the buffer's base) probed with count(), then
 *      operator[];
 *   4. on the first use of a buffer, ops->attach opens and maps it (Mooncake:
 *      shm_open(O_RDWR) + mmap of the whole buffer, the descriptor kept in
 *      OpenedShmEntry until the transport goes; upstream maps the request's
 *      length, which later requests further into the buffer overrun) and the
 *      mapping enters the remap cache.
 *
 * Both paths answer alike wherever the registered buffers do not overlap:
 * the buffer that holds the whole range, or an error.
 *
 * The request path both designs keep around the translation (TENT's
 * submitTransfer, shmb_mooncake_engine_* below) is a separate object, so that
 * a Flow-IPC translation can be timed inside it as well as Mooncake's.
 *
 * Allocation (createSharedMemory: shm_open(O_CREAT|O_RDWR), ftruncate, mmap,
 * close) is timed step by step by alloc_bench on shmbench/segment.h, which
 * does exactly those calls; this module models the per-request path.
 *
 * Functions return 0 or -errno; no C++ exception crosses this header.
 */
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

/* Which relocate path a model follows (see the top of this header). */
typedef enum shmb_mooncake_path {
    SHMB_MOONCAKE_TENT = 0,  /* upstream's TENT ShmTransport: the default */
    SHMB_MOONCAKE_PR192 = 1, /* the PR #192 head (24893a21e) */
} shmb_mooncake_path_t;

#define SHMB_MOONCAKE_PATHS 2
#define SHMB_MOONCAKE_DEFAULT_PATH SHMB_MOONCAKE_TENT

/* The path's name as a flag spells it: "tent" or "pr192"; NULL for a value
 * outside the enum. */
const char *shmb_mooncake_path_name(shmb_mooncake_path_t path) SHMB_NOEXCEPT;

/* The inverse of shmb_mooncake_path_name. Returns 0 (*out written) or
 * -EINVAL (NULL or an unknown name). */
int shmb_mooncake_path_parse(const char *name, shmb_mooncake_path_t *out) SHMB_NOEXCEPT;

/* Builds the metadata of one peer: segment target_id holding buffers[0..n)
 * in registration order (strings copied), beside `other_segments` further
 * segment ids (each with one small non-SHM buffer) so that the metadata map
 * is not trivially small, and the relocate path `path` over it. Nothing is
 * attached yet. Returns 0, -EINVAL (a path outside the enum, n = 0, a zero
 * length, a NULL shm_path, ops or ops->attach NULL) or -ENOMEM. */
int shmb_mooncake_create_path(shmb_mooncake_path_t path, const shmb_mooncake_buffer_t *buffers, size_t n,
                              uint64_t target_id, size_t other_segments, const shmb_mooncake_ops_t *ops,
                              shmb_mooncake_t **out) SHMB_NOEXCEPT;

/* The path a model follows. */
shmb_mooncake_path_t shmb_mooncake_path_of(const shmb_mooncake_t *m) SHMB_NOEXCEPT;

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

/*
 * The request path around the translation: TENT's
 * TransferEngineImpl::submitTransfer for one descriptor, with the batch a
 * caller allocates for it and polls (kvcache-ai/Mooncake,
 * mooncake-transfer-engine/tent/src/runtime/transfer_engine_impl.cpp,
 * transport_selector.cpp, segment_manager.cpp, slab.cpp and
 * tent/src/transport/shm/shm_transport.cpp), with upstream's containers,
 * smart pointers and locks, in upstream's order:
 *   1. allocateBatch(1): a Batch from the per-thread Slab free ring, its task
 *      list reserved, the progress std::recursive_mutex taken, the batch
 *      inserted into two std::unordered_sets (active, alive);
 *   2. submitTransfer of the caller's std::vector<Request> of one:
 *      retainBatch (mutex, alive set probed, reference counted),
 *      validateTransportHint, the submit time (steady_clock::now);
 *      resolveRequestBoundaries (merge_requests is on by default): the local
 *      descriptor snapshot (getLocal: thread-local cache, version check) and
 *      findBuffer of the source; requests grouped in an
 *      std::unordered_map<SegmentID, std::vector<size_t>>;
 *      withCachedSegment(target) and findBuffer of the target: the first
 *      look-up of the buffer; mergeRequests: items copied, std::sort,
 *      merged into a vector, an std::map from request to task;
 *      resolveTransport -> getTransportType in the selector mode (the
 *      default): getRemoteCached again (a std::shared_ptr copy),
 *      Platform::getMemoryType (a virtual call), findBuffer of the target
 *      again (the second look-up), the local snapshot's machine_id compared,
 *      LocationParser of the buffer's location (string splits), then
 *      TransportSelector::select: the first matching policy of the two
 *      defaults, SelectionResult's optionals copied, reorderWithHint's copy
 *      of the buffer's transport list, isTransportAvailable;
 *      commitPreparedSubmit: a std::vector<Request> and a std::vector<size_t>
 *      per transport type (13 each), an std::unordered_map<size_t, TaskInfo>
 *      and one <TransportType, size_t>, the TaskInfo filled (Request and
 *      strings copied), the SHM sub-batch from its Slab on first use with
 *      its progress std::function, startTransportAttempt, the virtual
 *      ShmTransport::submitTransferTasks: dynamic_cast, capacity check, an
 *      ShmTask appended, then THE TRANSLATION (hooks->translate; upstream
 *      relocateSharedMemoryAddress, skipped for the local segment as
 *      upstream skips it), the task filled, startTransfer: THE COPY
 *      (hooks->copy; upstream Platform::copy), status COMPLETED, the
 *      progress notifier called; releaseBatch (mutex, reference dropped);
 *   3. getTransferStatus(task 0): mutex, alive set, refillDispatchWindow
 *      (mutex again, runtime queue off), the virtual sub-batch status read
 *      through dynamic_cast, updateTaskStatusAfterPoll;
 *   4. freeBatch: mutex, alive set, the free list, lazyFreeBatch: the
 *      batch's overall status (getBatchStatus, modelled as its count of
 *      tasks already final: its alive-set probe is left out, and its
 *      severity table serves failed tasks only), freeSubBatch (dynamic_cast,
 *      back to the Slab), both sets erased, the Batch back to its Slab.
 * Left out, each because it costs nothing or does not run by default on a
 * CPU-only host: logging (glog at INFO is not hit on this path; the
 * "unable to find registered buffer" warning of a failed request is left
 * out), metrics (TENT_METRICS_ENABLED is off by default), the runtime
 * admission queue (off by default), staging (only for TCP routes),
 * notifications (submitTransfer without one), the progress worker (off by
 * default, so notifyBatchMaybeReady only tests a null pointer), failover
 * (only after a failed transport), the segment-update subscription RPC and
 * the JSON parse of a refetched descriptor (only on a cache miss; a miss
 * here copies the registry's descriptor instead), and the caller's wait
 * between polls (the copy is synchronous, so the first poll sees
 * COMPLETED).
 *
 * The translation and the copy are the caller's (hooks), so that a driver
 * can time the path alone (both hooks NULL), the translation alone (the
 * system's own call, outside this path) and the whole request (both set),
 * each step counted once.
 */

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
 * shmb_mooncake_create_path (segment target_id holding buffers[0..n) in
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
