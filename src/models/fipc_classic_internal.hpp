// fipc_classic_internal: SHM-classic's pool as fipc_classic.cc and
// fipc_classic_lend.cc see it. C++ only, not installed.
#ifndef SHMBENCH_FIPC_CLASSIC_INTERNAL_HPP
#define SHMBENCH_FIPC_CLASSIC_INTERNAL_HPP

#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/segment.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/interprocess/indexes/null_index.hpp>
#include <boost/interprocess/managed_external_buffer.hpp>
#include <boost/interprocess/managed_shared_memory.hpp>
#include <boost/interprocess/mem_algo/rbtree_best_fit.hpp>
#include <boost/interprocess/sync/mutex_family.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>

namespace fipc_classic {

namespace bipc = boost::interprocess;

using Algorithm = bipc::rbtree_best_fit<bipc::mutex_family>;
using Pool = bipc::basic_managed_external_buffer<char, Algorithm, bipc::null_index>;

// Where basic_managed_shared_memory puts its segment manager in the mapping.
constexpr size_t kManagerOffset =
    bipc::ipcdetail::shmem_open_or_create<Algorithm>::type::ManagedOpenOrCreateUserOffset;

// The pool's SHM segment: destroyed (unmapped, unlinked) with its owner
// unless handed over to destroy().
class Segment {
public:
    Segment() = default;
    Segment(const Segment &) = delete;
    Segment &operator=(const Segment &) = delete;
    ~Segment()
    {
        if (live_)
            shmb_segment_destroy(&seg_, nullptr);
    }

    int create(const char *prefix, size_t bytes)
    {
        int rc = shmb_segment_create(&seg_, prefix, bytes, nullptr, nullptr);
        if (rc < 0)
            return rc;
        live_ = true;
        if ((rc = reserve_headers()) < 0)
            return rc;
        rc = shmb_segment_map(&seg_, nullptr);
        if (rc < 0)
            return rc;
        return shmb_segment_close(&seg_, nullptr);
    }

    // Unmaps, and unlinks or leaves the name in /dev/shm.
    int end(bool unlink_name)
    {
        live_ = false;
        return unlink_name ? shmb_segment_destroy(&seg_, nullptr) : shmb_segment_release(&seg_);
    }

    unsigned char *base() const { return static_cast<unsigned char *>(seg_.addr); }
    size_t size() const { return seg_.size; }
    const char *name() const { return seg_.name; }

private:
    // The pages the manager writes when it is built: its header at the start,
    // rbtree_best_fit's end block in the last page. Reserved (posix_fallocate,
    // a deliberate difference from upstream), so that a full /dev/shm is
    // -ENOSPC here, not a SIGBUS inside boost. The blocks' pages stay sparse:
    // their first write is the caller's (timed by --touch, guarded there).
    int reserve_headers()
    {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        const size_t head = (kManagerOffset + sizeof(Pool::segment_manager) + 2 * page - 1) / page * page;
        const size_t tail = seg_.size > head ? (seg_.size - 1) / page * page : seg_.size;
        int err = posix_fallocate(seg_.fd, 0, static_cast<off_t>(std::min(head, seg_.size)));
        if (err == 0 && tail < seg_.size)
            err = posix_fallocate(seg_.fd, static_cast<off_t>(tail), static_cast<off_t>(seg_.size - tail));
        return err ? shmb_error_record("posix_fallocate", err, seg_.name) : 0;
    }

    shmb_segment_t seg_{};
    bool live_ = false;
};

} // namespace fipc_classic

struct shmb_fipc_classic {
    fipc_classic::Segment segment;
    std::optional<fipc_classic::Pool> pool; // Pool_arena::m_pool
};

#endif
