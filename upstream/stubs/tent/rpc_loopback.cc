// Stand-in, written for shmbench, for TENT's RPC agent (kvcache-ai/Mooncake,
// mooncake-transfer-engine/tent/src/rpc/rpc.cpp: CoroRpcAgent over
// yalantinglibs' coro_rpc and async_simple), compiled instead of it when
// TENT is built from the user's Mooncake (docs/upstream.md).
//
// The engines of one benchmark live in one process, and the RPCs the measured
// path makes (GetSegmentDesc when a peer's segment is first opened) are
// set-up, not the request path. So an agent here is in-process: start() takes
// a port number from a process-wide counter (no socket is opened) and
// publishes the agent under it; call() finds the agent that started on the
// address's port and runs its registered handler on the caller's thread, as
// upstream's server would run it for the request bytes (same request, same
// response). An address no agent started on answers an RPC error, as a
// refused connection would.
#include "tent/rpc/rpc.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

namespace mooncake {
namespace tent {

namespace {
std::mutex agents_mutex;
std::unordered_map<uint16_t, CoroRpcAgent *> agents;
uint16_t next_port = 15000; // upstream's first port (rpc.cpp, kStartPort)

// The port of "host:port" or "[v6]:port"; 0 when there is none.
uint16_t port_of(const std::string &addr)
{
    const auto colon = addr.rfind(':');
    if (colon == std::string::npos || colon + 1 == addr.size())
        return 0;
    char *end = nullptr;
    const unsigned long p = std::strtoul(addr.c_str() + colon + 1, &end, 10);
    return *end == '\0' && p > 0 && p <= 65535 ? (uint16_t)p : 0;
}
} // namespace

CoroRpcAgent::CoroRpcAgent() = default;

CoroRpcAgent::~CoroRpcAgent() { stop(); }

Status CoroRpcAgent::registerFunction(int func_id, const Function &func, bool offload)
{
    std::lock_guard<std::mutex> guard(func_map_mutex_);
    func_map_[func_id] = Handler{func, offload};
    return Status::OK();
}

Status CoroRpcAgent::start(uint16_t &port, bool ipv6, size_t threads)
{
    (void)ipv6, (void)threads;
    if (running_)
        return Status::InvalidArgument("RPC server already started" LOC_MARK);
    std::lock_guard<std::mutex> guard(agents_mutex);
    if (port == 0)
        while (agents.count(next_port))
            next_port++;
    if (port == 0)
        port = next_port++;
    if (!agents.emplace(port, this).second)
        return Status::RpcServiceError("RPC port in use in this process" LOC_MARK);
    running_ = true;
    return Status::OK();
}

Status CoroRpcAgent::stop()
{
    std::lock_guard<std::mutex> guard(agents_mutex);
    for (auto it = agents.begin(); it != agents.end();)
        it = it->second == this ? agents.erase(it) : std::next(it);
    running_ = false;
    return Status::OK();
}

Status CoroRpcAgent::call(const std::string &server_addr, int func_id, const std::string_view &request,
                          std::string &response)
{
    CoroRpcAgent *server = nullptr;
    {
        std::lock_guard<std::mutex> guard(agents_mutex);
        auto it = agents.find(port_of(server_addr));
        if (it != agents.end())
            server = it->second;
    }
    if (!server)
        return Status::RpcServiceError("no RPC server at " + server_addr + LOC_MARK);
    Function fn;
    {
        std::lock_guard<std::mutex> guard(server->func_map_mutex_);
        auto it = server->func_map_.find(func_id);
        if (it == server->func_map_.end())
            return Status::RpcServiceError("RPC function not registered" LOC_MARK);
        fn = it->second.func;
    }
    std::string out;
    fn(request, out);
    response = std::move(out);
    return Status::OK();
}

Status CoroRpcAgent::callOwned(const std::string &server_addr, int func_id, std::string request,
                               std::string &response)
{
    return call(server_addr, func_id, request, response);
}

void CoroRpcAgent::callAsync(const std::string &server_addr, int func_id, const std::string &request,
                             AsyncCallback callback)
{
    std::string response;
    Status status = call(server_addr, func_id, request, response);
    callback(status, std::move(response));
}

} // namespace tent
} // namespace mooncake
