#include "runtime/node/node_log.hpp"

#include <cstdio>
#include <ctime>
#include <string>

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

std::optional<int64_t> log_line_time_us(std::string_view line) {
  if (line.size() < 27 || line[10] != 'T' || line[19] != '.' || line[26] != 'Z')
    return std::nullopt;
  for (size_t i :
       {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22, 23, 24, 25})
    if (line[i] < '0' || line[i] > '9')
      return std::nullopt;
  if (line[4] != '-' || line[7] != '-' || line[13] != ':' || line[16] != ':')
    return std::nullopt;
  std::string head{line.substr(0, 27)};
  std::tm tm{};
  int us = 0;
  if (std::sscanf(head.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%6d", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us)
      != 7)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1'000'000 + us;
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
