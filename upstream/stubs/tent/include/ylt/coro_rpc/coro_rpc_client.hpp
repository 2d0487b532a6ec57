// Stand-in, written for shmbench, for yalantinglibs' coro_rpc client header
// (include/ylt/coro_rpc/coro_rpc_client.hpp): the names only, as in
// coro_rpc_server.hpp beside it.
#pragma once

#include "ylt/coro_rpc/coro_rpc_server.hpp"
