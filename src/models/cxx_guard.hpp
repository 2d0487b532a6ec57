// cxx_guard: the one mapping from a C++ exception to -errno for every model's
// entry point (the C headers declare them SHMB_NOEXCEPT: an exception that
// escaped one would terminate the process). C++ only, not installed.
#ifndef SHMBENCH_CXX_GUARD_HPP
#define SHMBENCH_CXX_GUARD_HPP

#include <boost/interprocess/exceptions.hpp>
#include <boost/system/system_error.hpp>

#include <cerrno>
#include <new>
#include <system_error>

namespace shmb {

// -errno for an error code that carries one (the generic and system
// categories, std's or boost's), else -EIO.
template <typename Code> inline int errno_of_code(const Code &code, bool is_errno) noexcept
{
    return is_errno && code.value() > 0 ? -code.value() : -EIO;
}

// -errno for the exception being handled (call it only inside a catch):
// std::bad_alloc and boost.interprocess's bad_alloc: -ENOMEM; another
// boost.interprocess exception (its mutex's lock_exception, a failed
// mapping): the errno it carries, else -EIO; std::system_error (std::mutex)
// and boost::system::system_error (boost.thread's lock_error): their errno,
// else -EIO; anything else: -EIO.
inline int errno_of_current_exception() noexcept
{
    try {
        throw;
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (const boost::interprocess::bad_alloc &) {
        return -ENOMEM;
    } catch (const boost::interprocess::interprocess_exception &e) {
        if (e.get_error_code() == boost::interprocess::out_of_memory_error)
            return -ENOMEM;
        return e.get_native_error() > 0 ? -e.get_native_error() : -EIO;
    } catch (const std::system_error &e) {
        const std::error_category &cat = e.code().category();
        return errno_of_code(e.code(), cat == std::generic_category() || cat == std::system_category());
    } catch (const boost::system::system_error &e) {
        const boost::system::error_category &cat = e.code().category();
        return errno_of_code(e.code(), cat == boost::system::generic_category() ||
                                           cat == boost::system::system_category());
    } catch (...) {
        return -EIO;
    }
}

// fn() for an entry point returning 0 (or a count) or -errno: what fn
// returns, or the -errno of what it throws. Always inline: a guarded timed
// entry point runs fn's code in place, as it did with its own try block.
template <typename F> [[gnu::always_inline]] inline int guard(F &&fn) noexcept
{
    try {
        return fn();
    } catch (...) {
        return errno_of_current_exception();
    }
}

// fn() for an entry point whose result cannot carry an errno (an address,
// a count, nothing): what fn returns, or fallback when it throws.
template <typename T, typename F> [[gnu::always_inline]] inline T guard_or(T fallback, F &&fn) noexcept
{
    try {
        return fn();
    } catch (...) {
        return fallback;
    }
}

// fn(); when it throws, undo() runs before the exception goes on.
template <typename F, typename U> inline auto undo_on_throw(F &&fn, U &&undo) -> decltype(fn())
{
    try {
        return fn();
    } catch (...) {
        undo();
        throw;
    }
}

} // namespace shmb

#endif
