// conclave job submit|get|list|cancel|resubmit|explain|watch: workflow jobs
// of a running cluster from the shell (docs/jobs.md).
//
// The nodes host the schedulers, agents and supervisor; a job's state lives
// in the cluster's replicated store. This command runs the workflow client
// actor (actors/workflow/client.hpp) in its own process, over the same chain
// the nodes use:
//
//   store_connection (the access flags of `conclave kv`)
//     -> replication client actor (finds the primary, retries)
//     -> replicated store adapter (actors/workflow/replicated_store.hpp)
//     -> workflow client actor, asked from a scoped_actor.
//
// submit reads the kinds the nodes' agents serve (every wf.agents row)
// first: a step naming another kind is bad input (exit 2), nothing is
// written. Generated ids carry a random prefix ("j" + 8 hex digits), so two
// shells never generate the same one.
//
// Time bounds: every request to the cluster is bounded by --timeout-ms (plus
// a small margin for the answer to come back); --wait and watch poll every
// 100 ms until the job is final or --wait-timeout passes. The process ends
// with _Exit, like kv (a frozen member's unfinished TLS handshake would hold
// up CAF's orderly shutdown).
#include "runtime/cli/access_flags.hpp"
#include "runtime/cli/commands.hpp"

#include "actors/replication/client.hpp"
#include "actors/store/store_interface.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/replicated_store.hpp"
#include "actors/workflow/type_ids.hpp"
#include "protocols/workflow/store_layout.hpp"
#include "runtime/cli/job_input.hpp"
#include "runtime/cli/job_output.hpp"
#include "runtime/cluster/store_access.hpp"
#include "runtime/lock/duration_text.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <variant>

namespace conclave::cli {

namespace {

namespace rp = conclave::replication;
namespace wf = conclave::workflow;
namespace atoms = conclave::workflow_atoms;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

/// How long a scoped request waits past --timeout-ms for the answer the
/// client chain gives when its own deadline passes.
constexpr ms answer_margin{150};
/// Polling period of --wait and watch.
constexpr ms poll_period{100};

struct job_options {
  cluster::store_access access;
  unsigned timeout_ms = 5000;
  bool json = false;
  // submit
  std::string id;
  std::string step_timeout = "30s";
  uint32_t attempts = 0;
  uint32_t failure_threshold = 0;
  std::string file;
  bool wait = false;
  std::string wait_timeout = "0";
  std::vector<std::string> steps;
  // get, cancel, resubmit, explain, watch
  std::string job;
  // list
  std::string state;
  uint32_t limit = 1000;

  CLI::App* submit = nullptr;
  CLI::App* get = nullptr;
  CLI::App* list = nullptr;
  CLI::App* cancel = nullptr;
  CLI::App* resubmit = nullptr;
  CLI::App* explain = nullptr;
  CLI::App* watch = nullptr;
};

[[noreturn]] void exit_now(int status) {
  std::cout.flush();
  std::cerr.flush();
  if (std::fflush(nullptr) != 0 || !std::cout)
    status = status == exit_ok ? exit_failure : status;
  std::_Exit(status);
}

int fail(const std::string& why) {
  std::cerr << "conclave: error: " << why << '\n';
  return exit_failure;
}

/// The workflow's time as the nodes keep it: wall-clock time since the Unix
/// epoch (their actors' clock_offset), comparable across hosts within their
/// clock skew.
wf::timestamp now() {
  return std::chrono::duration_cast<wf::timestamp>(
      std::chrono::system_clock::now().time_since_epoch());
}

/// What turns this process's actor clock (steady) into the workflow's time.
wf::duration clock_offset() {
  return now()
         - std::chrono::duration_cast<wf::timestamp>(
             clock_type::now().time_since_epoch());
}

/// "j" and 8 random hex digits: the prefix of the ids this process
/// generates ("j1f03a9c2-1").
std::string random_id_prefix() {
  std::random_device rd;
  std::mt19937_64 rng{
      (static_cast<uint64_t>(rd()) << 32) ^ rd()
      ^ static_cast<uint64_t>(clock_type::now().time_since_epoch().count())};
  char buf[16];
  std::snprintf(buf, sizeof buf, "j%08x", static_cast<unsigned>(rng() & 0xffffffffu));
  return buf;
}

std::vector<uint64_t> ids_of(const std::map<uint64_t, node::address>& members) {
  std::vector<uint64_t> out;
  for (auto& [id, addr] : members)
    out.push_back(id);
  return out;
}

/// The client chain of one command: connection, replication client, store
/// adapter, workflow client.
class job_session {
public:
  job_session(job_options& o, const std::map<uint64_t, node::address>& members)
      : o_(o), timeout_(o.timeout_ms), members_(members.size()), ids_(ids_of(members)),
        conn_(o.access, members, std::min<ms>(timeout_, 1s),
              [](caf::actor_system_config& cfg) {
                store::add_store_types(cfg);
                wf::add_workflow_types(cfg);
                cfg.add_message_types<caf::id_block::conclave_election>();
              }) {
    conn_.wait_ready(std::min<ms>(timeout_, 200ms));
    auto copts = conn_.client_options();
    copts.deadline = timeout_;
    copts.attempt_timeout = std::min<caf::timespan>(timeout_, 1s);
    copts.on_problem = [](const std::string& what) { client_problem().set(what); };
    kv_ = std::make_unique<rp::kv_client>(conn_.system(), copts);
  }

  caf::actor_system& system() { return conn_.system(); }
  const std::vector<uint64_t>& member_ids() const { return ids_; }

  /// Whether this process reaches member `id` now (a node it cannot reach
  /// is taken as not live), after giving every member a moment to connect.
  bool reaches(uint64_t id) {
    if (!waited_) {
      conn_.directory().wait_connected(members_, std::min<ms>(timeout_, 500ms));
      waited_ = true;
    }
    return static_cast<bool>(conn_.directory().lookup(id));
  }
  rp::kv_client& kv() { return *kv_; }

  /// Starts the workflow client; `kinds`: those submissions may name.
  void start_client(std::set<std::string> kinds) {
    wf::replicated_store_options sopts;
    sopts.client = kv_->actor();
    sopts.request_timeout = timeout_ + answer_margin / 2;
    store_ = wf::spawn_replicated_store(system(), sopts);
    wf::client_options c;
    c.store = store_;
    c.known_kinds = std::move(kinds);
    c.id_prefix = random_id_prefix();
    c.clock_offset = clock_offset();
    client_ = wf::spawn_client(system(), std::move(c));
  }

  /// Asks the workflow client; true with `out` set, or false with `error`
  /// holding the line to print (and `code` the workflow error, if any).
  template <class Result, class... Ts>
  bool ask(Result& out, std::string& error, std::optional<wf::errc>& code, Ts&&... xs) {
    caf::scoped_actor self{system()};
    bool ok = false;
    self->request(client_, timeout_ + answer_margin, std::forward<Ts>(xs)...)
        .receive(
            [&](Result& r) {
              out = std::move(r);
              ok = true;
            },
            [&](caf::error& e) {
              code = wf::to_errc(e);
              // No job was ever written: the store has no such collection.
              if (store::to_errc(e) == store::errc::unknown_collection)
                code = wf::errc::unknown_job;
              error = describe(e);
            });
    return ok;
  }

  std::string describe(const caf::error& e) {
    if (e == caf::sec::request_timeout)
      return "no answer within " + std::to_string(o_.timeout_ms) + " ms"
             + problem_suffix();
    // The adapter answers lock_timeout for a replication request that timed
    // out or conflicted, after the client ran the change again.
    if (store::to_errc(e) == store::errc::lock_timeout)
      return "the cluster did not settle the request within "
             + std::to_string(o_.timeout_ms) + " ms (no answer in time, or other "
             + "writers kept conflicting)" + problem_suffix();
    return system().render(e) + problem_suffix();
  }

  std::string problem_suffix() {
    std::string seen;
    if (auto attempt = client_problem().get(); !attempt.empty())
      seen = "last attempt: " + attempt;
    if (auto c = conn_.directory().last_error(); !c.empty())
      seen += (seen.empty() ? "" : "; ") + std::string{"last connection error: "} + c;
    return seen.empty() ? std::string{} : " (" + seen + ")";
  }

private:
  job_options& o_;
  ms timeout_;
  size_t members_;
  std::vector<uint64_t> ids_;
  bool waited_ = false;
  cluster::store_connection conn_;
  std::unique_ptr<rp::kv_client> kv_;
  store::store_actor store_;
  wf::client_actor client_;
};

// -- reading the served kinds -------------------------------------------------------

/// The wf.agents rows: node id -> the kinds it serves (empty if none yet).
std::optional<std::string> agent_rows(job_session& s,
                                      std::map<uint64_t, std::set<std::string>>& out) {
  std::string after;
  for (int page = 0; page < 1000; ++page) {
    auto r = s.kv().list(wf::layout::agents, "", 0, after);
    if (r.code == rp::errc::unknown_collection)
      return std::nullopt;
    if (r.code != rp::errc::ok) {
      auto why = r.code == rp::errc::timeout ? std::string{"no answer in time"}
                                             : std::string{rp::to_string(r.code)};
      return "reading the agent kinds the nodes serve (" + std::string{wf::layout::agents}
             + "): " + why + s.problem_suffix();
    }
    for (auto& item : r.items) {
      uint64_t id = 0;
      auto [p, ec] =
          std::from_chars(item.key.data(), item.key.data() + item.key.size(), id);
      if (ec == std::errc{} && p == item.key.data() + item.key.size())
        out[id] = wf::layout::decode_kinds(item.value);
    }
    if (!r.more || r.items.empty())
      return std::nullopt;
    after = r.items.back().key;
  }
  return std::nullopt;
}

/// For a job whose current step waits to be claimed: "no live agent of kind
/// X (...)" when no member this process reaches serves the step's kind;
/// empty otherwise (or when it cannot tell).
std::string agent_gap(job_session& s, const wf::stuck_report& r,
                      const std::map<uint64_t, std::set<std::string>>& rows) {
  if (!r.step || r.current_state != wf::step_state::pending)
    return {};
  wf::job_view v;
  std::string error;
  std::optional<wf::errc> code;
  if (!s.ask(v, error, code, caf::get_atom_v, r.job) || r.step->value >= v.steps.size())
    return {};
  auto& spec = v.steps[r.step->value].spec;
  std::string kind = spec.agent_kind;
  if (r.compensation) {
    if (!spec.compensation)
      return {};
    kind = spec.compensation->agent_kind;
  }
  std::vector<uint64_t> serving;
  for (auto& [id, kinds] : rows)
    if (kinds.count(kind)) {
      if (s.reaches(id))
        return {};
      serving.push_back(id);
    }
  std::string why = "no live agent of kind " + kind;
  if (serving.empty())
    return why + " (no node serves it)";
  why += " (served by node";
  why += serving.size() > 1 ? "s " : " ";
  for (size_t i = 0; i < serving.size(); ++i)
    why += (i ? ", " : "") + std::to_string(serving[i]);
  return why + ", not reachable)";
}

// -- the subcommands ------------------------------------------------------------------

/// A failed request to the client, as exit status and line.
int request_failed(const job_options& o, const std::string& what,
                   const std::optional<wf::errc>& code, const std::string& error) {
  if (code == wf::errc::unknown_job)
    return fail("no job '" + job::shown(o.job, 200) + "'");
  if (code == wf::errc::unknown_agent_kind || code == wf::errc::empty_job
      || code == wf::errc::too_large || code == wf::errc::bad_argument
      || code == wf::errc::zero_timeout) {
    std::cerr << "conclave: error: " << what << ": " << error << '\n';
    return exit_bad_input;
  }
  return fail(what + ": " + error);
}

/// Polls the job until it is final: its view, or the status to exit with.
std::variant<wf::job_view, int> wait_final(job_options& o, job_session& s,
                                           const std::string& id,
                                           std::chrono::nanoseconds wait_for) {
  auto until = clock_type::now() + wait_for;
  for (;;) {
    wf::job_view v;
    std::string error;
    std::optional<wf::errc> code;
    if (!s.ask(v, error, code, caf::get_atom::value, wf::job_id{id}))
      return request_failed(o, "job " + job::shown(id, 200), code, error);
    if (wf::is_final(v.job.state))
      return v;
    if (wait_for.count() > 0 && clock_type::now() >= until)
      return fail("job " + job::shown(id, 200) + " is still " + wf::to_string(v.job.state)
                  + " after --wait-timeout " + lock::format_duration(wait_for));
    std::this_thread::sleep_for(poll_period);
  }
}

int run_submit(job_options& o, job_session& s, const wf::job_spec& spec,
               std::chrono::nanoseconds wait_for) {
  // A kind is unknown for sure once every member has registered its kinds;
  // right after the cluster started some may not have yet: read again for
  // a moment then.
  std::set<std::string> kinds;
  auto until = clock_type::now() + std::min<ms>(ms{o.timeout_ms}, 3s);
  for (;;) {
    std::map<uint64_t, std::set<std::string>> rows;
    if (auto e = agent_rows(s, rows))
      return fail(*e);
    kinds.clear();
    for (auto& [id, ks] : rows)
      kinds.insert(ks.begin(), ks.end());
    auto bad = job::check_kinds(spec, kinds);
    if (!bad)
      break;
    bool all_registered = true;
    for (auto id : s.member_ids())
      all_registered = all_registered && rows.count(id) > 0;
    if (all_registered || clock_type::now() >= until)
      return bad_input(*bad);
    std::this_thread::sleep_for(50ms);
  }
  s.start_client(kinds);
  wf::job_id id;
  std::string error;
  std::optional<wf::errc> code;
  if (!s.ask(id, error, code, atoms::submit_atom_v, spec)) {
    if (code == wf::errc::job_exists)
      return fail("a job '" + job::shown(spec.id.value, 200) + "' exists already");
    return request_failed(o, "submit", code, error);
  }
  if (!o.wait) {
    if (o.json)
      std::cout << job::dump(nlohmann::json{{"id", id.value}}) << '\n';
    else
      std::cout << id.value << '\n';
    return exit_ok;
  }
  if (!o.json)
    std::cout << id.value << std::endl;
  o.job = id.value;
  auto r = wait_final(o, s, id.value, wait_for);
  if (auto* status = std::get_if<int>(&r))
    return *status;
  auto& v = std::get<wf::job_view>(r);
  if (o.json)
    std::cout << job::dump(job::to_json(v, now())) << '\n';
  else
    std::cout << job::job_table(v, now());
  return v.job.state == wf::job_state::processed ? exit_ok : exit_failure;
}

int run_get(job_options& o, job_session& s) {
  wf::job_view v;
  std::string error;
  std::optional<wf::errc> code;
  if (!s.ask(v, error, code, caf::get_atom::value, wf::job_id{o.job}))
    return request_failed(o, "get", code, error);
  if (o.json)
    std::cout << job::dump(job::to_json(v, now())) << '\n';
  else
    std::cout << job::job_table(v, now());
  return exit_ok;
}

int run_list(job_options& o, job_session& s, std::optional<wf::step_state> state) {
  std::vector<wf::step_state> states;
  if (state)
    states.push_back(*state);
  else
    for (uint8_t i = 0; i < wf::step_state_count; ++i)
      states.push_back(static_cast<wf::step_state>(i));
  std::vector<job::list_row> rows;
  std::set<std::string> seen; // a job that moved between two reads is listed once
  bool truncated = false;
  for (auto st : states) {
    std::vector<wf::job_id> ids;
    std::string error;
    std::optional<wf::errc> code;
    if (!s.ask(ids, error, code, atoms::list_atom_v, st)) {
      if (code == wf::errc::unknown_job)
        continue; // no job was ever submitted
      return request_failed(o, std::string{"list "} + wf::to_string(st), code, error);
    }
    for (auto& id : ids) {
      if (!seen.insert(id.value).second)
        continue;
      if (o.limit != 0 && rows.size() >= o.limit) {
        truncated = true;
        break;
      }
      rows.push_back({std::move(id), st});
    }
  }
  if (o.json) {
    std::cout << job::dump(job::list_json(rows, truncated)) << '\n';
  } else {
    std::cout << job::list_table(rows);
    if (truncated)
      std::cerr << "conclave: more jobs follow (raise --limit)\n";
  }
  return exit_ok;
}

int run_change(job_options& o, job_session& s, bool cancel) {
  wf::step_state st{};
  std::string error;
  std::optional<wf::errc> code;
  bool ok = cancel ? s.ask(st, error, code, atoms::cancel_atom_v, wf::job_id{o.job})
                   : s.ask(st, error, code, atoms::resubmit_atom_v, wf::job_id{o.job});
  const char* what = cancel ? "cancel" : "resubmit";
  if (!ok) {
    if (code == wf::errc::wrong_state || code == wf::errc::illegal_transition)
      return fail(
          std::string{what} + ": job '" + job::shown(o.job, 200) + "' "
          + (cancel ? "is finished already" : "is not failed, compensated or cancelled")
          + " (see `conclave job get`)");
    return request_failed(o, what, code, error);
  }
  if (o.json)
    std::cout << job::dump(nlohmann::json{{"id", o.job}, {"state", wf::to_string(st)}})
              << '\n';
  else
    std::cout << job::shown(o.job, 200) << ' ' << wf::to_string(st) << '\n';
  return exit_ok;
}

int run_explain(job_options& o, job_session& s) {
  std::string error;
  std::optional<wf::errc> code;
  std::map<uint64_t, std::set<std::string>> rows;
  bool rows_read = !agent_rows(s, rows);
  // One line per job: the stored report, and why nothing claims its step
  // when no live node serves the step's kind.
  auto print = [&](const wf::stuck_report& r, wf::timestamp t) {
    auto gap = rows_read ? agent_gap(s, r, rows) : std::string{};
    if (o.json) {
      auto j = job::to_json(r, t);
      if (!gap.empty())
        j["waits_for"] = gap;
      return job::dump(j);
    }
    auto line = job::report_line(r, t);
    return gap.empty() ? line : line + "; waits: " + gap;
  };
  if (!o.job.empty()) {
    wf::stuck_report r;
    if (!s.ask(r, error, code, atoms::explain_atom_v, wf::job_id{o.job}))
      return request_failed(o, "explain", code, error);
    std::cout << print(r, now()) << '\n';
    return exit_ok;
  }
  std::vector<wf::stuck_report> reports;
  if (!s.ask(reports, error, code, atoms::explain_atom_v)
      && code != wf::errc::unknown_job) // no job was ever submitted
    return request_failed(o, "explain", code, error);
  auto t = now();
  if (o.json) {
    auto all = nlohmann::json::array();
    for (auto& r : reports)
      all.push_back(nlohmann::json::parse(print(r, t)));
    std::cout << job::dump(nlohmann::json{{"jobs", all}}) << '\n';
  } else {
    for (auto& r : reports)
      std::cout << print(r, t) << '\n';
  }
  return exit_ok;
}

int run_watch(job_options& o, job_session& s, std::chrono::nanoseconds wait_for) {
  auto until = clock_type::now() + wait_for;
  uint64_t next = 1;
  wf::job_id id{o.job};
  auto drain = [&]() -> std::optional<int> {
    std::vector<wf::job_event> evs;
    std::string error;
    std::optional<wf::errc> code;
    if (!s.ask(evs, error, code, atoms::events_atom_v, id, next))
      return request_failed(o, "watch", code, error);
    for (auto& e : evs) {
      if (e.seq < next)
        continue;
      if (o.json)
        std::cout << job::dump(job::to_json(e)) << '\n';
      else
        std::cout << job::event_line(e) << '\n';
      next = e.seq + 1;
    }
    std::cout.flush();
    return std::nullopt;
  };
  for (;;) {
    if (auto status = drain())
      return *status;
    wf::job_view v;
    std::string error;
    std::optional<wf::errc> code;
    if (!s.ask(v, error, code, caf::get_atom::value, id))
      return request_failed(o, "watch", code, error);
    if (wf::is_final(v.job.state)) {
      // Every event committed before the final state was read.
      if (auto status = drain())
        return *status;
      return v.job.state == wf::job_state::processed ? exit_ok : exit_failure;
    }
    if (wait_for.count() > 0 && clock_type::now() >= until)
      return fail("job " + job::shown(o.job, 200) + " is still "
                  + wf::to_string(v.job.state) + " after --wait-timeout "
                  + lock::format_duration(wait_for));
    std::this_thread::sleep_for(poll_period);
  }
}

/// Checks the input, connects and runs the subcommand.
int run_job(job_options& o) {
  if (auto e = cluster::settle_access(o.access))
    return bad_input(*e);
  std::map<uint64_t, node::address> members;
  if (auto e = cluster::parse_members(o.access, members))
    return bad_input(*e);
  if (o.timeout_ms == 0)
    return bad_input("--timeout-ms: expected a positive number of milliseconds");
  std::chrono::nanoseconds wait_for{0};
  if (o.submit->parsed() || o.watch->parsed()) {
    auto w = lock::parse_duration(o.wait_timeout);
    if (!w)
      return bad_input("--wait-timeout: " + w.error());
    wait_for = w.value();
  }
  wf::job_spec spec;
  if (o.submit->parsed()) {
    job::submit_flags f;
    if (o.submit->count("--id") > 0)
      f.id = o.id;
    if (o.submit->count("--timeout") > 0) {
      auto t = lock::parse_duration(o.step_timeout);
      if (!t)
        return bad_input("--timeout: " + t.error());
      f.timeout = t.value();
    }
    if (o.submit->count("--attempts") > 0)
      f.attempts = o.attempts;
    if (o.submit->count("--failure-threshold") > 0)
      f.failure_threshold = o.failure_threshold;
    if (!o.file.empty() && !o.steps.empty())
      return bad_input("give STEP... or --file SPEC.json, not both");
    auto r =
        o.file.empty() ? job::spec_from_args(o.steps, f) : job::spec_from_file(o.file, f);
    if (!r)
      return bad_input(r.error());
    spec = std::move(r.value());
  }
  std::optional<wf::step_state> state;
  if (o.list->parsed() && !o.state.empty()) {
    state = job::parse_state(o.state);
    if (!state)
      return bad_input("--state: expected pending, processing, processed, error, "
                       "compensating, compensated or cancelled, got '"
                       + job::shown(o.state) + "'");
  }
  job_session s{o, members};
  if (o.submit->parsed())
    exit_now(run_submit(o, s, spec, wait_for));
  s.start_client({});
  if (o.get->parsed())
    exit_now(run_get(o, s));
  if (o.list->parsed())
    exit_now(run_list(o, s, state));
  if (o.cancel->parsed())
    exit_now(run_change(o, s, true));
  if (o.resubmit->parsed())
    exit_now(run_change(o, s, false));
  if (o.explain->parsed())
    exit_now(run_explain(o, s));
  exit_now(run_watch(o, s, wait_for));
}

/// The flags every job subcommand takes: how to reach the cluster, the
/// request bound, --json.
void add_common_flags(CLI::App* sub, job_options& o) {
  add_access_flags(sub, o.access);
  option(sub, "--timeout-ms", o.timeout_ms,
         "give up on a request to the cluster after this (exit 1)")
      ->capture_default_str();
  sub->add_flag("--json", o.json, "print JSON instead of a table")
      ->envname(env_name("--json"));
}

} // namespace

void add_job_command(command_registry& reg) {
  auto o = std::make_shared<job_options>();
  auto* job = reg.add("job", "Submit and follow workflow jobs on a running cluster",
                      [o] { return run_job(*o); });
  job->require_subcommand(1);

  o->submit = job->add_subcommand(
      "submit", "Submit a job of STEPs (KIND[:PAYLOAD]) or of a --file spec; prints its "
                "id. Kinds must be served by some node's agents (else exit 2)");
  o->submit->add_option("STEP", o->steps,
                        "a step: agent kind, then optionally ':' and its payload, e.g. "
                        "sleep:200 or exec:'echo hi'");
  option(o->submit, "--id", o->id, "the job's id (default: generated, j<8 hex>-1)");
  option(o->submit, "--timeout", o->step_timeout,
         "each step's completion timeout per dispatch (e.g. 30s, 500ms, 2m)")
      ->capture_default_str();
  option(o->submit, "--attempts", o->attempts,
         "tries per dispatch of each step, the first included (the retry policy; "
         "default 3)");
  option(o->submit, "--failure-threshold", o->failure_threshold,
         "recoveries of a step before it fails for good (default 3)");
  option(o->submit, "--file", o->file,
         "a JSON job spec (docs/jobs.md); flags given override its id and threshold "
         "and fill its steps' missing timeout and attempts");
  o->submit->add_flag("--wait", o->wait,
                      "wait until the job is final: exit 0 if it succeeded "
                      "(processed), 1 otherwise");
  option(o->submit, "--wait-timeout", o->wait_timeout,
         "with --wait: give up after this (exit 1); 0: no limit")
      ->capture_default_str();
  add_common_flags(o->submit, *o);

  o->get = job->add_subcommand("get", "Print a job and its steps (exit 1 if unknown)");
  o->get->add_option("ID", o->job, "the job's id")->required();
  add_common_flags(o->get, *o);

  o->list = job->add_subcommand("list", "List jobs (ID and STATE), by state");
  option(o->list, "--state", o->state,
         "only jobs in this state: pending, processing, processed, error, "
         "compensating, compensated or cancelled");
  option(o->list, "--limit", o->limit, "at most this many jobs (0: all)")
      ->capture_default_str();
  add_common_flags(o->list, *o);

  o->cancel = job->add_subcommand(
      "cancel", "Cancel an unfinished job (exit 1 if it is finished); prints its state");
  o->cancel->add_option("ID", o->job, "the job's id")->required();
  add_common_flags(o->cancel, *o);

  o->resubmit = job->add_subcommand(
      "resubmit",
      "Run a failed, compensated or cancelled job again from its failed step; prints "
      "its state");
  o->resubmit->add_option("ID", o->job, "the job's id")->required();
  add_common_flags(o->resubmit, *o);

  o->explain = job->add_subcommand(
      "explain", "Say where an unfinished job is and what happens next: one line per "
                 "job (every unfinished job without ID)");
  o->explain->add_option("ID", o->job, "the job's id");
  add_common_flags(o->explain, *o);

  o->watch = job->add_subcommand(
      "watch", "Print a job's events as they happen until it is final: exit 0 if it "
               "succeeded, 1 otherwise");
  o->watch->add_option("ID", o->job, "the job's id")->required();
  option(o->watch, "--wait-timeout", o->wait_timeout,
         "give up after this (exit 1); 0: no limit")
      ->capture_default_str();
  add_common_flags(o->watch, *o);
}

} // namespace conclave::cli
