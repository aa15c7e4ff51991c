// The launcher behind `conclave cluster`: N nodes on free loopback ports, each
// in its own session (setsid) with stdio in a log file, all state under DIR:
//
//   DIR/cluster.json        name, algorithm, binary (conclave, or the --program
//                           that embeds a node, and its arguments), and per
//                           node id, listen and metrics addresses
//   DIR/tls/               throwaway CA and node certificates (not with --insecure)
//   DIR/node-I/config.ini   the node's settings (the launcher passes no CONCLAVE_*
//                           variables on: the file says everything)
//   DIR/node-I/node.pid     its process id
//   DIR/node-I/node.log     its stdout and stderr
//   DIR/node-I/status.json  its view, written by the node (runtime/node)
//
// Processes are signalled only after checking that the pid still runs this
// node's command line (pids are reused). See docs/design/node.md.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace conclave::cluster {

struct up_options {
  size_t nodes = 3;
  std::string dir;
  std::string algorithm = "bully";
  std::string cluster = "conclave";
  std::chrono::milliseconds timeout{15000};
  bool json = false;
  /// Plaintext links; otherwise `up` makes a throwaway CA and node certificates
  /// in DIR/tls and the nodes use TLS with mutual authentication.
  bool insecure = false;
  /// Extra `name = value` lines for every node's config.ini (detector timing...).
  std::vector<std::string> node_settings;
  /// A program that embeds a node (include/conclave/node.hpp), started as
  /// `PROGRAM --config DIR/node-I/config.ini ARGS...` instead of `conclave node
  /// --config ...`; empty: this conclave binary.
  std::string program;
  std::vector<std::string> program_args;
};

/// A member as DIR/cluster.json records it.
struct member {
  uint64_t id = 0;
  std::string listen;  ///< HOST:PORT
  std::string metrics; ///< HOST:PORT, or empty
  std::string http;    ///< HOST:PORT of the HTTP/JSON API, or empty
};

/// cluster.json of a `cluster init` directory (pure): its name and members, and
/// a mark that `up`, `status`, `kill`, `restart` and `down` refuse (its nodes
/// run on other hosts), while `conclave kv --dir` reads it.
std::string init_cluster_json(const std::string& cluster,
                              const std::vector<member>& members);

/// prometheus-targets.json (Prometheus file-based discovery) for the members
/// that have a metrics address (pure).
std::string prometheus_targets_json(const std::string& cluster,
                                    const std::vector<member>& members);

/// What `status` reports for one node.
struct node_view {
  uint64_t id = 0;
  std::string address;
  std::string metrics; ///< HOST:PORT
  std::string http;    ///< HOST:PORT of the HTTP/JSON API, or empty
  int pid = 0;
  bool alive = false;   ///< the process runs (stopped or not)
  bool stopped = false; ///< SIGSTOP'ed
  bool leaving = false; ///< running, but its status says it is shutting down
  /// status.json exists, belongs to this pid, and the node runs and is not
  /// stopped: a frozen or departing node's last view is stale, not reported.
  bool reported = false;
  uint64_t leader = 0;
  uint64_t term = 0;
  uint64_t term_leader = 0;
  bool is_leader = false;
  /// The leader may act (with the quorum guard: inside its majority lease).
  bool acting = false;
  int64_t leader_since_us = 0;
  int64_t acting_since_us = 0;
  /// The node's replica as its status.json reports it (nodes with a data dir).
  bool has_replica = false;
  std::string replica_role;
  uint64_t commit_lsn = 0;
  uint64_t applied_lsn = 0;
  uint64_t replica_digest = 0;
};

/// The leader all live, running nodes in `nodes` agree on (same leader and term,
/// and the leader itself among them claims it and acts), if they do. Dead, stopped and
/// leaving nodes and those in `ignore` are left out.
struct agreement {
  uint64_t leader = 0;
  uint64_t term = 0;        ///< epoch
  uint64_t term_leader = 0; ///< the leader id of the term (printed EPOCH/LEADER)
  size_t members = 0;
  /// The last node to adopt this leader, or the leader starting to act if that
  /// came later; wall clock (µs).
  int64_t latest_change_us = 0;
};
std::optional<agreement> agreed_leader(const std::vector<node_view>& nodes,
                                       const std::vector<uint64_t>& ignore = {});

/// Parses KILL, SIGKILL, STOP, CONT, TERM, INT, 9, ... Returns 0 if unknown.
int parse_signal(const std::string& name);

// Commands: return the process exit status (0 ok, 1 failure/timeout, 2 bad input).
// status: 0 only if the live nodes agree on a leader (a health check), else 1.
// kill: node 0 means the leader the live nodes agree on; with `wait`, returns
// once `status` would report the new agreement.
int up(const up_options& o, std::ostream& out);
int status(const std::string& dir, bool json, std::ostream& out);
int kill(const std::string& dir, uint64_t node, int signal, bool wait,
         std::chrono::milliseconds timeout, bool json, std::ostream& out);
int restart(const std::string& dir, uint64_t node, std::chrono::milliseconds timeout,
            bool json, std::ostream& out);
int down(const std::string& dir, bool json, std::ostream& out);

/// What a client (conclave kv --dir) needs to reach the cluster in
/// `dir`: its name, its members as ID@HOST:PORT,..., and, unless it runs with
/// --insecure, the CA and the client certificate `up` made (DIR/tls/client.*;
/// the first node's in a directory made before client certificates) or
/// `init` made (DIR/client/client.*).
struct client_access {
  std::string cluster;
  std::string peers;
  bool tls = false;
  std::string ca;
  std::string cert;
  std::string key;
  /// Each member's HTTP/JSON API address (HOST:PORT), for those that have one.
  std::map<uint64_t, std::string> http;
};
std::optional<client_access> client_access_of(const std::string& dir);

/// The leader named by the newest term among the status files of the nodes
/// in `dir` (DIR/node-I/status.json), 0 if none names one. A hint for a
/// client, not a check: a node that died or froze leaves its last view
/// behind, and `init` directories have no status files.
uint64_t leader_named_in(const std::string& dir);

/// Reads every node's view (for tests and the bench).
std::vector<node_view> read_views(const std::string& dir);

} // namespace conclave::cluster
