// Stand-in, written for shmbench, for async_simple's Lazy coroutine
// (alibaba/async_simple, async_simple/coro/Lazy.h), which TENT's
// tent/rpc/rpc.h names as the return type of the agent's coroutine calls.
// Declared, never defined: the in-process agent (upstream/tent/
// rpc_loopback.cc) defines no coroutine, so any code that awaited one would
// fail to link rather than run something else.
#pragma once

namespace async_simple::coro {
template <typename T = void> class Lazy;
} // namespace async_simple::coro
