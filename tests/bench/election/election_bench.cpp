// Time and messages of one election vs group size, for Bully and Ring, on CAF's
// real (threaded, work-stealing) scheduler. Prints a table; asserts nothing.
//
// Each run spawns n candidates that never elect on their own (long waits), then
// asks one initiator to elect and measures until every candidate follows the
// winner (the highest id) in the new term. Messages are every election-protocol
// message sent until then (heartbeats excluded). Median of --reps runs.
//
//   election_bench [--reps 5] [--sizes 8,32,128,512] [--quick]
#include "actors/election/candidate_actor.hpp"
#include "actors/election/election_probe.hpp"
#include "actors/election/local_group.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace el = conclave::election;
using namespace std::chrono_literals;

namespace {

/// Counts protocol messages and candidates that adopted the expected outcome.
struct counting_probe : el::election_probe {
  explicit counting_probe(size_t n) : agreed_flags(n + 1), started_flags(n + 1) {}

  std::atomic<uint64_t> messages{0};
  std::atomic<size_t> started{0};
  std::atomic<size_t> agreed{0};
  std::vector<std::atomic<bool>> agreed_flags;
  std::vector<std::atomic<bool>> started_flags;
  el::node_id expected_leader;
  uint64_t expected_epoch = 1;
  std::mutex mtx;
  std::condition_variable cv;

  void message_sent(size_t type) override {
    if (!el::is_heartbeat_type(type))
      messages.fetch_add(1, std::memory_order_relaxed);
  }

  void state(const el::candidate_core& c, el::timestamp) override {
    auto id = c.id().value;
    if (!started_flags[id].exchange(true)) {
      started.fetch_add(1);
      std::lock_guard<std::mutex> g{mtx};
      cv.notify_all();
    }
    if (c.leader() == expected_leader && c.current_term().epoch == expected_epoch
        && (c.leader() != c.id() || c.acting()) && !agreed_flags[id].exchange(true)) {
      if (agreed.fetch_add(1) + 1 == agreed_flags.size() - 1) {
        std::lock_guard<std::mutex> g{mtx};
        cv.notify_all();
      }
    }
  }
};

struct result {
  double ms;
  uint64_t messages;
};

result run_once(el::algorithm algo, size_t n, uint64_t initiator) {
  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::conclave_election>();
  caf::actor_system sys{cfg};

  el::election_config ecfg;
  ecfg.algo = algo;
  ecfg.election_wait = 1h; // only the initiator elects
  ecfg.heartbeat_interval = 1s;
  ecfg.detector.timeout = 10s;
  ecfg.answer_timeout = 10s; // measure messaging, not timeouts
  ecfg.coordinator_timeout = 20s;
  ecfg.hop_timeout = 5s;

  auto probe = std::make_shared<counting_probe>(n);
  probe->expected_leader = el::node_id{n};
  el::candidate_options base;
  base.config = ecfg;
  base.probe = probe;
  base.start_immediately = true;
  auto group = el::spawn_local_group(sys, n, base);
  {
    // Every candidate has started (and watched its n-1 peers) before we measure.
    std::unique_lock<std::mutex> lk{probe->mtx};
    probe->cv.wait_for(lk, 60s, [&] { return probe->started.load() == n; });
  }
  probe->messages = 0;
  auto t0 = std::chrono::steady_clock::now();
  caf::anon_send(group.members.at(el::node_id{initiator}),
                 conclave::election_atoms::elect_atom::value);
  {
    std::unique_lock<std::mutex> lk{probe->mtx};
    probe->cv.wait_for(lk, 60s, [&] { return probe->agreed.load() == n; });
  }
  auto t1 = std::chrono::steady_clock::now();
  result r{std::chrono::duration<double, std::milli>(t1 - t0).count(),
           probe->messages.load()};
  if (probe->agreed.load() != n)
    r.ms = -1; // did not converge within 60 s
  group.stop_all(caf::exit_reason::user_shutdown);
  return r;
}

std::string theory(el::algorithm algo, size_t n, uint64_t initiator) {
  if (algo == el::algorithm::ring)
    return std::to_string(4 * n) + " (2n hops + 2n acks)";
  if (initiator == n)
    return std::to_string(n - 1) + " (n-1 coordinators)";
  if (initiator == 1)
    return "~" + std::to_string(n * (n - 1) + n - 1)
           + " (n(n-1)/2 elections + answers, n-1 coord.)";
  return "";
}

} // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::vector<size_t> sizes{8, 32, 128, 512};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--quick")) {
      reps = 1;
      sizes = {8};
    } else if (!std::strcmp(argv[i], "--sizes") && i + 1 < argc) {
      sizes.clear();
      for (char* tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ","))
        sizes.push_back(std::strtoul(tok, nullptr, 10));
    } else {
      std::fprintf(stderr,
                   "usage: election_bench [--reps R] [--sizes a,b,c] [--quick]\n");
      return 2;
    }
  }
  std::printf("%-6s %5s %-10s %12s %12s   %s\n", "algo", "n", "initiator", "median_ms",
              "messages", "theory");
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (auto n : sizes) {
      std::vector<std::pair<const char*, uint64_t>> initiators{{"lowest", 1}};
      if (algo == el::algorithm::bully)
        initiators.emplace_back("highest", n);
      for (auto [name, who] : initiators) {
        std::vector<result> rs;
        for (int r = 0; r < reps; ++r)
          rs.push_back(run_once(algo, n, who));
        std::sort(rs.begin(), rs.end(),
                  [](const result& a, const result& b) { return a.ms < b.ms; });
        auto med = rs[rs.size() / 2];
        std::printf("%-6s %5zu %-10s %12.2f %12llu   %s\n",
                    std::string{el::to_string(algo)}.c_str(), n, name, med.ms,
                    static_cast<unsigned long long>(med.messages),
                    theory(algo, n, who).c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
