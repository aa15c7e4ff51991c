// conclave node: one member of a cluster as an OS process. See docs/design/node.md.
#include "runtime/cli/commands.hpp"

#include "runtime/node/node.hpp"
#include "runtime/node/node_config.hpp"

#include <memory>

namespace conclave::cli {

namespace {

struct node_command {
  node::node_options o;
  std::string config;
  CLI::App* sub = nullptr;
};

/// Fills every option that neither a flag nor its environment variable set from
/// the config file (INI, `name = value`, names as the flags without "--", at the
/// top or in a `[node]` section: sections are named after the command), so that
/// flag > environment > config file. Unknown names and sections are bad input.
std::optional<std::string> apply_config_file(node_command& c) {
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
    auto* opt = name == "config" ? nullptr : c.sub->get_option_no_throw("--" + name);
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

int run(node_command& c) {
  if (!c.config.empty())
    if (auto err = apply_config_file(c))
      return bad_input(*err);
  auto cfg = node::make_node_config(c.o);
  if (!cfg)
    return bad_input(cfg.error());
  for (auto [addr, flag] :
       {std::pair{&cfg.value().listen, "--listen"},
        std::pair{cfg.value().metrics ? &*cfg.value().metrics : nullptr, "--metrics"}}) {
    if (addr == nullptr)
      continue;
    if (auto r = node::check_bindable(*addr, flag)) {
      bad_input(r->message);
      return r->in_use ? node::exit_address_in_use : int{exit_bad_input};
    }
  }
  return node::run_node(cfg.value());
}

} // namespace

void add_node_command(command_registry& reg) {
  auto c = std::make_shared<node_command>();
  auto* sub = reg.add("node", "Run one member of a cluster (until SIGTERM)",
                      [c] { return run(*c); });
  c->sub = sub;
  auto& o = c->o;
  option(sub, "--id", o.id, "this node's id: a positive integer, unique in the cluster");
  option(sub, "--listen", o.listen,
         "HOST:PORT to listen on (beyond loopback only with --tls-*)");
  option(sub, "--peers", o.peers,
         "required: the members, ID@HOST:PORT,... (this node may be listed with its own "
         "address; a group of one lists only this node)");
  option(sub, "--metrics", o.metrics, "HOST:PORT to serve /metrics on");
  option(sub, "--data-dir", o.data_dir, "directory for status.json");
  option(sub, "--checkpoint-every", o.checkpoint_every,
         "the replica checkpoints its state once the log since the last checkpoint "
         "holds this many records or 64 MiB (0: never)")
      ->capture_default_str();
  option(sub, "--algorithm", o.algorithm, "bully or ring")->capture_default_str();
  option(sub, "--cluster", o.cluster, "cluster name; nodes of other clusters are refused")
      ->capture_default_str();
  option(sub, "--detector", o.detector, "leader failure detector: fixed or phi")
      ->capture_default_str();
  option(sub, "--heartbeat-ms", o.heartbeat_ms, "leader heartbeat interval")
      ->capture_default_str();
  option(sub, "--detector-timeout-ms", o.detector_timeout_ms,
         "silence before the leader is suspected (phi: the earliest suspicion)")
      ->capture_default_str();
  option(sub, "--phi-threshold", o.phi_threshold, "phi detector threshold")
      ->capture_default_str();
  option(sub, "--election-wait-ms", o.election_wait_ms,
         "without a leader, how long to listen for one before electing")
      ->capture_default_str();
  option(sub, "--link-heartbeat-ms", o.link_heartbeat_ms,
         "CAF middleman heartbeat on every connection (same on every member)")
      ->capture_default_str();
  option(sub, "--link-timeout-ms", o.link_timeout_ms,
         "close a connection silent this long (same on every member)")
      ->capture_default_str();
  option(sub, "--log-format", o.log_format,
         "text, or json (one object per line, for log shippers)")
      ->capture_default_str();
  sub->add_flag("--preempt", o.preempt, "classic Bully: a higher id takes over on rejoin")
      ->envname(env_name("--preempt"));
  sub->add_flag("--no-quorum-guard", o.no_quorum_guard,
                "classic algorithms: a leader acts without a majority's lease (UNSAFE "
                "under partition: two leaders may act at once)")
      ->envname(env_name("--no-quorum-guard"));
  option(sub, "--lease-ms", o.lease_ms,
         "quorum guard lease (0: 2/3 of --detector-timeout-ms)")
      ->capture_default_str();
  option(sub, "--tls-ca", o.tls_ca, "CA certificate (PEM) that signs every member's");
  option(sub, "--tls-cert", o.tls_cert,
         "this node's certificate (PEM), signed by the CA");
  option(sub, "--tls-key", o.tls_key, "this node's private key (PEM)");
  option(sub, "--config", c->config,
         "INI file with these settings (name = value, at the top or under [node]); "
         "flags and CONCLAVE_NODE_* variables take precedence");
}

} // namespace conclave::cli
