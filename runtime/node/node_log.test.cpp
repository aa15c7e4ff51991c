#include "runtime/node/node_log.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

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
