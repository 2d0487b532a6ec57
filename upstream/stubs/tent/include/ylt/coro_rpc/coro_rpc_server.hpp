// Stand-in, written for shmbench, for yalantinglibs' coro_rpc server header
// (alibaba/yalantinglibs, include/ylt/coro_rpc/coro_rpc_server.hpp), which
// TENT's tent/rpc/rpc.h includes. TENT's RPC agent is replaced by an
// in-process one (upstream/tent/rpc_loopback.cc) that never touches the
// server, so the header only has to name the class (rpc.h keeps a pointer).
#pragma once

namespace coro_rpc {
class coro_rpc_server;
class coro_rpc_client;
} // namespace coro_rpc
