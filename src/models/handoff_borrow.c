/* handoff_borrow: the borrower's side of Flow-IPC's object hand-off
 * (borrow, check the tags, release), in the lender's process or in the
 * borrower process (handoff_peer.c). */
#include "handoff_internal.h"

#include "shmbench/copy.h"
#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Hand-off k's object, read through the borrower's pointer: its tags, and
 * its payload when the head names one. */
static int check_object(const void *addr, const shmb_handoff_head_t *head, uint64_t tag, int flavour, uint64_t k,
                        char *why, size_t cap)
{
    uint64_t first, last;
    const size_t bytes = (size_t)head->bytes;
    memcpy(&first, addr, sizeof(first));
    memcpy(&last, (const char *)addr + bytes - sizeof(last), sizeof(last));
    if (first != tag || last != tag) {
        snprintf(why, cap,
                 "%s: hand-off %llu: the borrowed object at %p reads 0x%llx / 0x%llx, not the lender's tag 0x%llx",
                 handoff_flavour_name(flavour), (unsigned long long)k, addr, (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)tag);
        return -EPROTO;
    }
    size_t bad = 0;
    if (head->payload == 0 ||
        !shmb_copy_verify_from((const char *)addr + SHMB_HANDOFF_PAYLOAD_AT, (size_t)head->payload,
                               (size_t)head->from, &bad))
        return 0;
    snprintf(why, cap, "%s: hand-off %llu: the borrowed object's payload of %llu bytes differs at offset %zu",
             handoff_flavour_name(flavour), (unsigned long long)k, (unsigned long long)head->payload, bad);
    return -EPROTO;
}

/* A head the object can hold: its tags, and its payload inside it. */
static int head_fits(const shmb_handoff_head_t *head)
{
    return head->bytes >= 2 * sizeof(uint64_t) &&
           (head->payload == 0 || head->payload <= head->bytes - SHMB_HANDOFF_PAYLOAD_SLACK);
}

int shmb_handoff_refused(int ret, int flavour, const char *call, uint64_t k, char *why, size_t cap)
{
    if (ret == -ENOMEM)
        return ret;
    snprintf(why, cap, "%s: hand-off %llu: %s failed: %s", handoff_flavour_name(flavour), (unsigned long long)k,
             call, strerror(-ret));
    return -EPROTO;
}

int shmb_handoff_borrow_jemalloc(shmb_handoff_borrower_t *b, const void *blob, size_t len,
                                 const shmb_handoff_head_t *head, void *msg, size_t cap, size_t *msg_len, char *why,
                                 size_t wcap)
{
    const uint64_t k = b->next[HANDOFF_JEMALLOC]++;
    shmb_fipc_object_t obj = {0};
    int ret = head_fits(head) ? shmb_fipc_borrower_borrow(b->jemalloc, blob, len, &obj) : -EBADMSG;
    if (ret < 0)
        return shmb_handoff_refused(ret, HANDOFF_JEMALLOC, "borrow", k, why, wcap);
    int checked = check_object(obj.addr, head, handoff_tag(b->seed, HANDOFF_JEMALLOC, k), HANDOFF_JEMALLOC, k,
                               why, wcap);
    ret = shmb_fipc_object_release(&obj, msg, cap, msg_len);
    if (ret < 0 || checked < 0)
        return checked < 0 ? checked : ret;
    if (*msg_len == 0) {
        snprintf(why, wcap, "flowipc_jemalloc: hand-off %llu: the borrower's release wrote no return message",
                 (unsigned long long)k);
        return -EPROTO;
    }
    return 0;
}

int shmb_handoff_borrow_classic(shmb_handoff_borrower_t *b, const void *blob, size_t len,
                                const shmb_handoff_head_t *head, char *why, size_t wcap)
{
    const uint64_t k = b->next[HANDOFF_CLASSIC]++;
    shmb_fipc_classic_object_t obj = {0};
    int ret = head_fits(head) ? shmb_fipc_classic_borrow(b->classic, blob, len, &obj) : -EBADMSG;
    if (ret < 0)
        return shmb_handoff_refused(ret, HANDOFF_CLASSIC, "borrow", k, why, wcap);
    ret = check_object(obj.addr, head, handoff_tag(b->seed, HANDOFF_CLASSIC, k), HANDOFF_CLASSIC, k, why, wcap);
    shmb_fipc_classic_release(&obj);
    return ret;
}

void shmb_handoff_borrower_close(shmb_handoff_borrower_t *b)
{
    shmb_fipc_classic_arena_destroy(b->classic);
    shmb_fipc_borrower_destroy(b->jemalloc);
    b->classic = NULL;
    b->jemalloc = NULL;
}
