// conclave::embedded_node (include/conclave/node.hpp): the flags of `conclave
// node` (runtime/cli/node_flags), run_node (runtime/node/node), and the
// election's leader task (actors/election/leader_task) behind one small class.
// `conclave node` runs through it too.
#include "conclave/node.hpp"

#include "actors/election/candidate_actor.hpp"
#include "actors/election/leader_task.hpp"
#include "runtime/agents/builtin_agents.hpp"
#include "runtime/cli/node_flags.hpp"
#include "runtime/cluster/lease_leadership.hpp"
#include "runtime/cluster/workflow_host.hpp"
#include "runtime/embed/agent_functions.hpp"
#include "runtime/embed/http_backends.hpp"
#include "runtime/embed/live_jobs.hpp"
#include "runtime/node/node.hpp"
#include "runtime/node/node_config.hpp"
#include "runtime/node/node_log.hpp"

#include <caf/send.hpp>

#include <iostream>
#include <set>
#include <thread>

namespace conclave {

namespace el = conclave::election;

std::string term::to_string() const {
  return std::to_string(epoch) + "/" + std::to_string(leader);
}

struct leadership::state {
  el::leader_context ctx;
};

leadership::leadership(std::shared_ptr<const state> s) : s_(std::move(s)) {}

uint64_t leadership::self() const {
  return s_->ctx.self().value;
}

conclave::term leadership::term() const {
  auto t = s_->ctx.leadership_term();
  return conclave::term{t.epoch, t.leader.value, t.incarnation};
}

bool leadership::cancelled() const {
  return s_->ctx.cancelled();
}

bool leadership::wait_for(std::chrono::milliseconds d) const {
  // Polls: cancellation is a flag (leader_context), and 5 ms is well inside
  // the time a new leader waits for the old lease to expire.
  auto end = std::chrono::steady_clock::now() + d;
  constexpr auto step = std::chrono::milliseconds(5);
  while (!cancelled()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= end)
      return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(step, end - now));
  }
  return false;
}

struct embedded_node::impl {
  std::optional<node::node_config> cfg;
  std::string error;
  int early_status = 0; ///< run()'s result when there is no config
  std::shared_ptr<const node::node_log> log;
  std::shared_ptr<const el::leader_task> task;
  struct agent_kind {
    agent_function fn;
    unsigned concurrency = 1;
  };
  std::map<std::string, agent_kind> agents;
  std::shared_ptr<embed::live_jobs> jobs = std::make_shared<embed::live_jobs>();

  void set_config(node::node_config c) {
    log = std::make_shared<const node::node_log>(c.id.value, c.log_format);
    cfg = std::move(c);
  }
};

namespace {

std::string program_name(int argc, const char* const* argv) {
  if (argc < 1 || argv[0] == nullptr)
    return "conclave";
  std::string_view p{argv[0]};
  auto slash = p.rfind('/');
  return std::string{slash == std::string_view::npos ? p : p.substr(slash + 1)};
}

} // namespace

embedded_node::embedded_node(int argc, const char* const* argv)
    : impl_(std::make_unique<impl>()) {
  auto name = program_name(argc, argv);
  CLI::App app{"A conclave node (the flags of `conclave node`)", name};
  cli::node_flags flags;
  cli::add_node_flags(&app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      app.exit(e); // --help
      impl_->error = "";
      impl_->early_status = 0;
      return;
    }
    std::string what = e.what();
    for (auto& c : what)
      if (c == '\n')
        c = ' ';
    impl_->error = what + " (see --help)";
    impl_->early_status = 2;
    std::cerr << name << ": error: " << impl_->error << '\n';
    return;
  }
  auto cfg = cli::finish_node_flags(&app, flags);
  if (!cfg) {
    impl_->error = cfg.error();
    impl_->early_status = 2;
    std::cerr << name << ": error: " << impl_->error << '\n';
    return;
  }
  impl_->set_config(std::move(cfg.value()));
}

embedded_node::embedded_node(const node::node_config& cfg)
    : impl_(std::make_unique<impl>()) {
  impl_->set_config(cfg);
}

embedded_node::~embedded_node() = default;
embedded_node::embedded_node(embedded_node&&) noexcept = default;
embedded_node& embedded_node::operator=(embedded_node&&) noexcept = default;

bool embedded_node::ok() const {
  return impl_->cfg.has_value();
}

const std::string& embedded_node::error() const {
  return impl_->error;
}

uint64_t embedded_node::id() const {
  return impl_->cfg ? impl_->cfg->id.value : 0;
}

void embedded_node::on_leading(leader_task task) {
  if (!task) {
    impl_->task = nullptr;
    return;
  }
  impl_->task = std::make_shared<const el::leader_task>(
      el::leader_task::from_function([task = std::move(task)](el::leader_context ctx) {
        task(leadership{std::make_shared<const leadership::state>(
            leadership::state{std::move(ctx)})});
      }));
}

void embedded_node::on_agent(std::string kind, agent_function fn, unsigned concurrency) {
  if (!fn) {
    impl_->agents.erase(kind);
    return;
  }
  impl_->agents[std::move(kind)] =
      impl::agent_kind{std::move(fn), std::max(1u, concurrency)};
}

job_answer<std::string> embedded_node::submit(const job_request& job,
                                              std::chrono::milliseconds timeout) {
  return impl_->jobs->submit(job, timeout);
}

job_answer<job_status> embedded_node::job(const std::string& id,
                                          std::chrono::milliseconds timeout) {
  return impl_->jobs->get(id, timeout);
}

job_answer<std::string> embedded_node::cancel(const std::string& id,
                                              std::chrono::milliseconds timeout) {
  return impl_->jobs->cancel(id, timeout);
}

job_answer<std::string> embedded_node::resubmit(const std::string& id,
                                                std::chrono::milliseconds timeout) {
  return impl_->jobs->resubmit(id, timeout);
}

job_answer<std::vector<std::string>>
embedded_node::jobs(const std::string& state, std::chrono::milliseconds timeout) {
  return impl_->jobs->list(state, timeout);
}

void embedded_node::log(std::string_view message) const {
  if (impl_->log)
    impl_->log->info(message);
  else
    std::cerr << message << '\n';
}

int embedded_node::run() {
  if (!impl_->cfg)
    return impl_->early_status;
  auto& c = *impl_->cfg;
  // Up front, so that a taken port is one clear line and exit status 4 (the
  // launcher retries on new ports), before any thread starts.
  for (auto [addr, flag] : {std::pair{&c.listen, "--listen"},
                            std::pair{c.metrics ? &*c.metrics : nullptr, "--metrics"}}) {
    if (addr == nullptr)
      continue;
    if (auto r = node::check_bindable(*addr, flag)) {
      std::cerr << "conclave: error: " << r->message << '\n';
      return r->in_use ? node::exit_address_in_use : 2;
    }
  }
  node::node_hooks hooks;
  hooks.task = impl_->task;
  hooks.log = impl_->log;
  hooks.start_lease_leadership = [](caf::actor_system& sys, const node::node_config& cfg,
                                    std::shared_ptr<const el::leader_task> task,
                                    std::shared_ptr<const node::node_log> log) {
    auto l = std::make_shared<cluster::lease_leadership>(sys, cfg, std::move(task),
                                                         std::move(log));
    return std::function<void()>{[l] { l->stop(); }};
  };
  hooks.configure = [](caf::actor_system_config& cfg) {
    cluster::configure_workflows(cfg);
  };
  // The HTTP API's data routes use the workflow host's clients once it runs.
  hooks.http_backends = std::make_shared<node::http_backend_slot>();
  hooks.start_workflows = [kinds = impl_->agents, jobs = impl_->jobs,
                           api = hooks.http_backends](
                              caf::actor_system& sys, const node::node_config& cfg,
                              const caf::actor& candidate,
                              std::shared_ptr<const node::node_log> log,
                              std::shared_ptr<prometheus::Registry> metrics) {
    cluster::workflow_host_options o;
    agents::builtin_options b;
    b.clock_offset = cluster::wall_clock_offset();
    b.node_id = cfg.id.value;
    for (auto& [kind, svc] : agents::spawn_builtin_services(sys, b)) {
      if (kinds.count(kind))
        caf::anon_send_exit(svc, caf::exit_reason::user_shutdown);
      else
        o.services[kind].push_back(svc);
    }
    for (auto& [kind, a] : kinds)
      for (unsigned i = 0; i < a.concurrency; ++i)
        o.services[kind].push_back(embed::spawn_function_service(sys, a.fn));
    o.candidate = caf::actor_cast<el::candidate_actor>(candidate);
    o.log = std::move(log);
    o.metrics = std::move(metrics);
    std::set<std::string> local;
    for (auto& [kind, services] : o.services)
      local.insert(kind);
    auto host = std::make_shared<cluster::workflow_host>(sys, cfg, std::move(o));
    jobs->set(sys, host->client(), host->replication_client(), std::move(local));
    api->set(embed::make_http_backends(sys, host->replication_client(), host->client(),
                                       cluster::workflow_host::client_deadline));
    return std::function<void()>{[host, jobs, api] {
      api->clear();
      jobs->clear();
      host->stop();
    }};
  };
  return node::run_node(c, hooks);
}

std::string embedded_node::version() {
  return CONCLAVE_VERSION;
}

} // namespace conclave
