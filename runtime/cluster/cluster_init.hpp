// `conclave cluster init`: the files to run a cluster on several hosts, one
// node per host (or more, on distinct ports). Nothing is started: the user
// copies each node's files to its host and starts it there (docs/deploy.md).
//
//   OUT/cluster.json             name and members (so `conclave kv --dir
//                                OUT` finds them); marked as made by `init`
//   OUT/prometheus-targets.json  with --metrics-port: file-based discovery
//   OUT/ca/                      the certificate work directory: ca.pem, ca.key
//                                (a new CA only: keep it off the nodes),
//                                serials, openssl.log
//   OUT/node-ID/node-ID.conf     the node's config (`conclave node --config`),
//                                with paths as they are on its host
//   OUT/node-ID/node-ID.{pem,key}, ca.pem   its certificate (CN node-ID), key, CA
//   OUT/client/client.{pem,key}, ca.pem     for `conclave kv`
//   OUT/conclave-node@.service   a systemd unit template (instance = node id)
//
// Planning is pure (unit-tested); init() checks the filesystem, makes the
// certificates with certificates.hpp and writes the files.
#pragma once

#include "runtime/node/node_config.hpp"

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace conclave::cluster {

struct init_host {
  uint64_t id = 0;
  node::address address;
};

/// "ID@HOST:PORT,..." in the order given. Refuses an empty list, a malformed
/// entry, an entry without a host or with a wildcard one (0.0.0.0, ::: the
/// other members must be able to dial it), duplicate ids and duplicate
/// addresses. The error is the line for the user, without the flag name.
node::result<std::vector<init_host>> parse_hosts(std::string_view text);

struct init_options {
  std::string hosts;
  std::string dir;
  std::string cluster = "conclave";
  /// The user's CA (both or neither); otherwise a new one is made.
  std::string ca_cert;
  std::string ca_key;
  /// 0: no metrics endpoint; otherwise every node serves /metrics on HOST:PORT.
  unsigned metrics_port = 0;
  /// On the hosts: node ID keeps its data in DATA_DIR/node-ID.
  std::string data_dir = "/var/lib/conclave";
  /// On the hosts: where the config, certificate and key are installed.
  std::string config_dir = "/etc/conclave";
  /// On the hosts: the binary the systemd unit starts.
  std::string binary = "/usr/local/bin/conclave";
  /// Validity of the node and client certificates (a new CA lives 10 times longer).
  unsigned days = 365;
  /// Print one JSON document (what was written where) instead of the steps.
  bool json = false;
};

/// One file `init` writes, relative to OUT.
struct planned_file {
  std::string path;
  mode_t mode = 0644;
  /// The text to write; empty for files the certificate step makes.
  std::string content;
  /// For those: the file of that name in OUT/ca/ is copied here.
  std::string from_ca_dir;
};

struct init_plan {
  std::vector<init_host> hosts;
  std::vector<planned_file> files;
};

/// Validates the options (everything but the filesystem) and lists the files,
/// in the order they are written. The error is the line for the user, naming
/// the flag.
node::result<init_plan> plan_init(const init_options& o);

/// Node `self`'s config file, with the paths it has on its host.
std::string node_config_text(const init_options& o, const std::vector<init_host>& hosts,
                             const init_host& self);

/// The systemd unit template conclave-node@.service.
std::string systemd_unit_text(const init_options& o);

/// Runs `cluster init`: exit 0, 1 (a file could not be made) or 2 (bad input:
/// the options, a non-empty OUT, unreadable CA files), printing what to copy
/// where on success.
int init(const init_options& o, std::ostream& out);

} // namespace conclave::cluster
