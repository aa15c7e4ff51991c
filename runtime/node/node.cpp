#include "runtime/node/node.hpp"
#include "runtime/node/node_composition.hpp"

#include "actors/election/candidate_actor.hpp"
#include "actors/election/directory_transport.hpp"
#include "actors/election/leader_task.hpp"
#include "actors/replication/type_ids.hpp"
#include "protocols/election/type_ids.hpp"
#include "runtime/node/bounded_connect.hpp"
#include "runtime/node/data_dir.hpp"
#include "runtime/node/gate_actor.hpp"
#include "runtime/node/http_routes.hpp"
#include "runtime/node/http_server.hpp"
#include "runtime/node/liveness_watch.hpp"
#include "runtime/node/node_probe.hpp"
#include "runtime/node/os_priority.hpp"
#include "runtime/node/peer_connector.hpp"
#include "runtime/node/peer_links.hpp"
#include "runtime/node/promise_file.hpp"
#include "runtime/node/replica_front.hpp"
#include "runtime/node/replica_leadership.hpp"
#include "runtime/node/replica_link.hpp"
#include "runtime/node/replica_storage.hpp"
#include "runtime/node/sched_slice.hpp"
#include "runtime/node/socket_numbers.hpp"
#include "runtime/node/status_file.hpp"
#include "runtime/node/tls_error_queue.hpp"
#include "runtime/node/tls_metrics.hpp"
#include "storage/posix_file_system.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/settings.hpp>

#include <prometheus/exposer.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace conclave::node {

namespace el = conclave::election;

namespace {

/// Blocks the termination signals in this thread and, since every thread the
/// actor system and the exposer start inherits the mask, in the whole process:
/// the main thread then takes them synchronously with sigwait().
sigset_t block_termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

void configure(caf::actor_system_config& cfg, const node_config& c) {
  cfg.load<caf::io::middleman>();
  if (c.tls) {
    // CAF's OpenSSL module: any of these set means both sides must present a
    // certificate that the CA verifies (SSL_VERIFY_FAIL_IF_NO_PEER_CERT).
    cfg.load<caf::openssl::manager>();
    cfg.openssl_cafile = c.tls->ca;
    cfg.openssl_certificate = c.tls->cert;
    cfg.openssl_key = c.tls->key;
    // A frozen peer's kernel accepts the TCP connection, but the peer never
    // answers the TLS handshake, and CAF retries it whenever the socket is
    // writable: the I/O thread spins until the dial is cut at the next tick.
    // Clients pace that (pace_pending_tls_dials); a node must not, because
    // the wait blocks the I/O thread that carries every link (with a member
    // stopped for 14 s, round trips between the others grew to 68 ms and no
    // leader kept its lease). Its connectors dial a peer that never answers
    // rarely instead (redial_schedule::after_tick_cut), and a dial CAF gave
    // up at its tick is closed here soon after (it would spin until the
    // peer resumed).
    abandon_tls_dials_after(c.link_heartbeat + c.link_heartbeat / 4);
  }
  cfg.add_message_types<caf::id_block::conclave_election>();
  cfg.add_message_types<caf::id_block::conclave_replication>();
  // Few threads, no work stealing: an idle node costs ≈1.5 % of a core instead of
  // ≈20 % (docs/design/caf-0.17.md).
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads", 2);
  cfg.set("middleman.heartbeat-interval", caf::timespan{c.link_heartbeat});
  cfg.set("middleman.connection-timeout", caf::timespan{c.link_timeout});
}

/// DIR/status.json, creating DIR; "" without --data-dir; nullopt if DIR cannot
/// be created (reported on stderr).
std::optional<std::string> prepare_status_path(const node_config& c) {
  if (c.data_dir.empty())
    return std::string{};
  std::error_code ec;
  std::filesystem::create_directories(c.data_dir, ec);
  if (ec) {
    std::cerr << "conclave: error: --data-dir: cannot create " << c.data_dir << ": "
              << ec.message() << '\n';
    return std::nullopt;
  }
  return (std::filesystem::path{c.data_dir} / "status.json").string();
}

node_status initial_status(const node_config& c) {
  node_status s;
  s.id = c.id.value;
  s.cluster = c.cluster;
  s.address = c.listen.to_string();
  s.pid = static_cast<int>(::getpid());
  for (auto& [id, addr] : c.peers)
    s.peers.push_back({id, addr.to_string(), false, "alive"});
  return s;
}

/// The /metrics endpoint, if --metrics is set. Sets `failed` if it cannot listen.
/// The exposer holds collectables by weak_ptr only: `keep` must outlive it
/// (a temporary one is never scraped).
std::unique_ptr<prometheus::Exposer>
serve_metrics(const node_config& c, const std::shared_ptr<node_probe>& probe,
              bool& failed, std::vector<std::shared_ptr<prometheus::Collectable>>& keep) {
  failed = false;
  if (!c.metrics)
    return nullptr;
  try {
    auto exposer = std::make_unique<prometheus::Exposer>(c.metrics->to_string(), 1);
    exposer->RegisterCollectable(probe->registry());
    keep = {live_metrics(probe), tls_handshake_metrics()};
    for (auto& k : keep)
      exposer->RegisterCollectable(k);
    return exposer;
  } catch (const std::exception& e) {
    std::cerr << "conclave: error: --metrics: cannot listen on " << c.metrics->to_string()
              << ": port in use or not permitted\n";
    failed = true;
    return nullptr;
  }
}

/// The middleman's link settings are silently ignored if mistyped: read back.
bool link_settings_applied(caf::actor_system& sys, const node_config& c) {
  auto hb = caf::get_or(sys.config(), "middleman.heartbeat-interval", caf::timespan{0});
  auto to = caf::get_or(sys.config(), "middleman.connection-timeout", caf::timespan{0});
  return hb == caf::timespan{c.link_heartbeat} && to == caf::timespan{c.link_timeout};
}

std::shared_ptr<peer_links> make_links(const node_config& c,
                                       const std::shared_ptr<node_probe>& probe,
                                       const std::shared_ptr<const node_log>& log) {
  membership members{c.cluster, c.id.value, {}};
  for (auto& [id, addr] : c.peers)
    members.peers.insert(id);
  return std::make_shared<peer_links>(members, probe,
                                      std::make_shared<el::directory_transport>(), log);
}

void log_start(const node_config& c, const peer_links& links) {
  links.log("listening on " + c.listen.to_string() + ", cluster '" + c.cluster + "', "
            + std::string{el::to_string(c.election.algo)} + ", "
            + std::to_string(c.peers.size()) + " peer(s)"
            + (c.metrics ? ", metrics on http://" + c.metrics->to_string() + "/metrics"
                         : std::string{})
            + (c.http ? std::string{", API on "} + (c.tls ? "https://" : "http://")
                            + c.http->to_string()
                      : std::string{}));
  if (c.tls)
    links.log("links use TLS; peers must present a certificate signed by " + c.tls->ca);
  if (auto* auth = links.authenticator(); auth && auth->self.named_member() != c.id.value)
    links.warn("--tls-cert " + c.tls->cert
               + " does not name this node (subject CN "
                 "node-"
               + std::to_string(c.id.value)
               + "): every peer will refuse "
                 "its identity proof");
  if (!socket_renumbering_active())
    links.warn("socket renumbering not active: a connection opened right after another "
               "closed may lose its sender (socket_numbers.hpp)");
  if (!bounded_connect_active())
    links.warn(
        "connect bound off (CONCLAVE_CONNECT_TIMEOUT_MS=0 or not linked): a member "
        "cut off by the network holds this node's other dials for minutes "
        "(bounded_connect.hpp)");
  if (c.tls && !tls_error_queue_fix_active())
    links.warn("OpenSSL error-queue fix not active: a failed TLS handshake may drop "
               "healthy links (docs/design/node.md)");
  if (!c.election.guard.enabled)
    links.warn("--no-quorum-guard: a partitioned leader keeps acting; two leaders "
               "may act at once (docs/design/node.md)");
}

/// The lower id of each pair dials the higher one; after a pause, a dropped
/// lower member is dialed back once (peer_links::set_repair).
std::vector<caf::actor> dial_members(caf::actor_system& sys, const node_config& c,
                                     const std::shared_ptr<peer_links>& links) {
  std::vector<caf::actor> connectors;
  for (auto& [id, addr] : c.peers)
    if (id > c.id.value)
      connectors.push_back(spawn_connector(sys, links, connector_options{id, addr}));
  links->set_repair([&sys, weak = std::weak_ptr<peer_links>{links},
                     peers = c.peers](uint64_t id) -> caf::actor {
    auto l = weak.lock();
    if (!l)
      return {};
    connector_options o{id, peers.at(id)};
    o.repair = true;
    l->log("dialing node " + std::to_string(id) + " back");
    return spawn_connector(sys, l, o);
  });
  return connectors;
}

/// Set once, from the replica host's thread, when the replica's storage
/// failed (replica_host_options::on_failure): the node leaves and exits 1.
struct storage_failure {
  std::atomic<bool> failed{false};
  std::mutex mtx;
  std::string what;

  void set(const std::string& w) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (what.empty())
        what = w;
    }
    failed = true;
  }
  std::string text() {
    std::lock_guard<std::mutex> guard{mtx};
    return what;
  }
};

/// Claims the data dir for this member and opens the replica's storage
/// there. Returns the exit status on failure: 2 for a directory of another
/// member or cluster (bad input), 1 for a corrupt or unwritable one.
std::optional<int> prepare_data_dir(const node_config& c, replica_storage& out) {
  auto claim = claim_data_dir(c.data_dir, c.cluster, c.id.value);
  if (claim.problem != data_dir_problem::none) {
    std::cerr << "conclave: error: " << claim.message << '\n';
    return claim.problem == data_dir_problem::other_owner ? 2 : 1;
  }
  auto storage = open_replica_storage(c.data_dir, c.peers.size() + 1);
  if (!storage) {
    std::cerr << "conclave: error: --data-dir " << c.data_dir << ": " << storage.error()
              << '\n';
    return 1;
  }
  out = std::move(storage.value());
  return std::nullopt;
}

/// The node's actors (node_composition.hpp) with the process's pieces: the
/// peer links' transports, the files of --data-dir, CAF's clock. Gives the
/// links the candidate and the replica endpoint that the gate and connectors
/// exchange.
el::candidate_actor compose(caf::actor_system& sys, const node_config& c,
                            const replica_storage& storage, peer_links& links,
                            const std::shared_ptr<node_probe>& probe,
                            const std::shared_ptr<status_writer>& status,
                            const node_hooks& hooks, http_server* http,
                            const std::shared_ptr<storage_failure>& failure) {
  composition_options o;
  auto& co = o.candidate;
  co.id = c.id;
  for (auto& [id, addr] : c.peers)
    co.peers.push_back(el::node_id{id});
  co.config = c.election;
  co.net = std::make_shared<node_transport>(links.directory());
  co.incarnation = links.incarnation();
  if (!c.data_dir.empty() && c.election.guard.enabled) {
    std::string problem;
    co.record = file_promise_record::open(
        c.data_dir, store::default_file_system(),
        std::max(c.election.guard.lease, c.election.guard.lease_max), problem);
    if (!problem.empty())
      links.warn(problem);
    else if (auto kept = co.record->load(); kept > c.election.guard.lease)
      links.logger()->info(
          "keeping the lease this member may have promised before it stopped ("
          + std::to_string(kept.count() / 1000000) + " ms, "
          + (std::filesystem::path{c.data_dir} / file_promise_record::file_name).string()
          + "): it grants no leader's lease for "
          + std::to_string((kept + c.election.guard.max_clock_drift).count() / 1000000)
          + " ms from now");
  }
  // --algorithm lease: the task runs under the lease instead.
  if (!c.lease_leadership)
    co.task = hooks.task;
  o.probe = probe;
  std::shared_ptr<peer_replica_transport> transport;
  if (storage.device) {
    transport = std::make_shared<peer_replica_transport>();
    replication::replica_host_options ro;
    ro.device = storage.device;
    ro.terms = storage.terms;
    ro.transport = transport;
    ro.checkpoint_every_records = c.checkpoint_every_records;
    ro.checkpoint_every_bytes = c.checkpoint_every_bytes;
    ro.amnesiac = storage.amnesiac;
    ro.on_failure = [failure](const std::string& what) { failure->set(what); };
    // Every committed job and lease change reaches this replica: /v1/watch
    // publishes them from here, whichever node the client watches.
    if (http)
      ro.observer = http->commit_events(c.id.value);
    if (storage.amnesiac)
      ro.healed = [heal = storage.healed, log = links.logger()] {
        if (heal)
          heal();
        if (log)
          log->info("replica log rebuilt from the other members: it counts again");
      };
    o.replica = std::move(ro);
    o.front.durable_storage = storage.durable;
  }
  auto parts = compose_node(sys, std::move(o));
  if (parts.host) {
    auto ep = std::make_shared<replica_endpoint>();
    ep->host = parts.host;
    ep->front = parts.front;
    ep->transport = transport;
    ep->board = parts.board;
    ep->primary = [status, self = c.id.value, listen = c.listen,
                   peers = c.peers]() -> std::pair<uint64_t, std::string> {
      auto leader = status->snapshot().leader;
      if (leader == self)
        return {leader, listen.to_string()};
      if (auto i = peers.find(leader); i != peers.end())
        return {leader, i->second.to_string()};
      return {0, std::string{}};
    };
    links.set_replica(std::move(ep));
  }
  links.set_candidate(parts.candidate);
  return parts.candidate;
}

/// Gives the links a moment to come up so the first election sees everyone
/// (the core listens for a leader's heartbeat before electing anyway).
void await_links(const peer_links& links, size_t peers, std::chrono::milliseconds grace) {
  auto end = std::chrono::steady_clock::now() + grace;
  while (links.linked() < peers && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

/// What ends a node's run: a termination signal or its replica's storage.
constexpr int storage_failed_signal = -1;

/// Waits for SIGTERM/SIGINT, ticking the pause guard every 50 ms meanwhile;
/// storage_failed_signal once the replica's storage failed.
int await_termination(const sigset_t& signals, peer_links& links, const node_config& c,
                      const storage_failure& failure) {
  links.set_pause_guard(std::chrono::milliseconds{250},
                        c.link_timeout + c.link_timeout / 2);
  timespec period{0, 50'000'000};
  for (;;) {
    if (failure.failed)
      return storage_failed_signal;
    links.tick(std::chrono::steady_clock::now());
    int sig = sigtimedwait(&signals, nullptr, &period);
    if (sig == SIGTERM || sig == SIGINT)
      return sig;
  }
}

/// Leaves the group: no new links, the gate unpublished, a leader resigns (its
/// candidate's exit handler does), the resignation gets time to leave.
void leave(caf::actor_system& sys, const node_config& c, peer_links& links,
           std::vector<caf::actor> connectors, const caf::actor& gate,
           const el::candidate_actor& candidate) {
  // No new links while leaving (the peers' candidates stay in the directory, so
  // the resignation still reaches them).
  for (auto& a : links.stop_repairs())
    connectors.push_back(a);
  // Also closes a TLS doorman: both middleman actors share the BASP broker.
  sys.middleman().unpublish(gate, c.listen.port);
  for (auto& a : connectors)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
  if (auto& replica = links.replica()) {
    caf::anon_send_exit(replica->front, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(replica->host, caf::exit_reason::user_shutdown);
  }
  {
    caf::scoped_actor self{sys};
    self->monitor(candidate);
    caf::anon_send_exit(candidate, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {}, caf::after(std::chrono::seconds(2)) >> [] {});
  }
  // Let the resign messages leave before the connections close.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

} // namespace

int run_node(const node_config& c, const node_hooks& hooks) {
  auto signals = block_termination_signals();
  auto log =
      hooks.log ? hooks.log : std::make_shared<const node_log>(c.id.value, c.log_format);
  replica_storage storage;
  if (!c.data_dir.empty())
    if (auto failed = prepare_data_dir(c, storage))
      return *failed;
  auto path = prepare_status_path(c);
  if (!path)
    return 2;
  std::shared_ptr<const peer_authenticator> auth;
  if (c.tls) { // before CAF's OpenSSL module reads the files (it aborts on a bad one)
    auto loaded = peer_authenticator::load(c.tls->ca, c.tls->cert, c.tls->key);
    if (!loaded) {
      std::cerr << "conclave: error: " << loaded.error() << '\n';
      return 2;
    }
    auth = std::move(loaded.value());
  }
  auto status = std::make_shared<status_writer>(*path, initial_status(c));
  auto probe = std::make_shared<node_probe>(c, status);
  probe->set_log(log);
  // Before any thread starts (the metrics and HTTP servers', the actor
  // system's): they inherit the nice value. Setting it on running threads
  // as well raced with the HTTP server's listening thread, which starts
  // its workers on its own.
  auto priority = apply_nice(c.nice);
  bool metrics_failed = false;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  auto exposer = serve_metrics(c, probe, metrics_failed, collectables);
  if (metrics_failed)
    return exit_address_in_use;
  // Its own threads, answering from snapshots: a request never waits on the
  // actor system.
  bool http_failed = false;
  http_limits limits;
  limits.max_connections = c.http_max_connections;
  limits.max_connections_per_source = c.http_max_connections_per_source;
  auto http = start_http(c, status, probe, *probe->registry(), http_failed,
                         hooks.http_backends, limits);
  if (http_failed)
    return exit_address_in_use;

  // Before the actor system starts its threads: they inherit the slice.
  auto slice_problem = request_cpu_slice(node_cpu_slice);
  caf::actor_system_config cfg;
  configure(cfg, c);
  if (hooks.configure)
    hooks.configure(cfg);
  caf::actor_system sys{cfg};
  if (!link_settings_applied(sys, c)) {
    std::cerr << "conclave: error: the middleman did not take the link heartbeat "
                 "settings\n";
    return 1;
  }
  auto links = make_links(c, probe, log);
  links->set_authenticator(auth);
  links->set_incarnation(static_cast<uint64_t>(wall_clock_us()));
  if (c.tls)
    set_local_basp_node(basp_node_bytes(sys.node())); // basp_source_guard.hpp
  if (c.election.guard.enabled && c.election.guard.death_proof) {
    std::string error;
    std::weak_ptr<peer_links> weak = links;
    auto watch = liveness_watch::start(
        c.listen.host,
        [weak](uint64_t member, uint64_t incarnation) {
          if (auto l = weak.lock()) {
            l->log("node " + std::to_string(member)
                   + " is gone: its host closed its liveness connection (proof of "
                     "death, no lease wait)");
            caf::anon_send(l->candidate(),
                           conclave::election_atoms::peer_dead_atom::value,
                           el::node_id{member}, incarnation);
          }
        },
        [weak](const std::string& line) {
          if (auto l = weak.lock())
            l->warn(line);
        },
        error);
    if (!watch) {
      std::cerr << "conclave: error: " << error << '\n';
      return exit_address_in_use;
    }
    links->set_liveness(std::shared_ptr<liveness_watch>{std::move(watch)});
  }
  auto failure = std::make_shared<storage_failure>();
  auto candidate =
      compose(sys, c, storage, *links, probe, status, hooks, http.get(), failure);
  auto gate = spawn_gate(sys, links);
  auto published =
      c.tls ? caf::openssl::publish(gate, c.listen.port, c.listen.host.c_str(), true)
            : sys.middleman().publish(gate, c.listen.port, c.listen.host.c_str(), true);
  if (!published) {
    std::cerr << "conclave: error: --listen: cannot listen on " << c.listen.to_string()
              << ": port in use (" << sys.render(published.error()) << ")\n";
    caf::anon_send_exit(candidate, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    if (auto& replica = links->replica()) {
      caf::anon_send_exit(replica->front, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(replica->host, caf::exit_reason::user_shutdown);
    }
    return exit_address_in_use;
  }
  log_start(c, *links);
  if (slice_problem.empty())
    links->log("threads run with " + std::to_string(node_cpu_slice.count())
               + " us CPU slices (a woken I/O thread preempts other processes sooner)");
  else
    links->warn("could not shorten the CPU slice of this node's threads (" + slice_problem
                + "): heartbeats may wait behind other processes");
  if (!priority.what.empty()) {
    if (priority.ok)
      links->log(priority.what);
    else
      links->warn(priority.what);
  }
  if (links->replica())
    links->log(
        std::string{"hosting a replica in "} + c.data_dir
        + (storage.durable ? "" : " (in memory: its log does not survive a restart)"));
  if (!storage.recovery_note.empty())
    links->warn(storage.recovery_note);
  auto connectors = dial_members(sys, c, links);
  await_links(*links, c.peers.size(), std::chrono::milliseconds(500));
  caf::anon_send(candidate, conclave::election_atoms::start_atom::value);
  links->log("joined with " + std::to_string(links->linked()) + " of "
             + std::to_string(c.peers.size()) + " peer(s) linked");
  std::function<void()> stop_lease_leadership;
  if (c.lease_leadership) {
    if (hooks.start_lease_leadership)
      stop_lease_leadership = hooks.start_lease_leadership(sys, c, hooks.task, log);
    else
      links->warn("--algorithm lease: this program cannot campaign for the lease");
  }

  std::function<void()> stop_workflows;
  if (hooks.start_workflows)
    stop_workflows = hooks.start_workflows(sys, c, caf::actor_cast<caf::actor>(candidate),
                                           log, probe->registry());

  auto sig = await_termination(signals, *links, c, *failure);
  if (sig == storage_failed_signal)
    links->warn("replica storage failed (" + failure->text()
                + "): leaving the group; restart the node to reopen --data-dir "
                  "(it heals from the other members or refuses and says why)");
  else
    links->log(std::string{"received "} + (sig == SIGTERM ? "SIGTERM" : "SIGINT")
               + ": leaving the group");
  // A lease holder releases first: another node leads at once.
  if (stop_lease_leadership)
    stop_lease_leadership();
  if (hooks.http_backends)
    hooks.http_backends->clear();
  if (stop_workflows)
    stop_workflows();
  leave(sys, c, *links, std::move(connectors), caf::actor_cast<caf::actor>(gate),
        candidate);
  // Only now that the candidate no longer acts: closing the liveness
  // connections tells the peers this incarnation is gone.
  links->set_liveness(nullptr);
  status->set_running(false);
  if (http)
    http->stop();
  links->log("stopped");
  // civetweb's orderly stop waits for its 2 s poll timeout; the process is
  // leaving anyway, so the exposer's threads end with it.
  static_cast<void>(exposer.release());
  return sig == storage_failed_signal ? 1 : 0;
}

} // namespace conclave::node
