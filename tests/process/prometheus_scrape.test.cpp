// Integration with Debian's `prometheus` server (installed by scripts/setup.sh):
// it discovers a 3-node cluster through DIR/prometheus-targets.json (as in
// examples/prometheus/prometheus.yml), scrapes it, and its HTTP API must show
// conclave_is_leader summing to 1. The server runs on loopback with its data in
// the test's directory and is stopped by its pid.
#include "tests/process/process_support.hpp"

#include <cctype>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sstream>
#include <vector>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

std::string find_prometheus() {
  for (auto p : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"})
    if (::access(p, X_OK) == 0)
      return p;
  return {};
}

std::string url_encode(const std::string& text) {
  std::string out;
  char hex[4];
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

/// The server's verdict on a query: "" if it evaluated it, else its error.
std::string query_error(const std::string& api, const std::string& query) {
  auto body = http_get(api, "/api/v1/query?query=" + url_encode(query));
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded())
    return "no JSON answer: " + body;
  if (j.value("status", "") != "success")
    return j.value("error", body);
  return {};
}

/// Every line of every ```promql block in docs/reference/metrics.md.
std::vector<std::string> documented_queries() {
  std::vector<std::string> queries;
  std::istringstream in{
      read_file(std::string{CONCLAVE_SOURCE_DIR} + "/docs/reference/metrics.md")};
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0)
      inside = !inside && line == "```promql";
    else if (inside && !line.empty())
      queries.push_back(line);
  }
  return queries;
}

/// Every panel query of the Grafana dashboard, with $cluster as ".*".
std::vector<std::string> dashboard_queries() {
  std::vector<std::string> queries;
  auto j = nlohmann::json::parse(read_file(
      std::string{CONCLAVE_SOURCE_DIR} + "/examples/prometheus/grafana-dashboard.json"));
  for (auto& panel : j.value("panels", nlohmann::json::array()))
    for (auto& target : panel.value("targets", nlohmann::json::array())) {
      auto q = target.value("expr", "");
      for (auto at = q.find("$cluster"); at != std::string::npos; at = q.find("$cluster"))
        q.replace(at, 8, ".*");
      if (!q.empty())
        queries.push_back(q);
    }
  return queries;
}

/// The first value of an instant-vector query result, or "" if none.
std::string query_value(const std::string& api, const std::string& escaped_query) {
  auto body = http_get(api, "/api/v1/query?query=" + escaped_query);
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success")
    return {};
  auto& result = j["data"]["result"];
  if (!result.is_array() || result.empty())
    return {};
  return result[0]["value"][1].get<std::string>();
}

} // namespace

TEST_F(cluster_test, prometheus_scrapes_the_cluster_and_sees_exactly_one_leader) {
  auto bin = find_prometheus();
  if (bin.empty())
    GTEST_SKIP() << "Debian's prometheus is not installed (scripts/setup.sh installs it)";
  up(3);
  auto port = free_port();
  auto api = "127.0.0.1:" + std::to_string(port);
  std::ofstream{dir / "prometheus.yml"}
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: conclave\n    file_sd_configs:\n"
      << "      - files: ['" << (dir / "prometheus-targets.json").string() << "']\n"
      << "        refresh_interval: 1s\n";
  std::string config = "--config.file=" + (dir / "prometheus.yml").string();
  std::string data = "--storage.tsdb.path=" + (dir / "prometheus-data").string();
  std::string listen = "--web.listen-address=" + api;
  std::string log = (dir / "prometheus.log").string();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(bin.c_str(), "prometheus", config.c_str(), data.c_str(), listen.c_str(),
            "--log.level=warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Stop the server by its pid however the test ends.
  struct stop_server {
    pid_t pid;
    ~stop_server() {
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 500; ++i) {
        if (::waitpid(pid, nullptr, WNOHANG) == pid)
          return;
        std::this_thread::sleep_for(10ms);
      }
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } guard{pid};

  std::string targets_up, leaders;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    targets_up = query_value(api, "sum%28up%7Bjob%3D%22conclave%22%7D%29");
    leaders = query_value(api, "sum%28conclave_is_leader%29");
    if (targets_up == "3" && leaders == "1")
      break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(targets_up, "3") << read_file(log);
  EXPECT_EQ(leaders, "1") << read_file(log);

  // Every query users are told to run must be one the server accepts.
  auto docs = documented_queries();
  auto panels = dashboard_queries();
  EXPECT_GE(docs.size(), 5u);
  EXPECT_GE(panels.size(), 10u);
  for (auto& q : docs)
    EXPECT_EQ(query_error(api, q), "") << "docs/reference/metrics.md: " << q;
  for (auto& q : panels)
    EXPECT_EQ(query_error(api, q), "") << "grafana-dashboard.json: " << q;
  // The test can fail: the query the docs used to give is rejected.
  EXPECT_NE(query_error(api, "changes(max(conclave_term)[5m])"), "");
  // Every node knows the same whole term.
  EXPECT_EQ(query_value(api, url_encode("count(count_values(\"epoch\", conclave_term))")),
            "1");
  EXPECT_EQ(query_value(api, url_encode("count(count_values(\"leader\", "
                                        "conclave_term_leader))")),
            "1");
}
