#include "runtime/node/node_log.hpp"

#include <nlohmann/json.hpp>

#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace conclave::node {

std::optional<log_format> parse_log_format(std::string_view text) {
  if (text == "text")
    return log_format::text;
  if (text == "json")
    return log_format::json;
  return std::nullopt;
}

node_log::node_log(uint64_t node, log_format format, std::ostream* out)
    : format_(format) {
  spdlog::sink_ptr sink;
  if (out != nullptr)
    sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*out, true);
  else
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  logger_ = std::make_shared<spdlog::logger>("node", std::move(sink));
  auto id = std::to_string(node);
  // %l is spdlog's level name (info, warning, error); %v the message, which
  // write() has already made a JSON string in json format.
  auto pattern = format == log_format::json
                     ? R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","node":)" + id
                           + R"(,"msg":%v})"
                     : "%Y-%m-%dT%H:%M:%S.%fZ %l node " + id + ": %v";
  logger_->set_pattern(pattern, spdlog::pattern_time_type::utc);
  logger_->set_level(spdlog::level::info);
  logger_->flush_on(spdlog::level::info);
}

node_log::~node_log() = default;

void node_log::info(std::string_view message) const {
  write(spdlog::level::info, message);
}

void node_log::warn(std::string_view message) const {
  write(spdlog::level::warn, message);
}

void node_log::error(std::string_view message) const {
  write(spdlog::level::err, message);
}

void node_log::write(int level, std::string_view message) const {
  auto lvl = static_cast<spdlog::level::level_enum>(level);
  if (format_ == log_format::json)
    logger_->log(lvl, "{}", nlohmann::json(std::string{message}).dump());
  else
    logger_->log(lvl, "{}", message);
}

} // namespace conclave::node
