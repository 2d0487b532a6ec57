// Stand-in, written for shmbench, for yalantinglibs' coro_io
// (include/ylt/coro_io/coro_io.hpp), which TENT's tent/rpc/rpc.h includes
// for the real agent's I/O; the in-process agent (upstream/tent/
// rpc_loopback.cc) does no I/O, so nothing is declared.
#pragma once
