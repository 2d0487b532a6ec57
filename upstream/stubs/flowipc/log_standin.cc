/* Stand-in for Flow's logging (flow/src/flow/log/log.cpp and the
 * thread-local appender), for the Flow-IPC subset built here
 * (docs/upstream.md): the upstream classes as its headers declare them,
 * with a logger that never logs. Upstream asks get_logger()->should_log()
 * on its paths (Pool_arena::allocate, deallocate) and formats nothing when
 * it says no; what would format a line (the thread-local appender, its
 * Boost.Thread storage) is never reached, so it traps. */
#include "flow/log/log.hpp"
#include "flow/log/detail/thread_lcl_str_appender.hpp"

#include "upstream_flowipc_internal.hpp"

// flow/util/util.cpp defines this one destructor, among code that needs
// Boost.Thread's compiled library.
flow::util::Null_interface::~Null_interface() = default;

namespace flow::log
{
// Flow keeps per-thread metadata in Boost.Thread's storage (see the boost
// stand-in below): this object exists, and is never filled.
boost::thread_specific_ptr<Msg_metadata> this_thread_sync_msg_metadata_ptr;

Component::Component() : m_payload_type_or_null(nullptr), m_payload_enum_raw_value() {}
Component::Component(const Component&) = default;
Component::Component(Component&&) = default;
Component& Component::operator=(const Component&) = default;
Component& Component::operator=(Component&&) = default;
bool Component::empty() const { return !m_payload_type_or_null; }
const std::type_info& Component::payload_type() const { return *m_payload_type_or_null; }
Component::enum_raw_t Component::payload_enum_raw_value() const { return m_payload_enum_raw_value; }

Log_context::Log_context(Logger* logger) : m_logger(logger) {}
Log_context::Log_context(const Log_context&) = default;
Log_context::Log_context(Log_context&& src) { operator=(std::move(src)); }
Log_context& Log_context::operator=(const Log_context&) = default;
Log_context& Log_context::operator=(Log_context&& src)
{
  if (&src != this)
  {
    operator=(static_cast<const Log_context&>(src));
    src.m_logger = nullptr;
    src.m_component = {};
  }
  return *this;
}
Logger* Log_context::get_logger() const { return m_logger; }
const Component& Log_context::get_log_component() const { return m_component; }

// Reached only by a line that is formatted: never, with the logger below.
std::ostream* Logger::this_thread_ostream() const { __builtin_trap(); }
void Logger::set_thread_info(std::string*, util::Thread_id*) { __builtin_trap(); }
Thread_local_string_appender* Thread_local_string_appender::get_this_thread_string_appender(const util::Unique_id_holder&)
{
  __builtin_trap();
}
std::ostream* Thread_local_string_appender::fresh_appender_ostream() { __builtin_trap(); }
const std::string& Thread_local_string_appender::target_contents() const { __builtin_trap(); }
} // namespace flow::log

// Boost.Thread's thread-specific storage, which the metadata above is
// declared in: its construction and destruction register nothing.
namespace boost::detail
{
void* get_tss_data(void const*) { return nullptr; }
void set_tss_data(void const*, void (*)(void (*)(void*), void*), void (*)(void*), void*, bool) {}
} // namespace boost::detail

namespace shmb::fipc_upstream
{
bool Never_logger::should_log(flow::log::Sev, const flow::log::Component&) const { return false; }
bool Never_logger::logs_asynchronously() const { return false; }
void Never_logger::do_log(flow::log::Msg_metadata*, flow::util::String_view) { __builtin_trap(); }

Never_logger* never_logger()
{
  static Never_logger logger;
  return &logger;
}
} // namespace shmb::fipc_upstream
