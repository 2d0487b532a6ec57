// upstream_flowipc: Flow-IPC's own SHM-classic Pool_arena (ipc_shm
// src/ipc/shm/classic/pool_arena.cpp) compiled from the user's source behind
// shmbench/upstream_flowipc.h, in libshmb_flowipc_upstream.so (Boost 1.81,
// hidden: cmake/upstream_flowipc.cmake); without -DSHMB_FLOWIPC_SOURCE,
// upstream_flowipc_none.c.
#include "shmbench/upstream_flowipc.h"

#include "ipc/shm/classic/pool_arena.hpp"

#include "cxx_guard.hpp"
#include "upstream_flowipc_internal.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#define SHMB_API extern "C" __attribute__((visibility("default")))

namespace classic = ipc::shm::classic;

namespace {
// Pool_arena's own pool type (pool_arena.hpp, private there): a second,
// read-only view of the pool asks rbtree_best_fit for its free bytes.
using Pool_view = ipc::bipc::basic_managed_shared_memory<char, ipc::bipc::rbtree_best_fit<ipc::bipc::mutex_family>,
                                                         ipc::bipc::null_index>;

// Where the file /dev/shm`name` is mapped read-write in this process
// (/proc/self/maps: Pool_arena does not say), and its bytes.
bool find_mapping(const std::string &name, unsigned char **base, size_t *bytes)
{
    std::FILE *f = std::fopen("/proc/self/maps", "re");
    if (!f)
        return false;
    const std::string want = "/dev/shm" + name;
    char line[4096];
    bool found = false;
    while (!found && std::fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[8];
        int path_at = 0;
        if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) < 3 || path_at == 0)
            continue;
        std::string path(line + path_at);
        while (!path.empty() && (path.back() == '\n' || path.back() == ' '))
            path.pop_back();
        if (path == want && perms[0] == 'r' && perms[1] == 'w') {
            *base = reinterpret_cast<unsigned char *>(lo);
            *bytes = hi - lo;
            found = true;
        }
    }
    std::fclose(f);
    return found;
}
} // namespace

struct shmb_upstream_classic {
    ipc::util::Shared_name name;
    std::optional<classic::Pool_arena> arena;
    std::optional<Pool_view> view;
    unsigned char *base = nullptr;
    size_t bytes = 0;
    size_t free_at_start = 0;
};

SHMB_API int shmb_upstream_flowipc_available(void) noexcept { return 1; }

SHMB_API const char *shmb_upstream_flowipc_commits(void) noexcept { return SHMB_FLOWIPC_COMMITS; }

SHMB_API int shmb_upstream_classic_destroy(shmb_upstream_classic_t *c) noexcept
{
    if (!c)
        return 0;
    int rc = shmb::guard([&] {
        c->view.reset();
        c->arena.reset();
        ipc::Error_code err;
        classic::Pool_arena::remove_persistent(shmb::fipc_upstream::never_logger(), c->name, &err);
        return err ? (err.category() == boost::system::system_category() && err.value() > 0 ? -err.value() : -EIO)
                   : 0;
    });
    delete c;
    return rc;
}

SHMB_API int shmb_upstream_classic_create(const char *name, size_t bytes, shmb_upstream_classic_t **out) noexcept
{
    if (!name || name[0] != '/' || !out || bytes == 0)
        return -EINVAL;
    if (access((std::string("/dev/shm") + name).c_str(), F_OK) == 0)
        return -EEXIST;
    auto c = std::make_unique<shmb_upstream_classic>();
    int rc = shmb::guard([&] {
        c->name = ipc::util::Shared_name::ct(name);
        // Upstream creates and maps the pool (and throws on failure: no Error_code given).
        c->arena.emplace(shmb::fipc_upstream::never_logger(), c->name, ipc::util::CREATE_ONLY, bytes);
        if (!find_mapping(name, &c->base, &c->bytes))
            return -ENOENT;
        c->view.emplace(ipc::bipc::open_read_only, name);
        c->free_at_start = c->view->get_free_memory();
        return 0;
    });
    if (rc < 0) {
        // Whatever upstream created goes, even half made.
        if (access((std::string("/dev/shm") + name).c_str(), F_OK) == 0)
            shmb_upstream_classic_destroy(c.release());
        return rc;
    }
    *out = c.release();
    return 0;
}

SHMB_API void *shmb_upstream_classic_base(const shmb_upstream_classic_t *c) noexcept { return c ? c->base : nullptr; }

SHMB_API size_t shmb_upstream_classic_size(const shmb_upstream_classic_t *c) noexcept { return c ? c->bytes : 0; }

// Pool_arena::allocate as upstream runs it (its logger asked should_log(S_DATA) first).
SHMB_API int shmb_upstream_classic_alloc(shmb_upstream_classic_t *c, size_t bytes, void **addr) noexcept
{
    if (!c || !addr || bytes == 0)
        return -EINVAL;
    return shmb::guard([&] {
        *addr = c->arena->allocate(bytes);
        return *addr ? 0 : -ENOMEM;
    });
}

SHMB_API int shmb_upstream_classic_free(shmb_upstream_classic_t *c, void *addr) noexcept
{
    if (!c || !addr)
        return -EINVAL;
    return c->arena->deallocate(addr) ? 0 : -EINVAL;
}

SHMB_API int shmb_upstream_classic_check(const shmb_upstream_classic_t *c, void *const *addr, uint32_t n) noexcept
{
    if (!c || (n && !addr))
        return -EINVAL;
    return shmb::guard([&] {
        if (n == 0)
            return c->view->get_free_memory() == c->free_at_start ? 0 : -EBUSY;
        for (uint32_t i = 0; i < n; i++) {
            // upstream's test of a handle, on a handle that owns nothing
            const classic::Pool_arena::Handle<unsigned char> h(boost::shared_ptr<void>(),
                                                                static_cast<unsigned char *>(addr[i]));
            if (!addr[i] || !c->arena->is_handle_in_arena(h))
                return -EFAULT;
        }
        return 0;
    });
}
