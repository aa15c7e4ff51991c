// A node's log: one line per event on stderr through spdlog, with an ISO 8601
// UTC timestamp (microseconds), a level and the node id; as text for people or
// as one JSON object per line for log shippers (`--log-format json`):
//
//   2026-11-23T02:41:07.123456Z info node 3: became leader, term 4/3
//   {"time":"2026-11-23T02:41:07.123456Z","level":"info","node":3,"msg":"became leader,
//   term 4/3"}
//
// spdlog stays out of this header (compile time): only node_log.cpp includes it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

namespace spdlog {
class logger;
}

namespace conclave::node {

enum class log_format { text, json };

/// "text" or "json".
std::optional<log_format> parse_log_format(std::string_view text);

/// The time a text log line starts with (YYYY-MM-DDTHH:MM:SS.ffffffZ), in
/// microseconds since the Unix epoch; nothing if the line does not start so.
/// For tools and tests that measure from a node's own log.
std::optional<int64_t> log_line_time_us(std::string_view line);

class node_log {
public:
  /// Logs to `out` if given (tests), else to stderr. Every line is flushed.
  node_log(uint64_t node, log_format format, std::ostream* out = nullptr);
  ~node_log();

  void info(std::string_view message) const;
  void warn(std::string_view message) const;
  void error(std::string_view message) const;

private:
  void write(int level, std::string_view message) const;

  log_format format_;
  std::shared_ptr<spdlog::logger> logger_;
};

} // namespace conclave::node
