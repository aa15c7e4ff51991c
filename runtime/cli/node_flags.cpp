#include "runtime/cli/node_flags.hpp"

#include "runtime/cli/command.hpp"

#include <optional>
#include <vector>

namespace conclave::cli {

namespace {

/// An option backed by CONCLAVE_NODE_<FLAG>, whatever app it is added to.
template <class T>
CLI::Option* node_option(CLI::App* app, const std::string& flag, T& value,
                         const std::string& description) {
  return app->add_option(flag, value, description)->envname(env_name(flag, "node"));
}

/// Fills every option that neither a flag nor its environment variable set from
/// the config file (INI, `name = value`, names as the flags without "--", at the
/// top or in a `[node]` section: sections are named after the command), so that
/// flag > environment > config file. Unknown names and sections are bad input.
std::optional<std::string> apply_config_file(CLI::App* app, const node_flags& c) {
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigINI().from_file(c.config);
  } catch (const CLI::Error& e) {
    return "--config: cannot read " + c.config;
  }
  for (auto& item : items) {
    if (item.name == "++" || item.name == "--")
      continue; // CLI11's markers of a section's start and end
    if (!item.parents.empty() && item.parents != std::vector<std::string>{"node"})
      return "--config " + c.config + ": unknown section '[" + item.parents.front()
             + "]' (settings go at the top or in [node])";
    auto name = item.name;
    auto* opt = name == "config" ? nullptr : app->get_option_no_throw("--" + name);
    if (opt == nullptr)
      return "--config " + c.config + ": unknown setting '" + name + "'";
    if (opt->count() > 0)
      continue;
    try {
      // The INI reader splits "a,b,c" into items; every setting here is one value.
      std::string value;
      for (auto& v : item.inputs)
        value += (value.empty() ? "" : ",") + v;
      opt->add_result(value);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      return "--config " + c.config + ": setting '" + name + "': " + e.what();
    }
  }
  return std::nullopt;
}

} // namespace

void add_node_flags(CLI::App* app, node_flags& f) {
  auto& o = f.o;
  node_option(app, "--id", o.id,
              "this node's id: a positive integer, unique in the cluster");
  node_option(app, "--listen", o.listen,
              "HOST:PORT to listen on (beyond loopback only with --tls-*)");
  node_option(
      app, "--peers", o.peers,
      "required: the members, ID@HOST:PORT,... (this node may be listed with its own "
      "address; a group of one lists only this node)");
  node_option(app, "--metrics", o.metrics, "HOST:PORT to serve /metrics on");
  node_option(app, "--http", o.http,
              "HOST:PORT to serve the HTTP/JSON API on (HTTPS with --tls-*; without "
              "TLS, loopback only)");
  node_option(app, "--peers-http", o.peers_http,
              "the other members' HTTP addresses, ID@HOST:PORT,... (listed in "
              "/v1/cluster for the status page)");
  node_option(app, "--http-max-connections", o.http_max_connections,
              "HTTP connections served at once (each by a thread of its own); more are "
              "closed at once")
      ->capture_default_str();
  node_option(app, "--http-max-connections-per-source", o.http_max_connections_per_source,
              "HTTP connections served at once from one IP address")
      ->capture_default_str();
  node_option(app, "--data-dir", o.data_dir, "directory for status.json");
  node_option(app, "--checkpoint-every", o.checkpoint_every,
              "the replica checkpoints its state once the log since the last checkpoint "
              "holds this many records or 64 MiB (0: never)")
      ->capture_default_str();
  node_option(app, "--algorithm", o.algorithm,
              "bully, ring, or lease (lead while holding --leader-lease of the "
              "cluster's store)")
      ->capture_default_str();
  node_option(app, "--leader-lease", o.leader_lease,
              "--algorithm lease: the name of the lease the nodes race for")
      ->capture_default_str();
  node_option(app, "--leader-lease-ttl-ms", o.leader_lease_ttl_ms,
              "--algorithm lease: the lease's ttl (a dead leader is replaced after "
              "about this long)")
      ->capture_default_str();
  node_option(app, "--cluster", o.cluster,
              "cluster name; nodes of other clusters are refused")
      ->capture_default_str();
  node_option(app, "--detector", o.detector, "leader failure detector: fixed or phi")
      ->capture_default_str();
  node_option(app, "--heartbeat-ms", o.heartbeat_ms, "leader heartbeat interval")
      ->capture_default_str();
  node_option(app, "--detector-timeout-ms", o.detector_timeout_ms,
              "silence before the leader is suspected (phi: the earliest suspicion)")
      ->capture_default_str();
  node_option(app, "--phi-threshold", o.phi_threshold, "phi detector threshold")
      ->capture_default_str();
  node_option(app, "--election-wait-ms", o.election_wait_ms,
              "without a leader, how long to listen for one before electing")
      ->capture_default_str();
  node_option(app, "--link-heartbeat-ms", o.link_heartbeat_ms,
              "CAF middleman heartbeat on every connection (same on every member)")
      ->capture_default_str();
  node_option(app, "--link-timeout-ms", o.link_timeout_ms,
              "close a connection silent this long (same on every member)")
      ->capture_default_str();
  node_option(app, "--nice", o.nice,
              "CPU priority of the node's threads and, if it leads its session, of "
              "the session (-20..19; 0: as started; below 0 needs CAP_SYS_NICE)")
      ->capture_default_str();
  node_option(app, "--log-format", o.log_format,
              "text, or json (one object per line, for log shippers)")
      ->capture_default_str();
  app->add_flag("--preempt", o.preempt, "classic Bully: a higher id takes over on rejoin")
      ->envname(env_name("--preempt", "node"));
  app->add_flag("--no-quorum-guard", o.no_quorum_guard,
                "classic algorithms: a leader acts without a majority's lease (UNSAFE "
                "under partition: two leaders may act at once)")
      ->envname(env_name("--no-quorum-guard", "node"));
  app->add_flag("--no-death-proof", o.no_death_proof,
                "wait out a dead leader's lease even when its host proved it gone (a "
                "closed liveness connection); for comparison")
      ->envname(env_name("--no-death-proof", "node"));
  node_option(app, "--lease-ms", o.lease_ms,
              "quorum guard lease (0: 2/3 of --detector-timeout-ms)")
      ->capture_default_str();
  node_option(app, "--tls-ca", o.tls_ca,
              "CA certificate (PEM) that signs every member's");
  node_option(app, "--tls-cert", o.tls_cert,
              "this node's certificate (PEM), signed by the CA");
  node_option(app, "--tls-key", o.tls_key, "this node's private key (PEM)");
  node_option(app, "--config", f.config,
              "INI file with these settings (name = value, at the top or under [node]); "
              "flags and CONCLAVE_NODE_* variables take precedence");
}

node::result<node::node_config> finish_node_flags(CLI::App* app, node_flags& f) {
  if (!f.config.empty())
    if (auto err = apply_config_file(app, f))
      return *err;
  return node::make_node_config(f.o);
}

} // namespace conclave::cli
