#include "runtime/embed/http_backends.hpp"

#include "actors/replication/messages.hpp"
#include "actors/store/type_ids.hpp"
#include "actors/workflow/type_ids.hpp"
#include "runtime/node/http_jobs.hpp"
#include "runtime/node/http_kv.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

namespace conclave::embed {

namespace rp = conclave::replication;
namespace wf = conclave::workflow;
namespace atoms = conclave::workflow_atoms;

namespace {

/// How long a call waits past the client's deadline for the answer the
/// client gives when that deadline passes.
constexpr std::chrono::milliseconds margin{200};

class actor_kv_store final : public node::kv_store {
public:
  actor_kv_store(caf::actor_system& sys, caf::actor repl, std::chrono::milliseconds d)
      : sys_{sys}, repl_{std::move(repl)}, wait_{d + margin} {}

  rp::read_result get(const rp::read_request& req) override {
    return ask<rp::read_result>(req, rp::errc::timeout);
  }
  rp::list_result list(const rp::list_request& req) override {
    return ask<rp::list_result>(req, rp::errc::timeout);
  }
  rp::txn_result transact(const rp::txn_request& req) override {
    // No answer from the client actor itself: the write may have been sent.
    return ask<rp::txn_result>(req, rp::errc::outcome_unknown);
  }

private:
  template <class Result, class Request>
  Result ask(const Request& req, rp::errc unanswered) {
    Result out;
    out.code = unanswered;
    caf::scoped_actor self{sys_};
    self->request(repl_, caf::timespan{wait_}, req)
        .receive([&](Result& r) { out = std::move(r); }, [&](caf::error&) {});
    return out;
  }

  caf::actor_system& sys_;
  caf::actor repl_;
  std::chrono::milliseconds wait_;
};

class actor_jobs final : public node::jobs_service {
public:
  actor_jobs(caf::actor_system& sys, wf::client_actor client, std::chrono::milliseconds d)
      : sys_{sys}, client_{std::move(client)}, wait_{d + margin} {}

  node::job_call<wf::job_id> submit(const wf::job_spec& spec) override {
    return ask<wf::job_id>(atoms::submit_atom_v, spec);
  }
  node::job_call<wf::job_view> get(const wf::job_id& id) override {
    return ask<wf::job_view>(caf::get_atom_v, id);
  }
  node::job_call<std::vector<wf::job_id>> list(wf::step_state s) override {
    return ask<std::vector<wf::job_id>>(atoms::list_atom_v, s);
  }
  node::job_call<wf::step_state> cancel(const wf::job_id& id) override {
    return ask<wf::step_state>(atoms::cancel_atom_v, id);
  }
  node::job_call<wf::step_state> resubmit(const wf::job_id& id) override {
    return ask<wf::step_state>(atoms::resubmit_atom_v, id);
  }
  node::job_call<wf::stuck_report> explain(const wf::job_id& id) override {
    return ask<wf::stuck_report>(atoms::explain_atom_v, id);
  }
  wf::timestamp now() override {
    return std::chrono::duration_cast<wf::timestamp>(
        std::chrono::system_clock::now().time_since_epoch());
  }

private:
  template <class Result, class... Ts>
  node::job_call<Result> ask(Ts&&... xs) {
    node::job_call<Result> out;
    caf::scoped_actor self{sys_};
    self->request(client_, caf::timespan{wait_}, std::forward<Ts>(xs)...)
        .receive([&](Result& r) { out.value = std::move(r); },
                 [&](caf::error& e) {
                   out.code = wf::to_errc(e);
                   auto se = store::to_errc(e);
                   // No job was ever written: the store has no such collection.
                   if (se == store::errc::unknown_collection)
                     out.code = wf::errc::unknown_job;
                   // The adapter's answer for a replication request that
                   // timed out or kept conflicting.
                   out.timed_out =
                       e == caf::sec::request_timeout || se == store::errc::lock_timeout;
                   out.error = sys_.render(e);
                 });
    return out;
  }

  caf::actor_system& sys_;
  wf::client_actor client_;
  std::chrono::milliseconds wait_;
};

} // namespace

node::http_backends make_http_backends(caf::actor_system& sys, caf::actor repl,
                                       wf::client_actor jobs,
                                       std::chrono::milliseconds deadline) {
  node::http_backends b;
  b.kv = std::make_shared<actor_kv_store>(sys, std::move(repl), deadline);
  b.jobs = std::make_shared<actor_jobs>(sys, std::move(jobs), deadline);
  return b;
}

} // namespace conclave::embed
