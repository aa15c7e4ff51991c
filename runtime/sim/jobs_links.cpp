#include "runtime/sim/jobs_links.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <optional>
#include <unordered_map>

namespace conclave::sim {

namespace {

using namespace conclave::workflow;

using forward_atom = caf::atom_constant<caf::atom("jl_fwd")>;
using answer_atom = caf::atom_constant<caf::atom("jl_answer")>;
using promise = caf::typed_response_promise<step_outcome>;

struct link_state {
  std::shared_ptr<link_faults> faults;
  std::shared_ptr<link_target> target;
  /// Requests on their way to the target; no promise: a duplicate copy.
  std::unordered_map<uint64_t, std::pair<caf::message, std::optional<promise>>> outbound;
  /// Replies on their way back.
  std::unordered_map<uint64_t, std::pair<promise, caf::expected<step_outcome>>> inbound;
  /// Promises of lost messages: never answered.
  std::vector<promise> lost;
  uint64_t next = 1;
  static inline const char* name = "conclave.sim.link";
};

using link_ptr = caf::stateful_actor<link_state>*;

bool faulty(link_ptr self) {
  return self->clock().now() < self->state.faults->heal_at;
}

bool coin(link_faults& f, double p) {
  if (p <= 0)
    return false;
  return std::uniform_real_distribution<double>{0.0, 1.0}(f.rng) < p;
}

caf::timespan draw_delay(link_faults& f) {
  auto lo = f.delay_min.count();
  auto hi = f.delay_max.count();
  auto d = lo == hi ? lo : std::uniform_int_distribution<int64_t>{lo, hi}(f.rng);
  return caf::timespan{d};
}

/// Sends (a copy of) a request on its way; `rp` is empty for a duplicate.
void launch(link_ptr self, caf::message request, std::optional<promise> rp) {
  auto& st = self->state;
  auto id = st.next++;
  st.outbound.emplace(id, std::make_pair(std::move(request), std::move(rp)));
  self->delayed_send(self, draw_delay(*st.faults), forward_atom::value, id);
}

caf::result<step_outcome> accept(link_ptr self, caf::message request) {
  auto& st = self->state;
  auto& f = *st.faults;
  ++f.messages;
  auto rp = self->make_response_promise<step_outcome>();
  if (faulty(self) && coin(f, f.loss)) {
    ++f.lost;
    st.lost.push_back(rp);
    return rp;
  }
  if (faulty(self) && coin(f, f.dup)) {
    ++f.duplicated;
    launch(self, request, std::nullopt);
  }
  launch(self, std::move(request), rp);
  return rp;
}

/// The service link: what the test service does with this call.
void choose_behavior(link_ptr self) {
  auto& st = self->state;
  auto& svc = *st.target->service;
  auto now = self->clock().now();
  auto b = test_behavior::ok;
  for (auto& w : st.faults->windows)
    if (w.from <= now && now < w.until && coin(*st.faults, w.probability)) {
      b = w.behavior;
      break;
    }
  svc.script.push_back(b);
}

void forward(link_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.outbound.find(id);
  if (i == st.outbound.end())
    return;
  auto [request, rp] = std::move(i->second);
  st.outbound.erase(i);
  if (st.target->service)
    choose_behavior(self);
  auto answer = [self, rp = rp](caf::expected<step_outcome> x) {
    if (!rp)
      return; // the duplicate's reply: the requester is answered once
    auto& st = self->state;
    auto& f = *st.faults;
    ++f.messages;
    if (faulty(self) && coin(f, f.loss)) {
      ++f.lost;
      st.lost.push_back(*rp);
      return;
    }
    auto back = st.next++;
    st.inbound.emplace(back, std::make_pair(*rp, std::move(x)));
    self->delayed_send(self, draw_delay(f), answer_atom::value, back);
  };
  self->request(st.target->handle, caf::infinite, std::move(request))
      .then([answer](step_outcome& o) { answer(std::move(o)); },
            [answer](caf::error& e) { answer(std::move(e)); });
}

caf::behavior make_link(link_ptr self, std::shared_ptr<link_faults> faults,
                        std::shared_ptr<link_target> target) {
  self->state.faults = std::move(faults);
  self->state.target = std::move(target);
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  return {
      [self](dispatch& d) -> caf::result<step_outcome> {
        return accept(self, caf::make_message(std::move(d)));
      },
      [self](service_call& c) -> caf::result<step_outcome> {
        return accept(self, caf::make_message(std::move(c)));
      },
      [self](forward_atom, uint64_t id) { forward(self, id); },
      [self](answer_atom, uint64_t id) {
        auto& st = self->state;
        auto i = st.inbound.find(id);
        if (i == st.inbound.end())
          return;
        auto [rp, x] = std::move(i->second);
        st.inbound.erase(i);
        if (x)
          rp.deliver(std::move(*x));
        else
          rp.deliver(std::move(x.error()));
      },
  };
}

caf::actor spawn_link(caf::actor_system& sys, std::shared_ptr<link_faults> faults,
                      std::shared_ptr<link_target> target) {
  return sys.spawn(make_link, std::move(faults), std::move(target));
}

} // namespace

agent_actor spawn_agent_link(caf::actor_system& sys, std::shared_ptr<link_faults> faults,
                             std::shared_ptr<link_target> target) {
  return caf::actor_cast<agent_actor>(
      spawn_link(sys, std::move(faults), std::move(target)));
}

service_actor spawn_service_link(caf::actor_system& sys,
                                 std::shared_ptr<link_faults> faults,
                                 std::shared_ptr<link_target> target) {
  return caf::actor_cast<service_actor>(
      spawn_link(sys, std::move(faults), std::move(target)));
}

} // namespace conclave::sim
