#include "runtime/embed/live_jobs.hpp"

#include "actors/replication/messages.hpp"
#include "protocols/workflow/explain.hpp"
#include "protocols/workflow/store_layout.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <mutex>
#include <set>
#include <thread>

namespace conclave::embed {

namespace wf = conclave::workflow;
namespace rp = conclave::replication;

namespace {

constexpr const char* not_running = "not running (the node's workflow actors are not up)";

wf::timestamp wall_now() {
  return std::chrono::duration_cast<wf::timestamp>(
      std::chrono::system_clock::now().time_since_epoch());
}

caf::timespan span(std::chrono::milliseconds t) {
  return std::chrono::duration_cast<caf::timespan>(t);
}

/// Every kind some node registered in wf.agents, or the error.
job_answer<std::set<std::string>> served_kinds(caf::scoped_actor& self,
                                               const caf::actor& repl,
                                               std::chrono::milliseconds timeout) {
  job_answer<std::set<std::string>> out;
  rp::list_request req;
  req.collection = wf::layout::agents;
  self->request(repl, span(timeout), req)
      .receive(
          [&](rp::list_result& r) {
            if (r.code != rp::errc::ok) {
              out.error =
                  "cannot read the agent kinds: " + std::string{rp::to_string(r.code)};
              return;
            }
            for (auto& it : r.items)
              for (auto& k : wf::layout::decode_kinds(it.value))
                out.value.insert(k);
          },
          [&](caf::error& e) {
            out.error = "cannot read the agent kinds: " + to_string(e);
          });
  return out;
}

} // namespace

job_status to_status(const wf::job_view& v, wf::timestamp now) {
  job_status s;
  s.id = v.job.id.value;
  s.state = wf::to_string(v.job.state);
  s.final = wf::is_final(v.job.state);
  for (auto& st : v.steps)
    s.steps.push_back(job_status::step{st.spec.agent_kind, wf::to_string(st.state),
                                       st.attempt.value, st.failure_count,
                                       st.last_error});
  if (!s.final)
    s.explanation = wf::to_string(wf::explain(v, now), now);
  return s;
}

void live_jobs::set(caf::actor_system& sys, wf::client_actor client, caf::actor repl,
                    std::set<std::string> local) {
  {
    std::unique_lock<std::shared_mutex> lk{mu_};
    if (closed_)
      return;
    sys_ = &sys;
    client_ = std::move(client);
    repl_ = std::move(repl);
    local_ = std::move(local);
  }
  cv_.notify_all();
}

void live_jobs::clear() {
  {
    std::unique_lock<std::shared_mutex> lk{mu_};
    closed_ = true;
    sys_ = nullptr;
    client_ = nullptr;
    repl_ = nullptr;
  }
  cv_.notify_all();
}

std::shared_lock<std::shared_mutex>
live_jobs::wait_running(std::chrono::milliseconds timeout) {
  std::shared_lock<std::shared_mutex> lk{mu_};
  cv_.wait_for(lk, timeout, [this] { return sys_ != nullptr || closed_; });
  return lk;
}

job_answer<std::string> live_jobs::submit(const job_request& job,
                                          std::chrono::milliseconds timeout) {
  auto lk = wait_running(timeout);
  job_answer<std::string> out;
  if (!sys_) {
    out.error = not_running;
    return out;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  caf::scoped_actor self{*sys_};
  // The kinds some node registered, and this node's own (registered a moment
  // after it starts); a kind missing may be a member still starting: read
  // again until the timeout.
  job_answer<std::set<std::string>> kinds;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    kinds = served_kinds(self, repl_, std::max(left, std::chrono::milliseconds{1}));
    if (!kinds) {
      out.error = kinds.error;
      return out;
    }
    kinds.value.insert(local_.begin(), local_.end());
    bool all = true;
    for (auto& st : job.steps)
      all = all && kinds.value.count(st.kind) > 0;
    if (all
        || std::chrono::steady_clock::now() + std::chrono::milliseconds{50} >= deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  wf::job_spec spec;
  spec.id = wf::job_id{job.id};
  spec.failure_threshold = job.failure_threshold;
  for (auto& st : job.steps) {
    if (!kinds.value.count(st.kind)) {
      out.error = "no node serves agent kind '" + st.kind + "'";
      return out;
    }
    wf::step_spec x;
    x.agent_kind = st.kind;
    x.payload = st.payload;
    x.timeout = std::chrono::duration_cast<wf::duration>(st.timeout);
    x.retry.max_attempts = st.attempts;
    spec.steps.push_back(std::move(x));
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  self->request(client_, span(std::max(left, std::chrono::milliseconds{1})),
                workflow_atoms::submit_atom_v, std::move(spec))
      .receive([&](wf::job_id& id) { out.value = id.value; },
               [&](caf::error& e) { out.error = sys_->render(e); });
  return out;
}

job_answer<job_status> live_jobs::get(const std::string& id,
                                      std::chrono::milliseconds timeout) {
  auto lk = wait_running(timeout);
  job_answer<job_status> out;
  if (!sys_) {
    out.error = not_running;
    return out;
  }
  caf::scoped_actor self{*sys_};
  self->request(client_, span(timeout), caf::get_atom_v, wf::job_id{id})
      .receive([&](wf::job_view& v) { out.value = to_status(v, wall_now()); },
               [&](caf::error& e) { out.error = sys_->render(e); });
  return out;
}

template <class Atom>
job_answer<std::string> live_jobs::state_call(Atom atom, const std::string& id,
                                              std::chrono::milliseconds timeout) {
  auto lk = wait_running(timeout);
  job_answer<std::string> out;
  if (!sys_) {
    out.error = not_running;
    return out;
  }
  caf::scoped_actor self{*sys_};
  self->request(client_, span(timeout), atom, wf::job_id{id})
      .receive([&](wf::step_state& s) { out.value = wf::to_string(s); },
               [&](caf::error& e) { out.error = sys_->render(e); });
  return out;
}

job_answer<std::string> live_jobs::cancel(const std::string& id,
                                          std::chrono::milliseconds timeout) {
  return state_call(workflow_atoms::cancel_atom_v, id, timeout);
}

job_answer<std::string> live_jobs::resubmit(const std::string& id,
                                            std::chrono::milliseconds timeout) {
  return state_call(workflow_atoms::resubmit_atom_v, id, timeout);
}

job_answer<std::vector<std::string>> live_jobs::list(const std::string& state,
                                                     std::chrono::milliseconds timeout) {
  job_answer<std::vector<std::string>> out;
  std::optional<wf::step_state> s;
  for (uint8_t i = 0; i <= static_cast<uint8_t>(wf::step_state::cancelled); ++i)
    if (state == wf::to_string(static_cast<wf::step_state>(i)))
      s = static_cast<wf::step_state>(i);
  if (!s) {
    out.error = "no such state '" + state + "'";
    return out;
  }
  auto lk = wait_running(timeout);
  if (!sys_) {
    out.error = not_running;
    return out;
  }
  caf::scoped_actor self{*sys_};
  self->request(client_, span(timeout), workflow_atoms::list_atom_v, *s)
      .receive(
          [&](std::vector<wf::job_id>& ids) {
            for (auto& j : ids)
              out.value.push_back(std::move(j.value));
          },
          [&](caf::error& e) { out.error = sys_->render(e); });
  return out;
}

} // namespace conclave::embed
