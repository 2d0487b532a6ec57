// fipc_jemalloc_verify: the in-process check of SHM-jemalloc's hand-off, a
// lender and a borrower of one session (fipc_jemalloc_lend.cc,
// fipc_jemalloc_borrow.cc) passing one object there and back.
#include "cxx_guard.hpp"
#include "fipc_internal.h"
#include "fipc_jemalloc_handoff.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace {

// The two sides of one in-process session for shmb_fipc_handoff_verify,
// and the objects it holds, let go in any case.
struct Verify_run {
    shmb_fipc_lender_t *lender = nullptr;
    shmb_fipc_borrower_t *borrower = nullptr;
    shmb_fipc_object_t lent{}, borrowed{};
    unsigned char msg[SHMB_FIPC_MSG_MAX], reply[SHMB_FIPC_MSG_MAX];
    ~Verify_run()
    {
        size_t len;
        shmb_fipc_object_release(&borrowed, msg, sizeof(msg), &len);
        shmb_fipc_object_release(&lent, msg, sizeof(msg), &len);
        shmb_fipc_lender_destroy(lender);
        shmb_fipc_borrower_destroy(borrower);
    }

    // One synchronous request: the lender's message, the borrower's
    // handler, the reply back.
    int round_trip(size_t len)
    {
        size_t reply_len;
        int rc = shmb_fipc_borrower_receive(borrower, msg, len, reply, sizeof(reply), &reply_len);
        return rc < 0 ? rc : shmb_fipc_lender_on_response(lender, reply, reply_len);
    }

    int lend_all_pools(shmb_fipc_jemalloc_t *j)
    {
        size_t len;
        int rc = shmb_fipc_lender_lend_arena(lender, msg, sizeof(msg), &len);
        if (rc < 0 || (rc = round_trip(len)) < 0)
            return rc;
        std::vector<shmb_fipc_pool_t> pools(shmb_fipc_jemalloc_pool_list(j, nullptr, 0));
        pools.resize(shmb_fipc_jemalloc_pool_list(j, pools.data(), pools.size()));
        for (const shmb_fipc_pool_t &pool : pools)
            if ((rc = shmb_fipc_lender_lend_pool(lender, pool.id, msg, sizeof(msg), &len)) < 0 ||
                (rc = round_trip(len)) < 0)
                return rc;
        return 0;
    }

};

bool same_handle(const shmb_fipc_handle_t &a, const shmb_fipc_handle_t &b)
{
    return a.collection_id == b.collection_id && a.pool_id == b.pool_id && a.pool_offset == b.pool_offset;
}

// The lend, borrow, release and return of v.lent, checked.
int verify_steps(Verify_run &v, shmb_fipc_jemalloc_t *j, size_t bytes)
{
    unsigned char blob[SHMB_FIPC_HANDLE_BYTES];
    size_t blob_len, len;
    shmb_fipc_handle_t want, got;
    std::memset(v.lent.addr, 0xa5, bytes);
    int rc = shmb_fipc_lender_lend(v.lender, &v.lent, blob, sizeof(blob), &blob_len);
    if (rc < 0)
        return rc;
    uint64_t offset;
    want.collection_id = shmb_fipc::lender_collection_id(v.lender);
    if (shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(j), v.lent.addr, &want.pool_id, &offset) < 0)
        return -EFAULT;
    want.pool_offset = static_cast<int32_t>(offset);
    if (shmb_fipc_handle_decode(blob, blob_len, &got) < 0 || !same_handle(got, want))
        return -EBADMSG;
    if ((rc = shmb_fipc_object_release(&v.lent, v.msg, sizeof(v.msg), &len)) < 0)
        return rc;
    if (len != 0 || shmb_fipc_lender_frees(v.lender) != 0)
        return -ESTALE;
    if ((rc = shmb_fipc_borrower_borrow(v.borrower, blob, blob_len, &v.borrowed)) < 0)
        return rc;
    const unsigned char *expected = shmb_fipc_borrower_address(v.borrower, &want);
    const unsigned char *p = static_cast<const unsigned char *>(v.borrowed.addr);
    if (p != expected || std::count(p, p + bytes, 0xa5) != static_cast<std::ptrdiff_t>(bytes))
        return -EFAULT;
    if ((rc = shmb_fipc_object_release(&v.borrowed, v.msg, sizeof(v.msg), &len)) < 0)
        return rc;
    if (shmb_fipc_return_decode(v.msg, len, &got) < 0 || !same_handle(got, want))
        return -EBADMSG;
    if (shmb_fipc_lender_frees(v.lender) != 0)
        return -ESTALE;
    if ((rc = shmb_fipc_lender_on_return(v.lender, v.msg, len)) < 0)
        return rc;
    return shmb_fipc_lender_frees(v.lender) == 1 && shmb_fipc_lender_lent(v.lender) == 0 ? 0 : -ESTALE;
}

} // namespace

int shmb_fipc_handoff_verify(shmb_fipc_jemalloc_t *j, size_t bytes) noexcept
{
    if (!j || bytes == 0)
        return -EINVAL;
    return shmb::guard([&] {
        Verify_run v;
        int rc = shmb_fipc_lender_create(j, &v.lender);
        if (rc < 0 || (rc = shmb_fipc_borrower_create(&v.borrower)) < 0 ||
            (rc = shmb_fipc_lender_construct(v.lender, bytes, &v.lent)) < 0 ||
            (rc = v.lend_all_pools(j)) < 0)
            return rc;
        return verify_steps(v, j, bytes);
    });
}
