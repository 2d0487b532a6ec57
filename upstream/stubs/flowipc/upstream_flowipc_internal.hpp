/* The stand-in logger the Flow-IPC subset is given (log_standin.cc). */
#ifndef SHMB_UPSTREAM_FLOWIPC_INTERNAL_HPP
#define SHMB_UPSTREAM_FLOWIPC_INTERNAL_HPP

#include "flow/log/log.hpp"

namespace shmb::fipc_upstream
{
/* A Flow Logger whose should_log() is always false: upstream's checks run,
 * no line is formatted. */
class Never_logger : public flow::log::Logger
{
public:
  bool should_log(flow::log::Sev sev, const flow::log::Component& component) const override;
  bool logs_asynchronously() const override;
  void do_log(flow::log::Msg_metadata* metadata, flow::util::String_view msg) override;
};

/* The one instance, for every upstream object made here. */
Never_logger* never_logger();
} // namespace shmb::fipc_upstream

#endif
