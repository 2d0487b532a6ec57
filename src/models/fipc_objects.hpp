// fipc_objects: what the object layers of SHM-classic (fipc_classic.cc) and
// SHM-jemalloc (fipc_jemalloc_objects.cc) share. C++ only, not installed.
#ifndef SHMBENCH_FIPC_OBJECTS_HPP
#define SHMBENCH_FIPC_OBJECTS_HPP

#include "cxx_guard.hpp"
#include "fipc_internal.h"

#include <cerrno>
#include <new>
#include <vector>

namespace shmb_fipc {

// stl::Arena_activator<Arena> (a flow::util::Scoped_setter): this thread's
// arena set for the object's construction or destruction, the old one back.
template <class Arena> class Activator {
public:
    explicit Activator(Arena *a) : old_(active) { active = a; }
    ~Activator() { active = old_; }
    Activator(const Activator &) = delete;
    Activator &operator=(const Activator &) = delete;

private:
    static inline thread_local Arena *active = nullptr;
    Arena *old_;
};

// T: a buffer whose constructor and destructor leave its bytes alone.
struct Object {
    Object() {}
};

// The shared_ptr a C handle `h` holds in its storage.
template <class Handle, class H> Handle &handle_of(H *h)
{
    return *std::launder(reinterpret_cast<Handle *>(h->handle));
}

template <class Handle, class H> const Handle &handle_of(const H *h)
{
    return *std::launder(reinterpret_cast<const Handle *>(h->handle));
}

// The handle's destructor (its deleter runs: it is the last owner); under
// SHMB_FIPC_OBJECT_FAULT_KEEP a copy goes to `kept` first. 0 or -errno.
template <class Handle, class H> int object_drop(std::vector<Handle> &kept, H *h) noexcept
{
    if (!h || !h->addr)
        return -EINVAL;
    Handle &handle = handle_of<Handle>(h);
    if (shmb_fipc_object_fault == SHMB_FIPC_OBJECT_FAULT_KEEP) {
        int rc = shmb::guard([&] {
            kept.push_back(handle);
            return 0;
        });
        if (rc < 0)
            return rc;
    }
    handle.~Handle();
    h->addr = nullptr;
    return 0;
}

} // namespace shmb_fipc

#endif
