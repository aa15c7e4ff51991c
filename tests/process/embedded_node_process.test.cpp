// A program that embeds a node (examples/embedded_node, built against
// conclave/node.hpp only), run as a 3-node cluster by `conclave cluster up
// --program`: its leader task runs only while it leads, a kill -9 of the
// leader moves the task to another copy with a higher term, and no two
// copies' tasks ever run at once (judged from the copies' logs, one clock);
// each leader submits a job through the embedded API that some copy's
// agent kind ("greet") runs.
// Loopback only; the cluster is brought down however the test ends.
#include "tests/process/process_support.hpp"

#include <map>
#include <regex>
#include <vector>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

/// One run of a leader task, as a copy's log shows it: the first "leading in
/// term T" line to its "stopped leading in term T" line (or, for a copy that
/// was killed, its last "leading" line).
struct task_run {
  uint64_t node = 0;
  uint64_t epoch = 0;
  uint64_t leader = 0;
  std::string from; ///< ISO 8601 UTC, fixed width: compares as text
  std::string to;
  bool stopped = false;
};

std::vector<task_run> task_runs(uint64_t node, const std::string& log) {
  static const std::regex line_re{
      R"(^(\S+Z) info node \d+: (leading|stopped leading) in term (\d+)/(\d+)$)"};
  std::vector<task_run> runs;
  std::istringstream in{log};
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re))
      continue;
    auto epoch = std::stoull(m[3]);
    auto leader = std::stoull(m[4]);
    if (runs.empty() || runs.back().stopped || runs.back().epoch != epoch
        || runs.back().leader != leader)
      runs.push_back({node, epoch, leader, m[1], m[1], false});
    runs.back().to = m[1];
    runs.back().stopped = m[2] == "stopped leading";
  }
  return runs;
}

class embedded_node_cluster : public cluster_test {
protected:
  std::string log_of(uint64_t id) {
    return read_file(dir / ("node-" + std::to_string(id)) / "node.log");
  }

  bool logs(uint64_t id, const std::string& text, std::chrono::milliseconds limit) {
    return eventually([&] { return log_of(id).find(text) != std::string::npos; }, limit);
  }
};

TEST(embedded_node_program, bad_flags_are_one_line_and_exit_status_2) {
  auto r = conclave::testing::run_command(std::string{EMBEDDED_NODE_BIN}
                                          + " --id 1 --no-such-flag 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("embedded_node: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--no-such-flag"), std::string::npos) << r.out;
  // Validation is `conclave node`'s: a node always names its group.
  r = conclave::testing::run_command(std::string{EMBEDDED_NODE_BIN}
                                     + " --id 1 --listen 127.0.0.1:7001 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--peers"), std::string::npos) << r.out;
  // The same environment variables as `conclave node`.
  r = conclave::testing::run_command("CONCLAVE_NODE_ALGORITHM=paxos "
                                     + std::string{EMBEDDED_NODE_BIN}
                                     + " --id 1 --listen 127.0.0.1:7001"
                                       " --peers 1@127.0.0.1:7001 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("paxos"), std::string::npos) << r.out;
  // --help lists the node's flags and exits 0.
  r = conclave::testing::run_command(std::string{EMBEDDED_NODE_BIN} + " --help");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("--detector-timeout-ms"), std::string::npos) << r.out;
}

TEST_F(embedded_node_cluster, the_leader_task_moves_to_another_copy_after_kill_9) {
  auto j = up(3, "--insecure --program " + std::string{EMBEDDED_NODE_BIN});
  ASSERT_TRUE(j.contains("leader")) << j.dump();
  auto old_leader = j["leader"].get<uint64_t>();
  auto old_term = std::to_string(j["term"].get<uint64_t>()) + "/"
                  + std::to_string(j["term_leader"].get<uint64_t>());
  // The copies run as the program (`cluster up` wrote their --config).
  auto cluster_json = read_file(dir / "cluster.json");
  EXPECT_NE(cluster_json.find("\"program\": true"), std::string::npos) << cluster_json;
  ASSERT_TRUE(logs(old_leader, "leading in term " + old_term, 5s)) << log_of(old_leader);
  // Let it log at least twice (once a second).
  std::this_thread::sleep_for(1200ms);

  auto k = kill(old_leader, "KILL");
  ASSERT_TRUE(k.contains("leader") && k["leader"].is_number()) << k.dump();
  auto new_leader = k["leader"].get<uint64_t>();
  EXPECT_NE(new_leader, old_leader);
  EXPECT_GT(k["term"].get<uint64_t>(), j["term"].get<uint64_t>());
  auto new_term = std::to_string(k["term"].get<uint64_t>()) + "/"
                  + std::to_string(k["term_leader"].get<uint64_t>());
  ASSERT_TRUE(logs(new_leader, "leading in term " + new_term, 5s)) << log_of(new_leader);

  // Each leader submitted a job through the node's client, and some copy's
  // agent ran it: the new leader's too, after the kill.
  auto greeted = [&](const std::string& term) {
    for (uint64_t id = 1; id <= 3; ++id)
      if (log_of(id).find("hello, from the leader of term " + term) != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(eventually([&] { return greeted(new_term); }, 10s))
      << log_of(1) << log_of(2) << log_of(3);
  EXPECT_NE(log_of(new_leader).find("submitted job "), std::string::npos)
      << log_of(new_leader);
  // ...and listed the jobs processed: the old leader's had run by then.
  auto new_log = log_of(new_leader);
  std::regex listed{"jobs processed so far: (\\d+)"};
  int last = -1; // the newest leadership's line
  for (auto i = std::sregex_iterator(new_log.begin(), new_log.end(), listed);
       i != std::sregex_iterator(); ++i)
    last = std::stoi((*i)[1]);
  EXPECT_GE(last, 1) << new_log;

  // SIGTERM to the survivors: the leader's task logs that it stopped.
  EXPECT_EQ(run_conclave("cluster down --dir " + dir.string()).status, 0);
  EXPECT_TRUE(logs(new_leader, "stopped leading in term " + new_term, 5s))
      << log_of(new_leader);

  std::vector<task_run> runs;
  for (uint64_t id = 1; id <= 3; ++id)
    for (auto& r : task_runs(id, log_of(id)))
      runs.push_back(r);
  std::sort(runs.begin(), runs.end(),
            [](const task_run& a, const task_run& b) { return a.from < b.from; });
  std::string shown;
  for (auto& r : runs)
    shown += "node " + std::to_string(r.node) + " term " + std::to_string(r.epoch) + "/"
             + std::to_string(r.leader) + " " + r.from + " .. " + r.to
             + (r.stopped ? " (stopped)" : "") + "\n";
  ASSERT_GE(runs.size(), 2u) << shown;
  for (size_t i = 0; i < runs.size(); ++i) {
    // A task runs only in its own node's term, and every run but the killed
    // copy's logged its end.
    EXPECT_EQ(runs[i].leader, runs[i].node) << shown;
    if (runs[i].node != old_leader) {
      EXPECT_TRUE(runs[i].stopped) << shown;
    }
    if (i == 0)
      continue;
    // No overlap, and another node's later leadership has a higher term (the
    // same node may stop and start again in one term: its lease lapsed).
    EXPECT_LT(runs[i - 1].to, runs[i].from) << shown;
    if (runs[i - 1].node != runs[i].node) {
      EXPECT_LT(runs[i - 1].epoch, runs[i].epoch) << shown;
    } else {
      EXPECT_LE(runs[i - 1].epoch, runs[i].epoch) << shown;
    }
  }
  // The killed copy's last run is followed by the new leader's, in its term.
  auto killed = std::find_if(runs.rbegin(), runs.rend(),
                             [&](const task_run& r) { return r.node == old_leader; });
  ASSERT_NE(killed, runs.rend()) << shown;
  ASSERT_NE(killed, runs.rbegin()) << shown;
  auto next = std::prev(killed);
  EXPECT_EQ(next->node, new_leader) << shown;
  EXPECT_EQ(std::to_string(next->epoch) + "/" + std::to_string(next->leader), new_term)
      << shown;
}

TEST_F(embedded_node_cluster, lease_leadership_moves_after_kill_9_with_a_higher_token) {
  // --algorithm lease: the copies race for a lease of the cluster's own store;
  // the holder's task runs in term TOKEN/ID.
  up(3, "--insecure --algorithm lease --program " + std::string{EMBEDDED_NODE_BIN}
            + " -- --leader-lease-ttl-ms 1000");
  static const std::regex leading_re{R"(leading in term (\d+)/(\d+))"};
  auto holder = [&]() -> std::optional<uint64_t> {
    for (uint64_t id = 1; id <= 3; ++id)
      if (log_of(id).find("leading: holds lease 'conclave.leader'") != std::string::npos)
        return id;
    return std::nullopt;
  };
  ASSERT_TRUE(eventually([&] { return holder().has_value(); }, 10s));
  auto first = *holder();
  ASSERT_TRUE(logs(first, "leading in term ", 5s)) << log_of(first);
  std::this_thread::sleep_for(1200ms);
  auto killed_at = std::chrono::steady_clock::now();
  kill(first, "KILL");
  std::optional<uint64_t> second;
  ASSERT_TRUE(eventually(
      [&] {
        for (uint64_t id = 1; id <= 3; ++id)
          if (id != first && log_of(id).find("leading: holds lease") != std::string::npos)
            second = id;
        return second.has_value();
      },
      10s));
  auto took = std::chrono::steady_clock::now() - killed_at;
  // Not at once: the store waits out the ttl (1 s, widened for drift) from
  // the holder's last renewal, which was up to ttl/3 (more on a loaded
  // machine) before the kill; and not much later.
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 6s);
  ASSERT_TRUE(logs(*second, "leading in term ", 5s)) << log_of(*second);
  EXPECT_EQ(run_conclave("cluster down --dir " + dir.string()).status, 0);
  EXPECT_TRUE(logs(*second, "stopped leading in term ", 5s)) << log_of(*second);

  std::vector<task_run> runs;
  for (uint64_t id = 1; id <= 3; ++id)
    for (auto& r : task_runs(id, log_of(id)))
      runs.push_back(r);
  std::sort(runs.begin(), runs.end(),
            [](const task_run& a, const task_run& b) { return a.from < b.from; });
  std::string shown;
  for (auto& r : runs)
    shown += "node " + std::to_string(r.node) + " term " + std::to_string(r.epoch) + "/"
             + std::to_string(r.leader) + " " + r.from + " .. " + r.to + "\n";
  ASSERT_GE(runs.size(), 2u) << shown;
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].leader, runs[i].node) << shown;
    if (i == 0)
      continue;
    // No overlap, and another node's later run has a higher term (token);
    // the same node may stop and resume in one term when its renewals were
    // late but its lease never passed on.
    EXPECT_LT(runs[i - 1].to, runs[i].from) << shown;
    if (runs[i - 1].node != runs[i].node) {
      EXPECT_LT(runs[i - 1].epoch, runs[i].epoch) << shown;
    } else {
      EXPECT_LE(runs[i - 1].epoch, runs[i].epoch) << shown;
    }
  }
  // The killed holder's run, then the next holder's (the cluster's SIGTERM
  // may hand the lease to the third node for a moment: a released lease
  // passes on at once).
  EXPECT_EQ(runs.front().node, first) << shown;
  EXPECT_EQ(runs.at(1).node, *second) << shown;
}

} // namespace
