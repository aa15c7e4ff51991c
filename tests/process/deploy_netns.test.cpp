// `conclave cluster init` for three hosts, with network namespaces standing in
// for the hosts (netns_support.hpp). Each node runs with
// `ip netns exec NS conclave node --config FILE` from the generated files
// (installed into one shared "config dir", as a copy to /etc/conclave would
// be), `conclave kv --cluster-dir OUT` runs in the first namespace, and the
// leader is killed with SIGKILL. Needs root (or CAP_SYS_ADMIN) and iproute2;
// skipped otherwise. Every namespace and process is removed however the test
// ends; if the test process is killed outright, its nodes die with it and the
// next run deletes its namespaces.
#include "tests/process/netns_support.hpp"

using namespace conclave::process_test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {
class deploy_netns : public netns_cluster {};
} // namespace

TEST_F(deploy_netns, three_hosts_from_cluster_init_elect_and_keep_a_key_after_a_kill) {
  auto started = std::chrono::steady_clock::now();
  // "Install" every node's files, as a copy to each host's /etc/conclave would.
  init_and_install("--metrics-port 9101");
  for (int i = 1; i <= nodes; ++i)
    start(i);

  auto leader = wait_for_leader({1, 2, 3}, 15s);
  ASSERT_NE(leader, 0u) << "no agreed leader; logs in " << dir;
  // The nodes listen on their hosts' addresses, not on loopback.
  EXPECT_NE(read_file(dir / "node-1.log").find("10.213.0.1:7001"), std::string::npos)
      << read_file(dir / "node-1.log");

  auto put = kv_in(1, "put greeting hello");
  ASSERT_EQ(put.status, 0) << put.out;
  EXPECT_NE(put.out.find("ok lsn"), std::string::npos) << put.out;
  auto get = kv_in(1, "get greeting");
  ASSERT_EQ(get.status, 0) << get.out;
  EXPECT_EQ(get.out, "hello\n");

  // Lose the leader's host (SIGKILL: no resignation); the others take over.
  auto victim = static_cast<int>(leader);
  ::kill(pids[victim], SIGKILL);
  ::waitpid(pids[victim], nullptr, 0);
  pids.erase(victim);
  std::vector<int> rest;
  for (int i = 1; i <= nodes; ++i)
    if (i != victim)
      rest.push_back(i);
  auto next = wait_for_leader(rest, 10s);
  ASSERT_NE(next, 0u) << "no new leader after node " << victim << " was killed";
  EXPECT_NE(next, leader);

  auto again = kv_in(rest.front(), "get greeting");
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(again.out, "hello\n");

  // Stop the survivors (SIGTERM, as systemd would) and check every replica,
  // the killed one's too.
  stop_all_and_check_replicas();

  auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_LT(elapsed, 60s);
  std::cout << "leader " << leader << " killed, new leader " << next
            << ", key read back; "
            << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
            << " ms in all\n";
}
