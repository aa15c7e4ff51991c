// Multi-process behaviour of nodes launched together: elections, kill -9,
// SIGSTOP/SIGCONT, SIGTERM, restart, membership. Loopback only; every test
// brings its cluster down (see process_support.hpp). Bounded: `up` and
// `kill --wait` time out after 20 s / 10 s.
#include "tests/process/process_support.hpp"

using namespace conclave::process_test;
using namespace std::chrono_literals;

TEST_F(cluster_test, three_nodes_elect_one_leader) {
  auto j = up(3);
  EXPECT_EQ(j["leader"], 3); // Bully: the highest id
  auto st = status();
  EXPECT_EQ(leaders(st), 1);
  for (auto& n : st["nodes"]) {
    EXPECT_EQ(n["leader"], st["leader"]);
    EXPECT_TRUE(n["alive"].get<bool>());
    EXPECT_FALSE(n["stopped"].get<bool>());
  }
}

TEST_F(cluster_test, five_nodes_elect_one_leader_with_the_ring_algorithm_too) {
  auto j = up(5, "--algorithm ring");
  EXPECT_EQ(j["leader"], 5);
  EXPECT_EQ(leaders(status()), 1);
}

TEST_F(cluster_test, kill_9_of_the_leader_gives_one_new_leader_with_a_higher_term) {
  auto j = up(5);
  auto old_term = j["term"].get<uint64_t>();
  auto k = kill(5, "KILL");
  EXPECT_EQ(k["leader"], 4);
  EXPECT_GT(k["term"].get<uint64_t>(), old_term);
  auto st = status();
  EXPECT_EQ(leaders(st), 1);
  EXPECT_FALSE(st["nodes"][4]["alive"].get<bool>());
}

TEST_F(cluster_test, ring_kill_9_of_the_leader_gives_one_new_leader_with_a_higher_term) {
  auto j = up(5, "--algorithm ring");
  auto k = kill(5, "KILL");
  EXPECT_EQ(k["leader"], 4);
  EXPECT_GT(k["term"].get<uint64_t>(), j["term"].get<uint64_t>());
  EXPECT_EQ(leaders(status()), 1);
}

TEST_F(cluster_test, a_stopped_leader_is_replaced_and_steps_down_after_sigcont) {
  auto j = up(3);
  auto k = kill(3, "STOP");
  EXPECT_EQ(k["leader"], 2);
  auto new_term = k["term"].get<uint64_t>();
  EXPECT_GT(new_term, j["term"].get<uint64_t>());
  auto st = status();
  EXPECT_TRUE(st["nodes"][2]["stopped"].get<bool>());
  EXPECT_FALSE(st["nodes"][2]["alive"].get<bool>());
  std::this_thread::sleep_for(1500ms); // longer than the link timeout (1 s)
  auto c = kill(3, "CONT");
  // The old leader sees the higher term and follows: no second election.
  EXPECT_EQ(c["leader"], 2);
  EXPECT_EQ(c["term"].get<uint64_t>(), new_term);
  std::this_thread::sleep_for(500ms);
  st = status();
  EXPECT_EQ(st["leader"], 2);
  EXPECT_EQ(st["term"].get<uint64_t>(), new_term);
  EXPECT_EQ(leaders(st), 1);
}

TEST_F(cluster_test, sigterm_makes_the_leader_resign_and_exit_cleanly) {
  up(3);
  auto k = kill(3, "TERM");
  EXPECT_EQ(k["leader"], 2);
  // The resignation hands over without waiting for detection.
  EXPECT_LT(k["failover_ms"].get<double>(), 1000.0) << k;
  for (int i = 0; i < 300 && status()["nodes"][2]["running"].get<bool>(); ++i)
    std::this_thread::sleep_for(10ms);
  auto log = read_file(dir / "node-3" / "node.log");
  EXPECT_NE(log.find("received SIGTERM"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped"), std::string::npos) << log;
  auto last = nlohmann::json::parse(read_file(dir / "node-3" / "status.json"));
  EXPECT_FALSE(last["running"].get<bool>());
}

TEST_F(cluster_test, a_restarted_node_rejoins_without_deposing_the_leader) {
  up(3);
  auto k = kill(3, "KILL");
  ASSERT_EQ(k["leader"], 2);
  auto term = k["term"].get<uint64_t>();
  auto r = run_conclave("cluster restart --dir " + dir.string() + " --node 3");
  EXPECT_EQ(r.status, 0) << r.out;
  std::this_thread::sleep_for(500ms);
  auto st = status();
  EXPECT_EQ(st["leader"], 2); // preempt is off: node 3 follows
  EXPECT_EQ(st["term"].get<uint64_t>(), term);
  EXPECT_TRUE(st["nodes"][2]["alive"].get<bool>());
  EXPECT_EQ(st["nodes"][2]["leader"], 2);
}

TEST_F(cluster_test, a_node_of_another_cluster_is_refused_and_counted) {
  auto j = up(2);
  auto node2 = j["nodes"][1]["address"].get<std::string>();
  auto metrics2 = j["nodes"][1]["metrics_url"].get<std::string>();
  // An intruder: claims id 1 of cluster "other" and dials node 2.
  std::string cmd = std::string{CONCLAVE_BIN}
                    + " node --id 1 --cluster other --listen 127.0.0.1:"
                    + std::to_string(free_port()) + " --peers 2@" + node2 + " > "
                    + (dir / "intruder.log").string() + " 2>&1 & echo $!";
  FILE* p = ::popen(cmd.c_str(), "r");
  int pid = 0;
  ASSERT_EQ(std::fscanf(p, "%d", &pid), 1);
  ::pclose(p);
  std::string metrics;
  for (int i = 0; i < 200; ++i) {
    auto host_port = metrics2.substr(7, metrics2.find("/metrics") - 7);
    metrics = http_get(host_port, "/metrics");
    if (metrics.find("conclave_rejected_messages_total{reason=\"wrong_cluster\"} 0")
            == std::string::npos
        && metrics.find("reason=\"wrong_cluster\"") != std::string::npos)
      break;
    std::this_thread::sleep_for(20ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(metrics.find("conclave_rejected_messages_total{reason=\"wrong_cluster\"} 0"),
            std::string::npos)
      << metrics;
  EXPECT_NE(read_file(dir / "node-2" / "node.log").find("wrong_cluster"),
            std::string::npos);
  EXPECT_EQ(status()["leader"], 2); // the intruder changed nothing
}

TEST_F(cluster_test, every_node_serves_its_metrics_and_one_is_leader) {
  auto j = up(3);
  int leaders = 0;
  for (auto& n : j["nodes"]) {
    auto url = n["metrics_url"].get<std::string>();
    auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
    for (auto name : {"conclave_is_leader", "conclave_term", "conclave_elections_total",
                      "conclave_election_duration_seconds_bucket",
                      "conclave_messages_sent_total", "conclave_messages_received_total",
                      "conclave_peer_up", "conclave_heartbeat_rtt_seconds",
                      "conclave_detector_phi", "conclave_leader_changes_total",
                      "conclave_rejected_messages_total", "conclave_build_info"})
      EXPECT_NE(body.find(name), std::string::npos) << name << " missing on " << url;
    if (body.find("\nconclave_is_leader 1") != std::string::npos)
      ++leaders;
  }
  EXPECT_EQ(leaders, 1);
}
