// Settings of one `conclave node`: who it is, where it listens, who its peers
// are, how it elects and detects failures, where it reports. Parsing and
// validation are pure functions (unit-tested); the CLI fills `node_options`
// from flags, CONCLAVE_* variables and a config file, then calls
// make_node_config(), whose error is the one line shown to the user (exit 2).
#pragma once

#include "protocols/election/config.hpp"
#include "runtime/node/node_log.hpp"
#include "runtime/node/peer_address.hpp"

#include <boost/outcome.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace conclave::node {

/// What the user gave, as text (flags, environment or config file).
struct node_options {
  uint64_t id = 0;
  std::string listen;
  std::string peers;
  std::string metrics;
  std::string http;
  /// The other members' HTTP addresses, ID@HOST:PORT,... (shown in
  /// /v1/cluster so that a status page can move to another member).
  std::string peers_http;
  /// Open HTTP connections served at once, in all and from one IP address
  /// (http_server.hpp, http_limits).
  unsigned http_max_connections = 64;
  unsigned http_max_connections_per_source = 16;
  std::string data_dir;
  /// The replica checkpoints once its log since the last checkpoint holds
  /// this many records or 64 MiB (0: never).
  uint64_t checkpoint_every = 100000;
  std::string algorithm = "bully";
  std::string cluster = "conclave";
  /// Leader detection: heartbeats every 20 ms, phi accrual that suspects no
  /// earlier than 90 ms of silence (lease 60 ms): a frozen leader is replaced
  /// in about 80 ms. Slower profiles (`--detector fixed --heartbeat-ms 50
  /// --detector-timeout-ms 150`) tolerate longer stalls of a live leader's
  /// process (docs/design/node.md, "Default timing").
  std::string detector = "phi";
  unsigned heartbeat_ms = 20;
  unsigned detector_timeout_ms = 90;
  double phi_threshold = 8.0;
  unsigned election_wait_ms = 150;
  unsigned link_heartbeat_ms = 100;
  unsigned link_timeout_ms = 1000;
  /// The nice value the node asks for (-20..19; 0: the priority it was
  /// started with). Negative values need CAP_SYS_NICE (os_priority.hpp).
  int nice = 0;
  bool preempt = false;
  /// The quorum guard (on unless --no-quorum-guard): a leader acts only inside a
  /// lease renewed by a majority. 0: the lease is 2/3 of the detector timeout.
  bool no_quorum_guard = false;
  /// Proofs of death (on unless --no-death-proof, with the guard): a member
  /// whose process is gone (its host closed its liveness connection) is not
  /// waited out for its lease (docs/design/election.md, "Proofs of death").
  bool no_death_proof = false;
  unsigned lease_ms = 0;
  /// --algorithm lease: the store lease the candidates race for, and its ttl.
  std::string leader_lease = "conclave.leader";
  unsigned leader_lease_ttl_ms = 2000;
  std::string log_format = "text";
  /// TLS between nodes (all three or none): CA file, this node's certificate and key.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
};

/// A validated node configuration.
struct node_config {
  election::node_id id;
  std::string cluster;
  address listen;
  std::map<uint64_t, address> peers; ///< the other members (never this node)
  std::optional<address> metrics;
  /// The HTTP/JSON API (http_server.hpp): over TLS when tls is set, else on
  /// loopback only.
  std::optional<address> http;
  /// Other members' HTTP addresses, as far as configured (--peers-http).
  std::map<uint64_t, address> peers_http;
  size_t http_max_connections = 64;
  size_t http_max_connections_per_source = 16;
  std::string data_dir; ///< empty: no status file
  /// Replica checkpoint triggers (replica_host_options): records and bytes
  /// of log since the last checkpoint; 0 disables one.
  uint64_t checkpoint_every_records = 100000;
  uint64_t checkpoint_every_bytes = 64u << 20;
  election::election_config election;
  /// --algorithm lease: the node's leader task runs while it holds this lease
  /// of the cluster's store (lease_leadership.hpp); the replica set still
  /// elects its primary with Bully and the quorum guard.
  bool lease_leadership = false;
  std::string leader_lease = "conclave.leader";
  std::chrono::milliseconds leader_lease_ttl{2000};
  /// The nice value the node asks for at start (os_priority.hpp).
  int nice = 0;
  /// CAF middleman: heartbeat on every connection, and the silence after which a
  /// connection is closed (every member must use the same values).
  std::chrono::milliseconds link_heartbeat{100};
  std::chrono::milliseconds link_timeout{1000};
  node::log_format log_format = node::log_format::text;
  /// TLS with mutual authentication when set (files checked readable).
  struct tls_files {
    std::string ca;
    std::string cert;
    std::string key;
  };
  std::optional<tls_files> tls;
};

/// Validates the options: without TLS, every address on loopback (CAF 0.17's
/// plaintext wire protocol cannot be exposed safely: docs/design/node.md); id,
/// listen and peers given (a node always names its group, so a typo cannot turn
/// it into a group of one), addresses well-formed, no duplicate ids or addresses,
/// this node listed among the peers only with its own address, settings
/// consistent. Does not touch the network (see check_ports).
result<node_config> make_node_config(const node_options& o);

/// Why an address cannot be bound: the line for the user (which flag and
/// address, and why), and whether the port is taken (exit_address_in_use) rather
/// than the input bad (an unknown host: exit 2).
struct bind_failure {
  std::string message;
  bool in_use = false;
};

/// Why HOST:PORT cannot be bound right now (as a listener with address reuse);
/// nullopt if it can.
std::optional<bind_failure> check_bindable(const address& a, std::string_view flag);

} // namespace conclave::node
