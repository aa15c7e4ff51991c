// Multi-process behaviour of nodes launched together: elections, kill -9,
// SIGSTOP/SIGCONT, SIGTERM, restart, membership. Loopback only; every test
// brings its cluster down (see process_support.hpp). Bounded: `up` and
// `kill --wait` time out after 20 s / 10 s.
#include "tests/process/process_support.hpp"

#include <csignal>
#include <numeric>
#include <sstream>
#include <thread>

using namespace conclave::process_test;
using namespace std::chrono_literals;

TEST_F(cluster_test, three_nodes_elect_one_leader) {
  auto j = up(3);
  EXPECT_EQ(j["leader"], 3); // Bully: the highest id
  auto st = status();
  EXPECT_EQ(leaders(st), 1);
  for (auto& n : st["nodes"]) {
    EXPECT_EQ(n["leader"], st["leader"]);
    EXPECT_EQ(n["term"], st["term"]);
    EXPECT_EQ(n["term_leader"], 3);
    EXPECT_TRUE(n["alive"].get<bool>());
    EXPECT_FALSE(n["stopped"].get<bool>());
  }
  // The text form shows the whole term, EPOCH/LEADER.
  auto text = run_conclave("cluster status --dir " + dir.string());
  auto term = std::to_string(st["term"].get<uint64_t>()) + "/3";
  EXPECT_NE(text.out.find("leader 3 (term " + term + ")"), std::string::npos) << text.out;
  // A health check: no live node, no leader, exit 1.
  auto dn = run_conclave("cluster down --json --dir " + dir.string());
  EXPECT_EQ(dn.status, 0);
  auto dj = nlohmann::json::parse(dn.out, nullptr, false);
  ASSERT_TRUE(dj.is_object()) << dn.out;
  EXPECT_EQ(dj["stopped"], 3);
  EXPECT_EQ(dj["dir"], dir.string());
  auto down = status(1);
  EXPECT_TRUE(down["leader"].is_null());
}

TEST_F(cluster_test, five_nodes_elect_one_leader_with_the_ring_algorithm_too) {
  auto j = up(5, "--algorithm ring");
  // Classic Ring elects the highest id among the members whose candidates
  // answer: under TLS a slow join can leave node 5 out of the start-up round,
  // and without --preempt it then follows node 4 (docs/design/node.md, known
  // problems). What must hold: one leader, agreed by every live node.
  auto leader = j["leader"].get<uint64_t>();
  EXPECT_GE(leader, 1u);
  EXPECT_LE(leader, 5u);
  auto st = status();
  EXPECT_EQ(st["leader"], leader);
  EXPECT_EQ(leaders(st), 1);
}

namespace {

/// `cluster status --json` once the live nodes agree, polled for at most
/// `bound`. Right after a failover, a node whose link to the new leader has
/// not come up yet may still be electing: over TLS, CAF 0.17.6 closes a new
/// outgoing connection whose handshake is still under way at the middleman's
/// next heartbeat tick (docs/design/caf-0.17.md), so under CPU load a link
/// can take a second or more to come up.
nlohmann::json agreed_status(const std::filesystem::path& dir,
                             std::chrono::milliseconds bound = 5000ms) {
  auto end = std::chrono::steady_clock::now() + bound;
  for (;;) {
    auto r = run_conclave("cluster status --json --dir " + dir.string());
    if (r.status == 0 || std::chrono::steady_clock::now() >= end) {
      EXPECT_EQ(r.status, 0) << r.out;
      return nlohmann::json::parse(r.out);
    }
    std::this_thread::sleep_for(50ms);
  }
}

} // namespace

TEST_F(cluster_test, kill_9_of_the_leader_gives_one_new_leader_with_a_higher_term) {
  auto j = up(5);
  auto old_term = j["term"].get<uint64_t>();
  // Kill whoever leads: a slow TLS join can keep nodes 4 and 5 out of the
  // start-up election (docs/design/node.md, known problems).
  auto old_leader = j["leader"].get<uint64_t>();
  auto k = kill(old_leader, "KILL");
  auto leader = k["leader"].get<uint64_t>();
  // Bully elects the highest id it can reach: the highest live one once every
  // link is up, a lower one when a link is still coming up under load.
  EXPECT_NE(leader, old_leader);
  EXPECT_GE(leader, 1u);
  EXPECT_LE(leader, 5u);
  EXPECT_GT(k["term"].get<uint64_t>(), old_term);
  // --wait returned once `status` agreed; the agreement holds: same leader,
  // same term (at once when idle; a node still linking may rejoin a moment
  // later, but no new term is started).
  auto st = agreed_status(dir);
  EXPECT_EQ(st["leader"], leader);
  EXPECT_EQ(st["term"], k["term"]);
  EXPECT_EQ(leaders(st), 1);
  EXPECT_FALSE(st["nodes"][old_leader - 1]["alive"].get<bool>());
  down_and_check_replicas();
}

TEST_F(cluster_test, ring_kill_9_of_the_leader_gives_one_new_leader_with_a_higher_term) {
  auto j = up(5, "--algorithm ring");
  // Kill whoever leads: with TLS, slow joins sometimes let node 4 win the
  // start-up election before node 5's candidate runs (a start-up race the
  // elect test below shows; docs/design/node.md, known problems).
  auto old_leader = j["leader"].get<uint64_t>();
  auto k = kill(old_leader, "KILL");
  // Classic Ring elects the highest id on the ring it can reach (see above).
  EXPECT_NE(k["leader"], old_leader);
  EXPECT_GT(k["term"].get<uint64_t>(), j["term"].get<uint64_t>());
  auto st = agreed_status(dir);
  EXPECT_EQ(st["leader"], k["leader"]);
  EXPECT_EQ(leaders(st), 1);
  down_and_check_replicas();
}

/// Number of nodes shown acting as leader (quorum guard: inside their lease).
int acting(const nlohmann::json& st) {
  int n = 0;
  for (auto& node : st["nodes"])
    n += node["acting"].get<bool>() ? 1 : 0;
  return n;
}

TEST_F(cluster_test, a_follower_stopped_past_the_link_timeout_rejoins_every_time) {
  // Node 1 frozen for longer than the link timeout (1 s): its peers close
  // their links to it, and their workflows' store clients dial it again. CAF
  // then kept node 1's proxies of a peer alive over that client connection,
  // so node 1 believed it was still linked while the peer had unlinked it and
  // sent it no heartbeats: node 1 showed no leader until the next fault (5 of
  // 15 rounds here). Node 1's connector now asks each gate whether it still
  // holds the link, and links again when it does not.
  up(3);
  auto pid1 = status()["nodes"][0]["pid"].get<int>();
  for (int round = 0; round < 6; ++round) {
    ASSERT_EQ(::kill(pid1, SIGSTOP), 0);
    std::this_thread::sleep_for(1100ms);
    ASSERT_EQ(::kill(pid1, SIGCONT), 0);
    // Until node 1 has read what piled up, the status files still show the
    // agreement from before the pause: let the links' ends arrive first.
    std::this_thread::sleep_for(1500ms);
    auto st = agreed_status(dir, 3000ms);
    EXPECT_EQ(leaders(st), 1) << "round " << round;
    EXPECT_EQ(st["nodes"][0]["leader"], st["leader"]) << "round " << round;
  }
  down_and_check_replicas();
}

TEST_F(cluster_test, a_stopped_leader_is_replaced_and_steps_down_after_sigcont) {
  // Plaintext: over TLS, the resumed node's redials often fail at once
  // (connection_timeout), it suspects the leader and, without pre-vote, deposes
  // it with a higher term (docs/design/node.md, known problems).
  up(3, "--insecure");
  // Whoever leads once the start-up election has settled (node 3 unless a
  // start-up race under load handed leadership to node 2).
  auto old = settled_leader();
  ASSERT_GE(old, 1u);
  auto at = old - 1;
  // The quorum guard is on by default: exactly one node acts, the leader.
  auto first = status();
  EXPECT_EQ(acting(first), 1) << first.dump(2);
  EXPECT_TRUE(first["nodes"][at]["acting"].get<bool>());
  auto k = kill(old, "STOP");
  auto next = k["leader"].get<uint64_t>();
  EXPECT_NE(next, old) << k;
  auto new_term = k["term"].get<uint64_t>();
  EXPECT_GT(new_term, first["term"].get<uint64_t>());
  auto st = status();
  EXPECT_TRUE(st["nodes"][at]["stopped"].get<bool>());
  EXPECT_FALSE(st["nodes"][at]["alive"].get<bool>());
  // The frozen node's stale view (it still believes it leads) is not shown.
  EXPECT_FALSE(st["nodes"][at]["is_leader"].get<bool>());
  EXPECT_TRUE(st["nodes"][at]["leader"].is_null());
  EXPECT_EQ(leaders(st), 1);
  auto text = run_conclave("cluster status --dir " + dir.string()).out;
  size_t rows = 0;
  for (auto at = text.find("LEADER"); at != std::string::npos;
       at = text.find("LEADER", at + 1))
    ++rows;
  EXPECT_EQ(rows, 1u) << text;
  std::this_thread::sleep_for(1500ms); // longer than the link timeout (1 s)
  auto c = kill(old, "CONT");
  // The old leader sees the higher term and follows. (With the guard, the
  // majority may need a second election while node 3 was frozen — the guard's
  // liveness is being fixed in protocols/election — so the term is not pinned.)
  EXPECT_EQ(c["leader"], next);
  EXPECT_GE(c["term"].get<uint64_t>(), new_term);
  std::this_thread::sleep_for(500ms);
  st = status();
  EXPECT_EQ(st["leader"], next);
  EXPECT_EQ(leaders(st), 1);
  EXPECT_EQ(acting(st), 1) << st.dump(2);
  EXPECT_TRUE(st["nodes"][next - 1]["acting"].get<bool>());
  // The resumed node found its lease expired and stopped acting before (or as)
  // it learnt of the higher term: its log says so first.
  auto log = read_file(dir / ("node-" + std::to_string(old)) / "node.log");
  // (The last of each: a start-up race may have logged both once before.)
  auto stopped = log.rfind("stopped acting as leader");
  auto follows = log.rfind("following node " + std::to_string(next));
  ASSERT_NE(stopped, std::string::npos) << log;
  ASSERT_NE(follows, std::string::npos) << log;
  EXPECT_LT(stopped, follows) << log;
  auto metrics =
      http_get(st["nodes"][at]["metrics_url"].get<std::string>().substr(7), "/metrics");
  EXPECT_EQ(sample(metrics, "conclave_acting"), 0.0) << metrics;
  down_and_check_replicas();
}

TEST_F(cluster_test, sigterm_makes_the_leader_resign_and_exit_cleanly) {
  up(3, "--log-format json");
  // Whoever leads once the start-up election has settled (node 3 unless a
  // start-up race under load handed leadership to node 2).
  auto old = settled_leader();
  ASSERT_GE(old, 1u);
  auto node = "node-" + std::to_string(old);
  auto k = kill(old, "TERM");
  EXPECT_EQ(k["old_leader"], old) << k;
  EXPECT_NE(k["leader"], old) << k;
  // The resignation hands over without waiting for detection.
  ASSERT_TRUE(k["failover_ms"].is_number()) << k;
  EXPECT_LT(k["failover_ms"].get<double>(), 1000.0) << k;
  for (int i = 0; i < 300 && status()["nodes"][old - 1]["running"].get<bool>(); ++i)
    std::this_thread::sleep_for(10ms);
  auto log = read_file(dir / node / "node.log");
  EXPECT_NE(log.find("received SIGTERM"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped"), std::string::npos) << log;
  // --log-format json: every line of the node's is one JSON object, and the
  // leader never said it follows itself.
  std::istringstream lines{log};
  std::string line;
  size_t records = 0;
  bool became_leader = false;
  auto self = "following node " + std::to_string(old);
  while (std::getline(lines, line)) {
    if (line.rfind("---", 0) == 0)
      continue; // the launcher's marker
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    EXPECT_EQ(j["node"], old) << line;
    auto msg = j["msg"].get<std::string>();
    EXPECT_EQ(msg.find(self), std::string::npos) << line;
    became_leader = became_leader || msg.rfind("became leader, term ", 0) == 0;
    ++records;
  }
  EXPECT_GE(records, 4u) << log;
  EXPECT_TRUE(became_leader) << log;
  auto last = nlohmann::json::parse(read_file(dir / node / "status.json"));
  EXPECT_FALSE(last["running"].get<bool>());
}

TEST_F(cluster_test, a_restarted_node_rejoins_without_deposing_the_leader) {
  up(3);
  auto k = kill(3, "KILL");
  ASSERT_EQ(k["leader"], 2);
  auto term = k["term"].get<uint64_t>();
  auto r = run_conclave("cluster restart --json --dir " + dir.string() + " --node 3");
  ASSERT_EQ(r.status, 0) << r.out;
  auto rj = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(rj.is_object()) << r.out;
  EXPECT_EQ(rj["node"], 3);
  EXPECT_EQ(rj["leader"], 2);
  EXPECT_GT(rj["pid"].get<int>(), 0);
  // Proof that it rejoined: the restarted node itself reports the leader.
  nlohmann::json st;
  ASSERT_TRUE(eventually(
      [&] {
        st = status();
        return st["nodes"][2]["leader"] == 2;
      },
      10s))
      << st;
  std::this_thread::sleep_for(300ms); // and stays a follower
  st = status();
  EXPECT_EQ(st["leader"], 2); // preempt is off: node 3 follows
  EXPECT_EQ(st["term"].get<uint64_t>(), term);
  EXPECT_TRUE(st["nodes"][2]["alive"].get<bool>());
  EXPECT_EQ(st["nodes"][2]["leader"], 2);
  down_and_check_replicas();
}

TEST_F(cluster_test, a_node_of_another_cluster_is_refused_and_counted) {
  // Plaintext, so the intruder gets as far as the membership handshake (over
  // TLS its handshake fails first: security_process.test.cpp).
  auto j = up(2, "--insecure");
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

TEST_F(cluster_test, every_node_serves_metrics_whose_values_agree_with_the_cluster) {
  auto j = up(3);
  auto term = j["term"].get<double>();
  double leaders = 0;
  for (auto& n : j["nodes"]) {
    auto url = n["metrics_url"].get<std::string>();
    // Once the first heartbeat has gone out (the leader's) or come in (a
    // follower's), at most one heartbeat interval after `up` returned.
    auto type = n["id"] == 3 ? "conclave_messages_sent_total{type=\"heartbeat\"}"
                             : "conclave_messages_received_total{type=\"heartbeat\"}";
    std::string body;
    EXPECT_TRUE(eventually(
        [&] {
          body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
          return sample(body, type).value_or(0) > 0;
        },
        5s))
        << url << "\n"
        << body;
    auto is_leader = sample(body, "conclave_is_leader");
    ASSERT_TRUE(is_leader) << body;
    leaders += *is_leader;
    // Every node names the same whole term (epoch and leader).
    EXPECT_EQ(sample(body, "conclave_term"), term) << url;
    EXPECT_EQ(sample(body, "conclave_term_leader"), 3.0) << url;
    // Both links up.
    auto links_up = samples(body, "conclave_peer_up{");
    EXPECT_EQ(links_up.size(), 2u) << url;
    EXPECT_EQ(std::accumulate(links_up.begin(), links_up.end(), 0.0), 2.0) << url;
    EXPECT_EQ(samples(body, "conclave_build_info{"), std::vector<double>{1.0}) << body;
    // Series of a failover exist before the first failover (increase() sees it).
    EXPECT_EQ(sample(body, "conclave_elections_total{algorithm=\"bully\",reason=\"leader_"
                           "down\"}"),
              0.0)
        << body;
  }
  EXPECT_EQ(leaders, 1.0);
}

TEST_F(cluster_test, a_pid_file_that_cannot_be_written_fails_up_and_leaves_no_node) {
  // node.pid is a directory: the rename onto it fails (even for root). Without
  // the pid file nothing could stop the node later, so `up` must not leave it.
  std::filesystem::create_directories(dir / "node-1" / "node.pid" / "in-the-way");
  auto r =
      run_conclave("cluster up --nodes 1 --timeout-ms 5000 --dir " + dir.string(), true);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("node.pid"), std::string::npos) << r.out;
  size_t running = 0;
  for (auto& p : std::filesystem::directory_iterator{"/proc"}) {
    auto cmd = read_file(p.path() / "cmdline");
    if (cmd.find((dir / "node-1" / "config.ini").string()) != std::string::npos)
      ++running;
  }
  EXPECT_EQ(running, 0u);
}

namespace {

/// Field 19 of /proc/PID/task/TID/stat: the thread's nice value.
int thread_nice(int pid, const std::string& tid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/task/" + tid + "/stat"};
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  auto end = stat.rfind(')'); // the name may hold spaces
  std::istringstream rest{stat.substr(end + 2)};
  std::string field;
  for (int i = 3; i <= 19 && rest >> field; ++i)
    ;
  return std::stoi(field);
}

} // namespace

TEST_F(cluster_test, nice_gives_every_node_thread_and_session_that_priority) {
  auto bad = run_conclave("cluster up --nodes 3 --nice 20 --dir " + dir.string(), true);
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--nice: expected -20..19, got 20"), std::string::npos)
      << bad.out;
  up(3, "--insecure --nice -5");
  auto st = status();
  bool root = ::geteuid() == 0;
  for (auto& n : st["nodes"]) {
    auto id = n["id"].get<uint64_t>();
    auto log = read_file(dir / ("node-" + std::to_string(id)) / "node.log");
    if (!root) { // refused without the privilege: one warning, and it runs
      EXPECT_NE(log.find("could not set nice -5"), std::string::npos) << log;
      continue;
    }
    EXPECT_NE(log.find("threads run at nice -5, and so does its session's autogroup"),
              std::string::npos)
        << log;
    auto pid = n["pid"].get<int>();
    size_t threads = 0;
    for (auto& t :
         std::filesystem::directory_iterator{"/proc/" + std::to_string(pid) + "/task"}) {
      EXPECT_EQ(thread_nice(pid, t.path().filename().string()), -5)
          << "node " << id << " thread " << t.path().filename();
      ++threads;
    }
    EXPECT_GT(threads, 3u);
    auto group = read_file("/proc/" + std::to_string(pid) + "/autogroup");
    std::ifstream on{"/proc/sys/kernel/sched_autogroup_enabled"};
    int enabled = 0;
    if (on >> enabled && enabled != 0)
      EXPECT_NE(group.find("nice -5"), std::string::npos) << group;
  }
  EXPECT_EQ(leaders(st), 1);
}

// The guard every cluster_test starts (process_support.hpp): told "done", it
// leaves the cluster alone; its pipe closed without that, as when CTest kills
// the test process, it brings the cluster down.
TEST_F(cluster_test, a_guard_brings_the_cluster_down_only_when_its_test_is_gone) {
  up(2);
  std::vector<pid_t> pids;
  for (int n = 1; n <= 2; ++n) {
    std::ifstream in{dir / ("node-" + std::to_string(n)) / "node.pid"};
    pid_t p = 0;
    in >> p;
    ASSERT_GT(p, 0) << n;
    pids.push_back(p);
  }
  auto alive = [&] {
    return std::count_if(pids.begin(), pids.end(),
                         [](pid_t p) { return ::kill(p, 0) == 0; });
  };

  auto calm = start_cluster_guard(dir);
  ASSERT_GE(calm.fd, 0);
  ASSERT_EQ(::write(calm.fd, "d", 1), 1);
  ::close(calm.fd);
  int st = -1;
  ASSERT_EQ(::waitpid(calm.pid, &st, 0), calm.pid);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  EXPECT_EQ(alive(), 2);

  auto orphaned = start_cluster_guard(dir);
  ASSERT_GE(orphaned.fd, 0);
  ::close(orphaned.fd); // what the kernel does when the test process dies
  ASSERT_EQ(::waitpid(orphaned.pid, &st, 0), orphaned.pid);
  EXPECT_TRUE(eventually([&] { return alive() == 0; }, 10s)) << alive() << " still alive";
  EXPECT_TRUE(status(1)["leader"].is_null());
}
