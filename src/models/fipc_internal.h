/* fipc_internal: the Flow-IPC models' test hooks: the planted hand-off and
 * object faults a unit test checks the verifications refuse, and the broken
 * pool mutex. Not thread-safe: set while nothing runs; a run uses NONE. */
#ifndef SHMBENCH_FIPC_INTERNAL_H
#define SHMBENCH_FIPC_INTERNAL_H

#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"

#ifdef __cplusplus
extern "C" {
#endif

enum shmb_fipc_fault {
    SHMB_FIPC_FAULT_NONE = 0,
    SHMB_FIPC_FAULT_BORROW_ADDR,  /* borrow returns the object's address + 64 */
    SHMB_FIPC_FAULT_BLOB,         /* lend writes the object's offset + 64 into the blob */
    SHMB_FIPC_FAULT_RETURN,       /* jemalloc: the return message names offset + 64 (classic has none) */
    SHMB_FIPC_FAULT_EARLY_FREE,   /* jemalloc: the lender keeps no reference; classic: lend adds no owner */
    SHMB_FIPC_FAULT_DOUBLE_FREE,  /* the free is counted twice (as a second free would be) */
};

/* The fault the next hand-offs carry. */
extern int shmb_fipc_fault;

/* Breaks the SHM-classic pool's interprocess mutex for the calling thread:
 * it is made an error-checking mutex this thread holds, so that boost's
 * lock of it fails (EDEADLK) and throws, as it would over a broken mutex;
 * a test then checks that the entry points return -errno instead of
 * letting the exception through. shmb_fipc_classic_mend_lock unlocks it
 * and makes it the mutex boost made again. Both return 0 or -errno. */
int shmb_fipc_classic_break_lock(shmb_fipc_classic_t *pool);
int shmb_fipc_classic_mend_lock(shmb_fipc_classic_t *pool);

/* The object layer's planted faults (shmb_fipc_classic_object_drop,
 * shmb_fipc_jemalloc_object_drop), which the allocation benchmark's check
 * of the frees must refuse. */
enum shmb_fipc_object_fault {
    SHMB_FIPC_OBJECT_FAULT_NONE = 0,
    SHMB_FIPC_OBJECT_FAULT_KEEP,  /* a drop keeps a copy of the handle: the deleter never runs */
    SHMB_FIPC_OBJECT_FAULT_TWICE, /* a deleter's free is counted twice (as a second free would be) */
};

/* The fault the next drops carry. */
extern int shmb_fipc_object_fault;

/* What the verifications and the tests read back of a hand-off. */

/* What a handle blob or a ReturnObject message names. */
typedef struct shmb_fipc_handle {
    uint32_t collection_id; /* the arena */
    uint32_t pool_id;
    int32_t pool_offset;    /* bytes from the pool's base */
} shmb_fipc_handle_t;

/* Reads a handle blob / a ReturnObject message. Returns 0 or -EBADMSG. */
int shmb_fipc_handle_decode(const void *blob, size_t len, shmb_fipc_handle_t *out) SHMB_NOEXCEPT;
int shmb_fipc_return_decode(const void *msg, size_t len, shmb_fipc_handle_t *out) SHMB_NOEXCEPT;

/* Where the borrower mapped the place h names, or NULL (not lent to it). */
const unsigned char *shmb_fipc_borrower_address(const shmb_fipc_borrower_t *b,
                                                const shmb_fipc_handle_t *h) SHMB_NOEXCEPT;

/* What a blob names: the object's offset from the pool's base. Returns 0,
 * or -EBADMSG (not a blob, or a scope id other than the session's). */
int shmb_fipc_classic_blob_decode(const void *blob, size_t len, uint64_t *offset) SHMB_NOEXCEPT;

/* The owner count of the object at addr (in some arena's mapping). */
unsigned shmb_fipc_classic_owners(const shmb_fipc_classic_object_t *obj) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
