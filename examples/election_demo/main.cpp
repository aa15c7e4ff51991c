// An in-process group of candidates whose leader aggregates work done by all of
// them — the Leader Election pattern's "aggregate the results of a parallel
// computation". Every member runs a worker that owns a slice of the data (here:
// the squares of 1..N); only the elected leader runs the coordinator task, which
// asks every worker for its partial sum and reports the total. Then the demo stops
// the leader gracefully (it resigns: the others elect at once), and crashes the
// next one (the others notice through CAF monitors) and shows each failover.
//
//   election_demo [--nodes 5] [--algorithm bully|ring]
#include "actors/election/candidate_actor.hpp"
#include "actors/election/leader_task.hpp"
#include "actors/election/local_group.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>

namespace el = conclave::election;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr uint64_t items = 1'000'000;

/// A member's share of the work: the sum of i*i over its slice of 1..items.
caf::behavior worker(caf::event_based_actor*, uint64_t member, uint64_t members) {
  return {[=](caf::get_atom) -> uint64_t {
    uint64_t sum = 0;
    for (uint64_t i = member; i <= items; i += members)
      sum += i * i % 1'000'003; // keep it in range; any per-item work will do
    return sum;
  }};
}

/// The coordinator task: asks every worker, aggregates, reports, repeats.
caf::behavior aggregator(caf::event_based_actor* self, el::leader_context ctx,
                         std::shared_ptr<std::map<uint64_t, caf::actor>> workers) {
  auto round = [self, ctx, workers] {
    auto total = std::make_shared<uint64_t>(0);
    auto answered = std::make_shared<size_t>(0);
    auto pending = std::make_shared<size_t>(workers->size());
    auto report = [=] {
      if (--*pending > 0 || ctx.cancelled())
        return;
      std::printf("  leader %s (term %s): %zu of %zu workers answered, total = %llu\n",
                  el::to_string(ctx.self()).c_str(),
                  el::to_string(ctx.leadership_term()).c_str(), *answered,
                  workers->size(), static_cast<unsigned long long>(*total));
    };
    for (auto& [id, w] : *workers) {
      self->request(w, 200ms, caf::get_atom::value)
          .then(
              [=](uint64_t partial) {
                *total += partial;
                ++*answered;
                report();
              },
              [=](caf::error&) { report(); }); // a dead member's slice is missing
    }
  };
  round();
  self->delayed_send(self, 300ms, caf::tick_atom::value);
  return {[=](caf::tick_atom) {
    if (ctx.cancelled())
      return;
    round();
    self->delayed_send(self, 300ms, caf::tick_atom::value);
  }};
}

struct options {
  size_t nodes = 5;
  el::algorithm algo = el::algorithm::bully;
};

int parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--nodes" && i + 1 < argc) {
      o.nodes = std::strtoul(argv[++i], nullptr, 10);
      if (o.nodes < 2 || o.nodes > 64) {
        std::cerr << "election_demo: error: --nodes must be between 2 and 64\n";
        return 2;
      }
    } else if (a == "--algorithm" && i + 1 < argc) {
      auto r = el::parse_algorithm(argv[++i]);
      if (!r) {
        std::cerr << "election_demo: error: " << r.error() << '\n';
        return 2;
      }
      o.algo = r.value();
    } else if (a == "--help") {
      std::cout << "usage: election_demo [--nodes 2..64] [--algorithm bully|ring]\n";
      return 1;
    } else {
      std::cerr << "election_demo: error: unknown argument '" << a << "' (see --help)\n";
      return 2;
    }
  }
  return 0;
}

/// Waits until some candidate reports it became leader; returns it.
el::leadership_event wait_for_leader(caf::scoped_actor& me, el::node_id not_this) {
  el::leadership_event result;
  bool done = false;
  while (!done) {
    me->receive(
        [&](const el::leadership_event& e) {
          if (e.what == el::leadership_event::kind::acting_started
              && e.self != not_this) {
            result = e;
            done = true;
          }
        },
        caf::after(5s) >> [&] { done = true; });
  }
  return result;
}

} // namespace

int main(int argc, char** argv) {
  options opt;
  if (int rc = parse(argc, argv, opt); rc != 0)
    return rc == 1 ? 0 : rc;

  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::conclave_election>();
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};

  auto workers = std::make_shared<std::map<uint64_t, caf::actor>>();
  for (uint64_t i = 1; i <= opt.nodes; ++i)
    (*workers)[i] = sys.spawn(worker, i, opt.nodes);

  auto task = std::make_shared<const el::leader_task>(el::leader_task::from_actor(
      [workers](caf::actor_system& s, el::leader_context ctx) {
        return s.spawn(aggregator, ctx, workers);
      }));

  el::candidate_options base;
  base.config.algo = opt.algo;
  base.task = task;
  auto group = el::spawn_local_group(sys, opt.nodes, base);
  auto& candidates = group.members;

  caf::scoped_actor me{sys};
  for (auto& [id, c] : candidates) {
    caf::anon_send(c, caf::subscribe_atom::value, caf::actor{me});
    caf::anon_send(c, conclave::election_atoms::start_atom::value);
  }

  std::printf("%zu candidates, %s election\n", opt.nodes,
              std::string{el::to_string(opt.algo)}.c_str());
  auto t0 = steady::now();
  auto first = wait_for_leader(me, el::no_node);
  auto ms = [](steady::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  std::printf("leader: %s, term %s, elected %.1f ms after start\n",
              el::to_string(first.self).c_str(), el::to_string(first.t).c_str(),
              ms(steady::now() - t0));
  std::this_thread::sleep_for(700ms); // let the coordinator task do some rounds

  std::printf("stopping leader %s gracefully (it resigns)...\n",
              el::to_string(first.self).c_str());
  auto t1 = steady::now();
  caf::anon_send_exit(candidates[first.self], caf::exit_reason::user_shutdown);
  auto second = wait_for_leader(me, first.self);
  std::printf("leader: %s, term %s, %.1f ms after the stop\n",
              el::to_string(second.self).c_str(), el::to_string(second.t).c_str(),
              ms(steady::now() - t1));
  std::this_thread::sleep_for(700ms);

  std::printf("crashing leader %s and its worker (no resign)...\n",
              el::to_string(second.self).c_str());
  auto t2 = steady::now();
  caf::anon_send_exit((*workers)[second.self.value], caf::exit_reason::kill);
  caf::anon_send_exit(candidates[second.self], caf::exit_reason::kill);
  auto third = wait_for_leader(me, second.self);
  std::printf("leader: %s, term %s, %.1f ms after the crash\n",
              el::to_string(third.self).c_str(), el::to_string(third.t).c_str(),
              ms(steady::now() - t2));
  std::this_thread::sleep_for(700ms);

  group.stop_all(caf::exit_reason::user_shutdown);
  for (auto& [id, w] : *workers)
    caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  bool ok = first.self != el::no_node && second.self != el::no_node
            && third.self != el::no_node && second.t > first.t && third.t > second.t;
  std::printf(ok ? "done: every failover elected a new leader with a higher term\n"
                 : "FAILED: a failover did not complete\n");
  return ok ? 0 : 1;
}
