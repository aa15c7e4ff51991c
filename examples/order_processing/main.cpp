// The Scheduler Agent Supervisor pattern's e-commerce example in one process
// (docs/patterns.md): orders are submitted as 3-step jobs — reserve stock, charge
// the card, ship — to a store; two schedulers drive them, two supervisors
// (one elected leader) recover lost steps, and one payment agent is killed
// while it works. The payment service is slow and flaky (transient failures
// the agents retry); some orders name an unknown SKU (permanent error → the
// order fails) or a bad address (shipping fails → the charge is refunded and
// the stock released, in reverse order). Every service is idempotent by the
// step's idempotency key and counts effects per key.
//
// Prints what happened to every order and a summary; exits 1 if an order did
// not finish in time or a key took effect twice.
//
//   order_processing [--orders 20] [--seed 7]
#include "actors/election/local_group.hpp"
#include "actors/store/store_host.hpp"
#include "actors/workflow/agent.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/scheduler.hpp"
#include "actors/workflow/supervisor.hpp"
#include "actors/workflow/test_service.hpp"
#include "storage/api/memory_log_device.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace wf = conclave::workflow;
namespace el = conclave::election;
namespace atoms = conclave::workflow_atoms;
using namespace std::chrono_literals;

namespace {

/// A service as a function, shared by agents on several threads: applies an
/// effect once per idempotency key, fails permanently on `bad` payloads.
struct idempotent_service {
  std::string bad;
  std::mutex mtx;
  std::map<std::string, int> effects;
  int deduplicated = 0;

  wf::service_fn fn() {
    return [this](const wf::service_call& c) {
      std::lock_guard<std::mutex> guard{mtx};
      wf::step_outcome o;
      if (!bad.empty() && c.payload.find(bad) != std::string::npos) {
        o.ok = false;
        o.kind = wf::failure_kind::permanent;
        o.error_kind = "rejected";
        o.message = "payload names " + bad;
        return o;
      }
      if (effects[c.idempotency_key]++ > 0) {
        --effects[c.idempotency_key];
        ++deduplicated;
      }
      return o;
    };
  }
};

int duplicates(const std::map<std::string, int>& effects) {
  int n = 0;
  for (auto& [k, v] : effects)
    n += v > 1 ? v - 1 : 0;
  return n;
}

} // namespace

int main(int argc, char** argv) {
  int orders = 20;
  uint64_t seed = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--orders"))
      orders = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed"))
      seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  if (orders <= 0 || orders > 10000) {
    std::fprintf(stderr, "order_processing: --orders must be 1..10000\n");
    return 2;
  }

  caf::actor_system_config cfg;
  conclave::store::add_store_types(cfg);
  wf::add_workflow_types(cfg);
  cfg.add_message_types<caf::id_block::conclave_election>();
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::mt19937_64 rng{seed};

  // The store (in memory here; store_actor over a state_manager is the
  // durable one with the same interface).
  conclave::store::store_host_options so;
  so.device = std::make_shared<conclave::store::memory_log_device>();
  auto store = conclave::store::spawn_store_host(sys, so);

  // Services: payment is an actor, slow and flaky; the others are functions.
  auto payment = std::make_shared<wf::test_service_state>();
  payment->slow_delay = 20ms;
  payment->otherwise = wf::test_behavior::slow;
  for (int i = 0; i < orders * 3; ++i)
    payment->script.push_back(rng() % 4 == 0 ? wf::test_behavior::transient
                                             : wf::test_behavior::slow);
  auto payment_service = wf::spawn_test_service(sys, payment);
  idempotent_service inventory, shipping, release, refund;
  inventory.bad = "sku-unknown";
  shipping.bad = "addr-bad";

  // Agents: two for payment, one for each other kind.
  std::vector<wf::agent_entry> agents;
  auto add_agent = [&](uint64_t id, std::string kind, wf::agent_options o) {
    o.id = id;
    o.seed = seed + id;
    agents.push_back(wf::agent_entry{id, kind, wf::spawn_agent(sys, std::move(o))});
  };
  wf::agent_options pay;
  pay.service = payment_service;
  add_agent(1, "payment", pay);
  add_agent(2, "payment", pay);
  auto with = [](idempotent_service& s) {
    wf::agent_options o;
    o.function = s.fn();
    return o;
  };
  add_agent(3, "inventory", with(inventory));
  add_agent(4, "shipping", with(shipping));
  add_agent(5, "release", with(release));
  add_agent(6, "refund", with(refund));

  // Two schedulers, two supervisors behind an elected leader.
  std::vector<wf::scheduler_actor> schedulers;
  for (uint64_t i = 1; i <= 2; ++i) {
    wf::scheduler_options o;
    o.self = wf::scheduler_ref{i, 1};
    o.store = store;
    o.agents = agents;
    schedulers.push_back(wf::spawn_scheduler(sys, o));
  }
  auto group = el::spawn_local_group(sys, 2, el::candidate_options{});
  std::vector<wf::supervisor_actor> supervisors;
  for (uint64_t i = 1; i <= 2; ++i) {
    wf::supervisor_options o;
    o.store = store;
    o.scan_interval = 20ms;
    o.candidate = group.members[el::node_id{i}];
    auto s = wf::spawn_supervisor(sys, o);
    for (auto& a : agents)
      caf::anon_send(s, atoms::watch_atom_v, a.id, caf::actor_cast<caf::actor>(a.handle),
                     false);
    for (size_t k = 0; k < schedulers.size(); ++k)
      caf::anon_send(s, atoms::watch_atom_v, uint64_t{k + 1},
                     caf::actor_cast<caf::actor>(schedulers[k]), true);
    caf::anon_send(group.members[el::node_id{i}], caf::subscribe_atom::value,
                   caf::actor_cast<caf::actor>(s));
    supervisors.push_back(s);
  }
  group.start_all();

  wf::client_options co;
  co.store = store;
  co.known_kinds = {"inventory", "payment", "shipping", "release", "refund"};
  auto client = wf::spawn_client(sys, co);

  // Submit the orders.
  auto self = std::make_unique<caf::scoped_actor>(sys);
  std::vector<wf::job_id> ids;
  for (int i = 1; i <= orders; ++i) {
    std::string item = i % 7 == 0 ? "sku-unknown" : "sku-" + std::to_string(i);
    std::string addr = i % 5 == 0 ? "addr-bad" : "addr-ok";
    wf::job_spec spec;
    spec.id = wf::job_id{"order-" + std::to_string(i)};
    spec.failure_threshold = 4;
    auto step = [](std::string kind, std::string payload,
                   std::optional<wf::compensation_spec> undo) {
      wf::step_spec s;
      s.agent_kind = std::move(kind);
      s.payload = std::move(payload);
      s.timeout = 300ms;
      s.retry.max_attempts = 3;
      s.retry.initial_interval = 5ms;
      s.compensation = std::move(undo);
      return s;
    };
    spec.steps = {
        step("inventory", item, wf::compensation_spec{"release", item}),
        step("payment", "card for " + spec.id.value,
             wf::compensation_spec{"refund", spec.id.value}),
        step("shipping", addr, std::nullopt),
    };
    (*self)
        ->request(client, 5s, atoms::submit_atom_v, spec)
        .receive([&](wf::job_id& id) { ids.push_back(id); },
                 [&](caf::error& e) {
                   std::fprintf(stderr, "submit failed: %s\n", caf::to_string(e).c_str());
                 });
  }

  // A payment agent dies while it works.
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 10));
  caf::anon_send_exit(agents[0].handle, caf::exit_reason::kill);
  std::printf("killed payment agent 1\n");

  // Wait until every order is final.
  std::map<std::string, wf::job_view> final_views;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (final_views.size() < ids.size() && std::chrono::steady_clock::now() < deadline) {
    for (auto& id : ids) {
      if (final_views.count(id.value))
        continue;
      (*self)
          ->request(client, 5s, caf::get_atom::value, id)
          .receive(
              [&](wf::job_view& v) {
                if (wf::is_final(v.job.state))
                  final_views.emplace(id.value, std::move(v));
              },
              [](caf::error&) {});
    }
    std::this_thread::sleep_for(20ms);
  }

  int processed = 0, failed = 0, compensated = 0, other = 0;
  for (auto& id : ids) {
    auto i = final_views.find(id.value);
    if (i == final_views.end()) {
      std::printf("%-9s NOT FINISHED\n", id.value.c_str());
      ++other;
      continue;
    }
    auto& v = i->second;
    auto& pay_step = v.steps[1];
    std::printf("%-9s %-11s payment attempts %u, recoveries %u%s%s\n", id.value.c_str(),
                wf::to_string(v.job.state), pay_step.attempt.value,
                pay_step.failure_count, v.job.last_error.empty() ? "" : "; ",
                v.job.last_error.c_str());
    switch (v.job.state) {
    case wf::job_state::processed:
      ++processed;
      break;
    case wf::job_state::error:
      ++failed;
      break;
    case wf::job_state::compensated:
      ++compensated;
      break;
    default:
      ++other;
    }
  }

  // Stop everything before reading the service counters.
  group.stop_all(caf::exit_reason::kill);
  for (auto& a : agents)
    caf::anon_send_exit(a.handle, caf::exit_reason::kill);
  for (auto& s : schedulers)
    caf::anon_send_exit(s, caf::exit_reason::kill);
  for (auto& s : supervisors)
    caf::anon_send_exit(s, caf::exit_reason::kill);
  caf::anon_send_exit(client, caf::exit_reason::kill);
  caf::anon_send_exit(payment_service, caf::exit_reason::kill);
  caf::anon_send_exit(store, caf::exit_reason::kill);
  self.reset();
  sys.await_all_actors_done();

  int dup = duplicates(payment->effects) + duplicates(inventory.effects)
            + duplicates(shipping.effects) + duplicates(release.effects)
            + duplicates(refund.effects);
  std::printf("orders: %d, processed: %d, failed: %d, compensated: %d, unfinished: %d, "
              "duplicate effects: %d\n",
              orders, processed, failed, compensated, other, dup);
  return other == 0 && dup == 0 ? 0 : 1;
}
