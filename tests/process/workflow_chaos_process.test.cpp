// Jobs across node processes under faults: a 5-node `cluster up` (TLS) runs
// a steady stream of jobs submitted with `conclave job submit` while the test
// kills -9, SIGSTOPs/SIGCONTs and restarts nodes, the leader most often.
// Afterwards every submitted job has succeeded (none lost), no idempotency key
// had two effects (the exec step records its effect in a file once per key,
// and every run of it in another), the replicas agree and `store check` is
// clean on every data dir. It prints jobs/s under chaos, runs per effect,
// recoveries by cause (from the jobs' own events, so a killed node's count
// is not lost with it) and the longest a step waited for its recovery after a
// fault hit the node running it. Loopback only; the cluster is brought down however
// the test ends.
#include "tests/process/process_support.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <set>

using namespace conclave::process_test;
using namespace std::chrono_literals;

namespace {

class workflow_chaos : public cluster_test {
protected:
  /// Submits job `id` until the cluster has it (a submission whose answer
  /// was lost in a failover may have committed: job_exists then).
  bool submit(const std::string& id, const std::string& steps) {
    for (int tries = 0; tries < 20; ++tries) {
      auto r =
          run_conclave("job submit --dir " + dir.string() + " --id " + id
                           + " --timeout 4s --attempts 3 --failure-threshold 20 " + steps,
                       true);
      if (r.status == 0 || r.out.find("exists") != std::string::npos)
        return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  std::map<std::string, std::string> states() {
    auto r = run_conclave("job list --json --limit 0 --dir " + dir.string(), true);
    std::map<std::string, std::string> out;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.status != 0 || j.is_discarded())
      return out;
    for (auto& x : j["jobs"])
      out[x["id"].get<std::string>()] = x["state"].get<std::string>();
    return out;
  }

  /// Job `id`'s events, as `job watch --json` prints them.
  std::vector<nlohmann::json> events(const std::string& id) {
    auto r = run_conclave("job watch --json --dir " + dir.string() + " " + id, true);
    std::vector<nlohmann::json> out;
    std::istringstream in{r.out};
    for (std::string l; std::getline(in, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      if (!j.is_discarded() && j.is_object())
        out.push_back(std::move(j));
    }
    return out;
  }

  uint64_t leader() {
    auto r = run_conclave("cluster status --json --dir " + dir.string());
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded() || !j.contains("leader") || !j["leader"].is_number())
      return 0;
    return j["leader"].get<uint64_t>();
  }

  void signal(uint64_t node, const std::string& sig) {
    run_conclave("cluster kill --dir " + dir.string() + " --node " + std::to_string(node)
                 + " --signal " + sig);
  }

  void restart(uint64_t node) {
    auto r = run_conclave("cluster restart --dir " + dir.string() + " --node "
                              + std::to_string(node),
                          true);
    EXPECT_EQ(r.status, 0) << r.out;
  }
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in{text};
  for (std::string l; std::getline(in, l);)
    if (!l.empty())
      out.push_back(l);
  return out;
}

} // namespace

TEST_F(workflow_chaos,
       every_job_finishes_once_while_nodes_are_killed_paused_and_restarted) {
  constexpr int nodes = 5;
  constexpr int jobs = 40;
  auto j = up(nodes);
  ASSERT_TRUE(j.contains("leader")) << j.dump();
  auto effects = dir / "effects";
  std::filesystem::create_directories(effects);
  // The step's effect happens once per idempotency key (mkdir is atomic);
  // every run is recorded. A node killed mid-step leaves the command running.
  std::string e = effects.string();
  std::string exec = "'exec:k=$(echo $CONCLAVE_IDEMPOTENCY_KEY | tr / _); "
                     "echo \"$k $CONCLAVE_ATTEMPT $CONCLAVE_NODE_ID\" >> "
                     + e + "/runs.log; if mkdir " + e
                     + "/keys/$k 2>/dev/null; then echo $k >> " + e
                     + "/effects.log; fi; sleep 0.2'";
  std::filesystem::create_directories(effects / "keys");

  std::mt19937_64 rng{std::random_device{}()};
  auto pick_other = [&](uint64_t not_this) {
    uint64_t n;
    do
      n = 1 + rng() % nodes;
    while (n == not_this);
    return n;
  };
  auto started = std::chrono::steady_clock::now();
  std::vector<std::string> faults;
  // When each node was killed or stopped (wall clock, as job events are).
  std::multimap<uint64_t, int64_t> hit_at;
  auto hit = [&](uint64_t node) {
    hit_at.emplace(node, std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count());
  };
  uint64_t stopped = 0;
  std::set<uint64_t> killed;
  for (int i = 0; i < jobs; ++i) {
    ASSERT_TRUE(submit("c-" + std::to_string(i), exec + " sleep:50"))
        << "job " << i << " never accepted";
    if (i % 8 == 4) { // kill -9: the leader twice in three times
      auto l = leader();
      auto victim = (l != 0 && rng() % 3 != 0) ? l : pick_other(stopped);
      if (victim == stopped)
        victim = pick_other(stopped);
      hit(victim);
      signal(victim, "KILL");
      killed.insert(victim);
      faults.push_back("kill -9 node " + std::to_string(victim)
                       + (victim == l ? " (leader)" : ""));
    } else if (i % 8 == 6) {
      for (auto k : killed)
        restart(k);
      if (!killed.empty())
        faults.push_back("restart " + std::to_string(killed.size()) + " node(s)");
      killed.clear();
    } else if (i % 8 == 1) {
      auto l = leader();
      stopped = (l != 0 && rng() % 2 == 0) ? l : pick_other(0);
      hit(stopped);
      signal(stopped, "STOP");
      faults.push_back("SIGSTOP node " + std::to_string(stopped)
                       + (stopped == l ? " (leader)" : ""));
    } else if (i % 8 == 3 && stopped != 0) {
      signal(stopped, "CONT");
      faults.push_back("SIGCONT node " + std::to_string(stopped));
      stopped = 0;
    }
  }
  if (stopped != 0)
    signal(stopped, "CONT");
  for (auto k : killed)
    restart(k);

  std::map<std::string, std::string> final;
  bool all = eventually(
      [&] {
        final = states();
        if (final.size() < static_cast<size_t>(jobs))
          return false;
        for (auto& [id, st] : final)
          if (st != "processed" && st != "error" && st != "cancelled"
              && st != "compensated")
            return false;
        return true;
      },
      90s);
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
  std::string shown;
  for (auto& f : faults)
    shown += f + "\n";
  ASSERT_TRUE(all) << "jobs not final: " << final.size() << " listed\n" << shown;
  for (int i = 0; i < jobs; ++i) {
    auto id = "c-" + std::to_string(i);
    EXPECT_EQ(final[id], "processed") << id << "\n" << shown;
  }
  // One effect per key, for every job's exec step; runs may repeat it.
  auto eff = lines(read_file(effects / "effects.log"));
  auto runs = lines(read_file(effects / "runs.log"));
  std::map<std::string, int> per_key;
  for (auto& k : eff)
    ++per_key[k];
  EXPECT_EQ(per_key.size(), static_cast<size_t>(jobs)) << shown;
  for (auto& [k, n] : per_key)
    EXPECT_EQ(n, 1) << k;
  EXPECT_GE(runs.size(), eff.size());
  // Which node ran each attempt: "KEY ATTEMPT NODE" per run.
  std::map<std::pair<std::string, uint64_t>, uint64_t> ran_on;
  for (auto& l : runs) {
    std::istringstream in{l};
    std::string key;
    uint64_t attempt = 0, node = 0;
    if (in >> key >> attempt >> node)
      ran_on[{key, attempt}] = node;
  }
  // Recoveries by cause, from the jobs' events: a recovery is a "retrying"
  // event whose detail starts with its cause. A recovery waited from the
  // fault that hit the node running the attempt (after the attempt started)
  // to the event.
  std::map<std::string, int> recovered;
  double longest_wait_ms = 0;
  int waited = 0;
  for (int i = 0; i < jobs; ++i) {
    auto id = "c-" + std::to_string(i);
    std::map<std::pair<uint64_t, uint64_t>, int64_t> started; // (step, attempt)
    for (auto& ev : events(id)) {
      auto kind = ev.value("kind", "");
      auto step = ev.value("step", uint64_t{0});
      auto attempt = ev.value("attempt", uint64_t{0});
      auto at = ev.value("at_ns", int64_t{0});
      if (kind == "step_started")
        started[{step, attempt}] = at;
      if (kind != "retrying")
        continue;
      auto detail = ev.value("detail", "");
      ++recovered[detail.substr(0, detail.find(' '))];
      auto node = ran_on.find({id + "_" + std::to_string(step), attempt});
      auto begun = started.find({step, attempt});
      if (node == ran_on.end() || begun == started.end())
        continue;
      int64_t fault = 0;
      auto [from, to] = hit_at.equal_range(node->second);
      for (auto f = from; f != to; ++f)
        if (f->second >= begun->second && f->second <= at)
          fault = std::max(fault, f->second);
      if (fault == 0)
        continue;
      ++waited;
      longest_wait_ms = std::max(longest_wait_ms, (at - fault) / 1e6);
    }
  }
  std::printf("[workflow chaos] %d jobs (exec + sleep) on %d nodes in %.1f s: %.1f "
              "jobs/s under %zu faults; exec runs %zu for %zu effects; recoveries by "
              "cause: monitor %d, deadline %d, failure %d; longest wait from a fault on "
              "the step's node to its recovery %.0f ms (%d such recoveries)\n",
              jobs, nodes, took.count(), jobs / took.count(), faults.size(), runs.size(),
              eff.size(), recovered["monitor"], recovered["deadline"],
              recovered["failure"], longest_wait_ms, waited);
  down_and_check_replicas();
}
