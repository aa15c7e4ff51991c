// conclave cluster up|status|kill|restart|down: nodes launched together on
// loopback; conclave cluster init: the files for nodes on several hosts. See
// docs/design/node.md and docs/deploy.md.
#include "runtime/cli/commands.hpp"

#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/cluster_init.hpp"
#include "runtime/node/node_log.hpp"

#include <array>
#include <iostream>
#include <memory>

namespace conclave::cli {

namespace {

struct cluster_options {
  cluster::up_options up;
  cluster::init_options init;
  std::string dir;
  uint64_t node = 0;
  std::string signal = "TERM";
  bool json = false;
  bool wait = false;
  bool leader = false;
  unsigned timeout_ms = 15000;
  std::string detector;
  unsigned heartbeat_ms = 0;
  unsigned detector_timeout_ms = 0;
  /// cluster up: the nodes' nice value (node --nice; 0: as started).
  int nice = 0;
  std::string log_format;
  bool no_quorum_guard = false;
  bool no_death_proof = false;
  /// -1: the nodes' default.
  int64_t checkpoint_every = -1;
};

CLI::Option* dir_option(CLI::App* sub, std::string& dir) {
  return option(sub, "--dir", dir, "the cluster's directory (configs, pids, logs)");
}

int run_up(cluster_options& o) {
  o.up.dir = o.dir;
  o.up.timeout = std::chrono::milliseconds{o.timeout_ms};
  if (!o.detector.empty())
    o.up.node_settings.push_back("detector = " + o.detector);
  if (o.heartbeat_ms != 0)
    o.up.node_settings.push_back("heartbeat-ms = " + std::to_string(o.heartbeat_ms));
  if (o.detector_timeout_ms != 0)
    o.up.node_settings.push_back("detector-timeout-ms = "
                                 + std::to_string(o.detector_timeout_ms));
  if (o.nice < -20 || o.nice > 19)
    return bad_input("--nice: expected -20..19, got " + std::to_string(o.nice));
  if (o.nice != 0)
    o.up.node_settings.push_back("nice = " + std::to_string(o.nice));
  if (!o.log_format.empty()) {
    if (!node::parse_log_format(o.log_format))
      return bad_input("--log-format: expected text or json, got '" + o.log_format + "'");
    o.up.node_settings.push_back("log-format = " + o.log_format);
  }
  if (o.no_quorum_guard)
    o.up.node_settings.push_back("no-quorum-guard = true");
  if (o.no_death_proof)
    o.up.node_settings.push_back("no-death-proof = true");
  if (o.checkpoint_every >= 0)
    o.up.node_settings.push_back("checkpoint-every = "
                                 + std::to_string(o.checkpoint_every));
  return cluster::up(o.up, std::cout);
}

int run_kill(cluster_options& o) {
  if (o.leader == (o.node != 0))
    return bad_input("cluster kill: give either --node ID or --leader");
  auto sig = cluster::parse_signal(o.signal);
  if (sig == 0)
    return bad_input("--signal: expected KILL, STOP, CONT, TERM or INT, got '" + o.signal
                     + "'");
  return cluster::kill(o.dir, o.node, sig, o.wait,
                       std::chrono::milliseconds{o.timeout_ms}, o.json, std::cout);
}

int dispatch(cluster_options& o, const std::array<CLI::App*, 6>& subs) {
  auto [up, st, kl, rs, dn, in] = subs;
  if (up->parsed())
    return run_up(o);
  if (in->parsed()) {
    o.init.dir = o.dir;
    return cluster::init(o.init, std::cout);
  }
  if (st->parsed())
    return cluster::status(o.dir, o.json, std::cout);
  if (kl->parsed())
    return run_kill(o);
  if (rs->parsed())
    return cluster::restart(o.dir, o.node, std::chrono::milliseconds{o.timeout_ms},
                            o.json, std::cout);
  if (dn->parsed())
    return cluster::down(o.dir, o.json, std::cout);
  return bad_input("cluster: give up, status, kill, restart, down or init (see --help)");
}

} // namespace

void add_cluster_command(command_registry& reg) {
  auto o = std::make_shared<cluster_options>();
  auto subs = std::make_shared<std::array<CLI::App*, 6>>();
  auto* cl = reg.add("cluster", "Start, inspect, disturb and stop nodes on loopback",
                     [o, subs] { return dispatch(*o, *subs); });
  cl->require_subcommand(1);

  auto* up =
      cl->add_subcommand("up", "Start N nodes; return once they agree on a leader");
  option(up, "--nodes", o->up.nodes, "number of nodes")->capture_default_str();
  dir_option(up, o->dir)->required();
  option(up, "--algorithm", o->up.algorithm,
         "bully, ring, or lease (the nodes lead while holding a lease of the store)")
      ->capture_default_str();
  option(up, "--cluster", o->up.cluster, "cluster name")->capture_default_str();
  option(up, "--timeout-ms", o->timeout_ms, "give up (and stop the nodes) after this")
      ->capture_default_str();
  option(up, "--detector", o->detector, "nodes' leader failure detector: fixed or phi");
  option(up, "--heartbeat-ms", o->heartbeat_ms, "nodes' leader heartbeat interval");
  option(up, "--checkpoint-every", o->checkpoint_every,
         "nodes' replica checkpoint threshold in records (node --checkpoint-every; "
         "0: never; default: the node's)");
  option(up, "--detector-timeout-ms", o->detector_timeout_ms,
         "nodes' silence before suspecting the leader");
  option(up, "--log-format", o->log_format, "nodes' log format: text or json");
  option(up, "--nice", o->nice,
         "nodes' CPU priority (node --nice: -20..19, 0 as started; below 0 needs "
         "CAP_SYS_NICE, without it a node logs a warning and runs as started); each "
         "node leads its own session, so its session's group takes it too")
      ->capture_default_str();
  up->add_flag("--json", o->up.json, "print one JSON document")
      ->envname(env_name("--json"));
  option(up, "--program", o->up.program,
         "start this program, which embeds a node (conclave/node.hpp), instead of "
         "`conclave node`: PROGRAM --config FILE [ARGS after --]");
  up->add_option("args", o->up.program_args,
                 "with --program: more arguments for each program, after --");
  up->add_flag("--insecure", o->up.insecure,
               "plaintext links (default: a throwaway CA in DIR/tls, TLS with mutual "
               "authentication)")
      ->envname(env_name("--insecure"));
  up->add_flag("--no-quorum-guard", o->no_quorum_guard,
               "classic algorithms: leaders act without a majority lease (unsafe under "
               "partition)")
      ->envname(env_name("--no-quorum-guard"));
  up->add_flag("--no-death-proof", o->no_death_proof,
               "nodes wait out a dead leader's lease even when its host proved it gone "
               "(for comparison)")
      ->envname(env_name("--no-death-proof"));

  auto* st = cl->add_subcommand(
      "status", "Show every node's view; exit 0 if the live nodes agree on a leader, "
                "1 if not (a health check)");
  dir_option(st, o->dir)->required();
  st->add_flag("--json", o->json, "print one JSON document")->envname(env_name("--json"));

  auto* kl = cl->add_subcommand("kill", "Send a signal to one node");
  dir_option(kl, o->dir)->required();
  auto* node_opt = option(kl, "--node", o->node, "node id");
  auto* leader_opt = kl->add_flag("--leader", o->leader, "signal the current leader");
  node_opt->excludes(leader_opt);
  option(kl, "--signal", o->signal, "KILL, STOP, CONT, TERM or INT")
      ->capture_default_str();
  kl->add_flag(
      "--wait", o->wait,
      "wait until `status` would show the live nodes agreeing on a leader (a new "
      "one if the leader was taken out); print the failover time");
  option(kl, "--timeout-ms", o->timeout_ms, "with --wait: give up after this")
      ->capture_default_str();
  kl->add_flag("--json", o->json, "print one JSON document")->envname(env_name("--json"));

  auto* rs =
      cl->add_subcommand("restart", "Stop one node (if running) and start it again");
  dir_option(rs, o->dir)->required();
  option(rs, "--node", o->node, "node id")->required();
  option(rs, "--timeout-ms", o->timeout_ms, "give up waiting for it to rejoin after this")
      ->capture_default_str();
  rs->add_flag("--json", o->json, "print one JSON document")->envname(env_name("--json"));

  auto* dn = cl->add_subcommand("down", "Stop every node (SIGCONT first, then SIGTERM)");
  dir_option(dn, o->dir)->required();
  dn->add_flag("--json", o->json, "print one JSON document")->envname(env_name("--json"));

  auto* in = cl->add_subcommand(
      "init", "Write configs, certificates and a systemd unit for nodes on other hosts "
              "(starts nothing; see docs/deploy.md)");
  auto& io = o->init;
  option(in, "--hosts", io.hosts,
         "the nodes, ID@HOST:PORT,...: HOST:PORT is where the others reach each one")
      ->required();
  dir_option(in, o->dir)
      ->required()
      ->description("a new or empty directory for the files");
  option(in, "--cluster", io.cluster, "cluster name")->capture_default_str();
  option(in, "--ca-cert", io.ca_cert,
         "sign with this CA certificate (PEM; with --ca-key) instead of a new CA");
  option(in, "--ca-key", io.ca_key, "the CA's private key (PEM, unencrypted)");
  option(in, "--metrics-port", io.metrics_port,
         "every node serves /metrics on HOST:this port (plain HTTP; default: none)");
  option(in, "--data-dir", io.data_dir,
         "on the hosts: node ID keeps its data in "
         "DATA_DIR/node-ID")
      ->capture_default_str();
  option(in, "--config-dir", io.config_dir,
         "on the hosts: where each node's config, certificate and key are installed")
      ->capture_default_str();
  option(in, "--binary", io.binary, "on the hosts: the conclave binary the unit starts")
      ->capture_default_str();
  option(in, "--days", io.days, "validity of the node and client certificates")
      ->capture_default_str();
  in->add_flag("--json", io.json, "print one JSON document")->envname(env_name("--json"));

  *subs = {up, st, kl, rs, dn, in};
}

} // namespace conclave::cli
