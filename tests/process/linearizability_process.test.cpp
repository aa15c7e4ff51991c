// The replicated store as its clients see it, checked for linearizability:
// a 3-node cluster on loopback, 5 client threads of the C++ client (one
// process, one connection to each member) doing puts, gets, removes,
// compare-and-sets, enqueues and dequeues on a few keys and two queues, and
// 2 threads running one-shot `conclave kv` processes (put, get, incr,
// enqueue, dequeue), while a seeded nemesis kills -9 and restarts the
// leader, and SIGSTOPs the leader or a follower for a while. Every call is
// recorded with its interval on one clock (protocols/history) and the whole
// history is checked (linearizability.hpp). A call that got no settling
// answer (timeout, outcome_unknown) is recorded as unanswered: it may have
// taken effect or not; with client sessions and faults shorter than the
// timeout there must be none. At the end every queue is drained, so an item
// acknowledged and never handed out shows. The test also plants, in copies
// of the history, a read of a value nobody wrote, an item dequeued twice
// (what a retry applied twice shows) and a lost item (a dequeue left out),
// and expects the checker to find each.
// Bounded: about 20 s.
#include "tests/process/process_support.hpp"

#include "actors/replication/client.hpp"
#include "protocols/history/linearizability.hpp"
#include "runtime/cluster/store_access.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

using namespace conclave::process_test;
using namespace std::chrono_literals;
namespace rp = conclave::replication;
namespace hs = conclave::history;

namespace {

class linearizability_cluster : public cluster_test {
protected:
  using steady = std::chrono::steady_clock;

  hs::timestamp now() const {
    return std::chrono::duration_cast<hs::timestamp>(steady::now() - origin);
  }

  uint64_t leader() {
    auto r = run_conclave("cluster status --json --dir " + dir.string());
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded())
      return 0;
    for (auto& n : j["nodes"])
      if (n.value("is_leader", false))
        return n["id"].get<uint64_t>();
    return 0;
  }

  void signal(uint64_t node, const std::string& sig) {
    run_conclave("cluster kill --dir " + dir.string() + " --node " + std::to_string(node)
                 + " --signal " + sig);
  }

  /// One client thread: random calls until `stop`, each recorded.
  void client(uint64_t id, rp::client_options base, std::atomic<bool>& stop) {
    base.deadline = 3s;
    base.attempt_timeout = 500ms;
    base.seed = id;
    rp::kv_client c{conn->system(), base};
    std::mt19937_64 rng{id * 7919};
    uint64_t n = 0;
    while (!stop.load()) {
      // A few ms between calls keeps the history checkable (a few thousand
      // calls) and still leaves several calls in flight at every fault.
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 10));
      auto key = "k" + std::to_string(rng() % 3);
      auto queue = "q" + std::to_string(rng() % 2);
      auto value = "c" + std::to_string(id) + "-" + std::to_string(++n);
      auto pick = rng() % 100;
      hs::call what;
      if (pick < 25)
        what = hs::call::put(key, value);
      else if (pick < 50)
        what = hs::call::get(key);
      else if (pick < 58)
        what = hs::call::remove(key);
      else if (pick < 70)
        what = hs::call::cas(key, std::optional<std::string>{last_seen(key)}, value);
      else if (pick < 85)
        what = hs::call::enqueue(queue, value);
      else
        what = hs::call::dequeue(queue);
      auto at = now();
      std::optional<hs::outcome> seen;
      rp::errc code = rp::errc::ok;
      switch (what.kind) {
      case hs::op_kind::get: {
        auto r = c.get("d", key);
        code = r.code;
        if (r.code == rp::errc::ok) {
          seen = hs::outcome::read(r.found ? std::optional<std::string>{r.value}
                                           : std::nullopt);
          if (r.found)
            remember(key, r.value);
        }
        break;
      }
      case hs::op_kind::put: {
        auto r = c.put("d", key, *what.value);
        code = r.code;
        if (r.code == rp::errc::ok)
          seen = hs::outcome::done();
        break;
      }
      case hs::op_kind::remove: {
        auto r = c.remove("d", key);
        code = r.code;
        if (r.code == rp::errc::ok)
          seen = hs::outcome::removed(!r.outputs.empty() && r.outputs[0].found);
        break;
      }
      case hs::op_kind::cas: {
        auto r = c.compare_and_set("d", key, what.expected, what.value);
        code = r.code;
        if (r.code == rp::errc::ok) {
          seen = hs::outcome::done();
        } else if (r.code == rp::errc::condition_failed && !r.outputs.empty()) {
          // Values are never empty: "" is an absent key.
          auto& v = r.outputs[0].value;
          seen = hs::outcome::cas_failed(v.empty() ? std::nullopt
                                                   : std::optional<std::string>{v});
        }
        break;
      }
      case hs::op_kind::enqueue: {
        auto r = c.enqueue(what.target, *what.value);
        code = r.code;
        if (r.code == rp::errc::ok)
          seen = hs::outcome::done();
        break;
      }
      case hs::op_kind::dequeue: {
        auto r = c.dequeue(what.target);
        code = r.code;
        if (r.code == rp::errc::ok)
          seen = hs::outcome::read(!r.outputs.empty() && r.outputs[0].found
                                       ? std::optional<std::string>{r.outputs[0].value}
                                       : std::nullopt);
        // A queue nobody enqueued to yet does not exist: decided in log
        // order (txn_apply.cpp), so the dequeue is settled as empty.
        else if (r.code == rp::errc::unknown_collection)
          seen = hs::outcome::read(std::nullopt);
        break;
      }
      default:
        break;
      }
      auto done = now();
      std::lock_guard<std::mutex> lk{mu};
      hs::operation op;
      op.client = hs::client_id{id};
      op.invoked = at;
      op.what = what;
      if (seen) {
        op.responded = done;
        op.seen = *seen;
      } else {
        ++unanswered;
        unanswered_why.push_back(
            "client " + std::to_string(id) + " "
            + std::to_string(static_cast<int>(what.kind)) + " at "
            + std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(at).count())
            + " ms, after "
            + std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(done - at).count())
            + " ms: " + std::string{rp::to_string(code)});
      }
      history.add(std::move(op));
    }
  }

  /// One client of one-shot `conclave kv` processes: puts, gets, incrs,
  /// enqueues and dequeues on the keys and queues the C++ clients use (incr
  /// on its own counter), each call a process, each recorded.
  void cli_client(uint64_t id, std::atomic<bool>& stop) {
    std::mt19937_64 rng{id * 104729};
    uint64_t n = 0;
    auto base = std::string{"kv --json --timeout-ms 3000 --dir "} + dir.string();
    while (!stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 10));
      auto key = "k" + std::to_string(rng() % 3);
      // A queue of their own: a process's call spans tens of ms, and many
      // such long calls on the C++ clients' queues would multiply the orders
      // the checker must try.
      std::string queue = "q2";
      auto value = "cli" + std::to_string(id) + "-" + std::to_string(++n);
      auto pick = rng() % 100;
      hs::call what;
      std::string args;
      if (pick < 25) {
        what = hs::call::put(key, value);
        args = " --collection d put " + key + " " + value;
      } else if (pick < 45) {
        what = hs::call::get(key);
        args = " --collection d get " + key;
      } else if (pick < 65) {
        what = hs::call::incr("n0", 1);
        args = " --collection d incr n0";
      } else if (pick < 85) {
        what = hs::call::enqueue(queue, value);
        args = " --collection " + queue + " enqueue " + value;
      } else {
        what = hs::call::dequeue(queue);
        args = " --collection " + queue + " dequeue";
      }
      auto at = now();
      auto r = run_conclave(base + args, true);
      auto done = now();
      std::optional<hs::outcome> seen;
      nlohmann::json j = nlohmann::json::object();
      for (std::istringstream lines{r.out}; !lines.eof();) {
        std::string line;
        std::getline(lines, line);
        if (!line.empty() && line.front() == '{')
          j = nlohmann::json::parse(line, nullptr, false);
      }
      bool answered = j.is_object() && j.contains("node");
      switch (what.kind) {
      case hs::op_kind::put:
      case hs::op_kind::enqueue:
        if (answered && r.status == 0)
          seen = hs::outcome::done();
        break;
      case hs::op_kind::get:
      case hs::op_kind::dequeue:
        if (answered && j.contains("found"))
          seen = hs::outcome::read(j["found"].get<bool>()
                                       ? std::optional<std::string>{j["value"]}
                                       : std::nullopt);
        else if (what.kind == hs::op_kind::dequeue
                 && r.out.find("unknown_collection") != std::string::npos)
          seen = hs::outcome::read(std::nullopt);
        break;
      case hs::op_kind::incr:
        if (answered && r.status == 0 && j.contains("value"))
          seen = hs::outcome::counter(j["value"].get<int64_t>());
        break;
      default:
        break;
      }
      std::lock_guard<std::mutex> lk{mu};
      hs::operation op;
      op.client = hs::client_id{id};
      op.invoked = at;
      op.what = what;
      ++cli_calls;
      if (seen) {
        op.responded = done;
        op.seen = *seen;
        if (what.kind == hs::op_kind::get && op.seen.value)
          seen_values[key] = *op.seen.value;
      } else {
        ++unanswered;
        ++cli_unanswered;
        auto line = r.out.substr(0, r.out.find('\n'));
        unanswered_why.push_back(
            "cli client " + std::to_string(id) + args + " at "
            + std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(at).count())
            + " ms, after "
            + std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(done - at).count())
            + " ms: exit " + std::to_string(r.status) + ": " + line);
      }
      history.add(std::move(op));
    }
  }

  std::string last_seen(const std::string& key) {
    std::lock_guard<std::mutex> lk{mu};
    auto i = seen_values.find(key);
    return i == seen_values.end() ? std::string{"none"} : i->second;
  }

  void remember(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lk{mu};
    seen_values[key] = value;
  }

  steady::time_point origin = steady::now();
  std::unique_ptr<conclave::cluster::store_connection> conn;
  std::mutex mu;
  hs::client_history history;
  std::map<std::string, std::string> seen_values;
  size_t unanswered = 0;
  size_t cli_calls = 0;
  size_t drained = 0;
  size_t cli_unanswered = 0;
  std::vector<std::string> unanswered_why;
};

TEST_F(linearizability_cluster, histories_under_kills_and_pauses_are_linearizable) {
  auto j = up(3, "--insecure");
  ASSERT_TRUE(j.contains("leader")) << j.dump();
  conclave::cluster::store_access a;
  a.dir = dir.string();
  ASSERT_FALSE(conclave::cluster::settle_access(a));
  std::map<uint64_t, conclave::node::address> members;
  ASSERT_FALSE(conclave::cluster::parse_members(a, members));
  conn = std::make_unique<conclave::cluster::store_connection>(a, members);
  conn->wait_ready(1000ms);

  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (uint64_t id = 1; id <= 5; ++id)
    clients.emplace_back([&, id] { client(id, conn->client_options(), stop); });
  for (uint64_t id = 6; id <= 7; ++id)
    clients.emplace_back([&, id] { cli_client(id, stop); });

  // The nemesis: six rounds, one fault each, every kind twice.
  std::vector<std::string> done;
  std::vector<std::pair<hs::timestamp, std::string>> fault_at;
  for (int round = 0; round < 6; ++round) {
    std::this_thread::sleep_for(1500ms);
    auto l = leader();
    if (l == 0)
      continue;
    fault_at.emplace_back(now(), "");
    switch (round % 3) { // each kind twice
    case 0:
      signal(l, "KILL");
      std::this_thread::sleep_for(800ms);
      run_conclave("cluster restart --dir " + dir.string() + " --node "
                   + std::to_string(l));
      done.push_back("kill -9 leader " + std::to_string(l));
      fault_at.back().second = "kill -9 leader";
      break;
    case 1:
      signal(l, "STOP");
      std::this_thread::sleep_for(1000ms);
      signal(l, "CONT");
      done.push_back("SIGSTOP leader " + std::to_string(l));
      fault_at.back().second = "SIGSTOP leader 1 s";
      break;
    default: {
      auto f = l % 3 + 1;
      signal(f, "STOP");
      std::this_thread::sleep_for(1000ms);
      signal(f, "CONT");
      done.push_back("SIGSTOP follower " + std::to_string(f));
      fault_at.back().second = "SIGSTOP follower 1 s";
    }
    }
  }
  std::this_thread::sleep_for(1500ms);
  stop = true;
  for (auto& t : clients)
    t.join();

  // Drain every queue, recorded like any call: an item enqueued and never
  // handed out must come out here, so a lost item (or one a dequeue took
  // without its caller learning it) breaks the history's FIFO order or is
  // missing from the end. Every acknowledged enqueue is dequeued exactly once
  // in all.
  {
    auto o = conn->client_options();
    o.deadline = 3s;
    rp::kv_client drain{conn->system(), o};
    for (auto q : {"q0", "q1", "q2"}) {
      for (int n = 0; n < 100000; ++n) {
        auto at = now();
        auto r = drain.dequeue(q);
        auto done = now();
        hs::operation op;
        op.client = hs::client_id{99};
        op.invoked = at;
        op.what = hs::call::dequeue(q);
        bool empty = r.code == rp::errc::unknown_collection
                     || (r.code == rp::errc::ok && !r.outputs.at(0).found);
        if (r.code == rp::errc::ok || empty) {
          op.responded = done;
          op.seen = hs::outcome::read(
              empty ? std::nullopt : std::optional<std::string>{r.outputs[0].value});
        } else {
          ++unanswered;
          unanswered_why.push_back(std::string{"drain of "} + q + ": "
                                   + std::string{rp::to_string(r.code)});
        }
        history.add(std::move(op));
        ++drained;
        if (empty || !op.completed())
          break;
      }
    }
  }

  std::string faults;
  for (auto& f : done)
    faults += f + "; ";
  size_t answered = history.size() - unanswered;
  std::cout << "history: " << history.size() << " calls (" << cli_calls
            << " by kv processes, " << drained << " draining the queues), " << answered
            << " answered, " << unanswered << " unanswered; faults: " << faults
            << std::endl;
  for (auto& w : unanswered_why)
    std::cout << "unanswered: " << w << std::endl;
  // What the clients felt: per fault, the longest time without any call
  // completing successfully from its start, for 3 s or until the next fault.
  std::vector<hs::timestamp> ok_times;
  for (auto& op : history.operations())
    if (op.completed())
      ok_times.push_back(*op.responded);
  std::sort(ok_times.begin(), ok_times.end());
  for (size_t f = 0; f < fault_at.size(); ++f) {
    auto& [at, what] = fault_at[f];
    auto until = at + std::chrono::duration_cast<hs::timestamp>(3s);
    if (f + 1 < fault_at.size())
      until = std::min(until, fault_at[f + 1].first);
    auto from = at;
    hs::timestamp longest{0};
    for (auto t : ok_times) {
      if (t <= at)
        continue;
      if (t > until)
        break;
      longest = std::max(longest, t - from);
      from = t;
    }
    std::cout << "unavailability: " << what << ": longest gap between successful calls "
              << std::chrono::duration_cast<std::chrono::milliseconds>(longest).count()
              << " ms" << std::endl;
  }
  ASSERT_GE(answered, 200u) << faults;
  EXPECT_GE(cli_calls, 20u);
  // Every fault here lasts well under the clients' 3 s timeout, and retries
  // are answered by the store's session table: every call settles, of the
  // C++ clients and of the kv processes alike. (A kv process whose new
  // connection was given the number of one just closed lost its sender in
  // CAF's routing table until socket numbers rotated: socket_numbers.hpp.)
  EXPECT_EQ(unanswered - cli_unanswered, 0u) << faults;
  EXPECT_EQ(cli_unanswered, 0u) << faults;
  auto verdict = hs::check_linearizable(history);
  std::cout << "checker: " << hs::to_string(verdict.result) << ", " << verdict.partitions
            << " partitions, " << verdict.steps << " steps" << std::endl;
  EXPECT_EQ(verdict.result, hs::verdict::linearizable)
      << verdict.describe(history) << "\nfaults: " << faults;

  // The same history with one answered get reporting a value nobody wrote
  // must fail: the checker is not blind to what the clients saw.
  hs::client_history planted;
  bool changed = false;
  for (auto& op : history.operations()) {
    auto copy = op;
    if (!changed && op.completed() && op.what.kind == hs::op_kind::get) {
      copy.seen = hs::outcome::read(std::string{"never-written"});
      changed = true;
    }
    planted.add(std::move(copy));
  }
  ASSERT_TRUE(changed);
  EXPECT_EQ(hs::check_linearizable(planted).result, hs::verdict::violation);

  // And one item handed out twice (what a retried dequeue that applied twice
  // would show): a later dequeue of the same queue reports an earlier one's
  // item.
  hs::client_history twice;
  std::map<std::string, std::string> taken;
  changed = false;
  for (auto& op : history.operations()) {
    auto copy = op;
    if (op.completed() && op.what.kind == hs::op_kind::dequeue && op.seen.value) {
      auto t = taken.find(op.what.target);
      if (!changed && t != taken.end() && *op.seen.value != t->second) {
        copy.seen = hs::outcome::read(t->second);
        changed = true;
      } else if (t == taken.end()) {
        taken[op.what.target] = *op.seen.value;
      }
    }
    twice.add(std::move(copy));
  }
  ASSERT_TRUE(changed);
  EXPECT_EQ(hs::check_linearizable(twice).result, hs::verdict::violation);

  // And one item lost (what a dequeue whose answer was dropped, never
  // retried, would leave): the first answered dequeue that got an item is
  // left out of the history; the drain's empty answer then cannot be
  // explained.
  hs::client_history lost;
  changed = false;
  for (auto& op : history.operations()) {
    if (!changed && op.completed() && op.what.kind == hs::op_kind::dequeue
        && op.seen.value) {
      changed = true;
      continue;
    }
    lost.add(op);
  }
  ASSERT_TRUE(changed);
  EXPECT_EQ(hs::check_linearizable(lost).result, hs::verdict::violation);

  conn.reset();
  down_and_check_replicas();
}

} // namespace
