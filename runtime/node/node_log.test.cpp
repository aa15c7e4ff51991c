#include "runtime/node/node_log.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <sstream>

using namespace conclave::node;

TEST(node_log, text_lines_carry_an_iso_utc_timestamp_a_level_and_the_node) {
  std::ostringstream out;
  node_log log{3, log_format::text, &out};
  log.info("became leader, term 4/3");
  log.warn("suspects node 5");
  std::regex line{R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (info|warning) node 3: .*)"};
  std::istringstream in{out.str()};
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_TRUE(std::regex_match(first, line)) << first;
  EXPECT_NE(first.find(" info node 3: became leader, term 4/3"), std::string::npos);
  EXPECT_TRUE(std::regex_match(second, line)) << second;
  EXPECT_NE(second.find(" warning node 3: suspects node 5"), std::string::npos);
}

TEST(node_log, json_lines_are_one_object_each_with_the_message_escaped) {
  std::ostringstream out;
  node_log log{7, log_format::json, &out};
  log.error("cluster 'a\"b' said \\ no");
  auto line = out.str();
  ASSERT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  auto j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << line;
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["node"], 7);
  EXPECT_EQ(j["msg"], "cluster 'a\"b' said \\ no");
  EXPECT_TRUE(std::regex_match(j["time"].get<std::string>(),
                               std::regex{R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)"}));
}

TEST(node_log, formats_parse_by_name) {
  EXPECT_EQ(parse_log_format("json"), log_format::json);
  EXPECT_EQ(parse_log_format("text"), log_format::text);
  EXPECT_FALSE(parse_log_format("xml"));
}

TEST(node_log, the_time_a_text_line_starts_with_is_read_back) {
  auto t = log_line_time_us("2026-11-23T02:41:07.123456Z info node 3: became leader");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, int64_t{1795401667} * 1'000'000 + 123'456);
  for (auto bad : {"", "2026-11-23 02:41:07.123456Z info", "2026-11-23T02:41:07Z info",
                   "2026-11-23T02:41:07.12345xZ info", "garbage garbage garbage garbage"})
    EXPECT_FALSE(log_line_time_us(bad)) << bad;
  // A line the log writes now reads back as now.
  std::ostringstream out;
  {
    node_log log{3, log_format::text, &out};
    log.info("hello");
  }
  auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  auto written = log_line_time_us(out.str());
  ASSERT_TRUE(written) << out.str();
  EXPECT_LE(std::llabs(*written - now), 5'000'000) << out.str();
}
