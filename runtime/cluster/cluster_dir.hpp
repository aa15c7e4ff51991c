// The files of a `conclave cluster up` / `cluster init` directory as its
// clients read them: cluster.json (name, members, binary), DIR/tls and each
// node's directory. Plain files and JSON, no actor system: shared by the
// cluster commands and the small front that serves one-shot `kv`
// operations (runtime/front/).
#pragma once

#include "runtime/cluster/cluster.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace conclave::cluster::files {

struct cluster_file {
  std::string name;
  std::string algorithm;
  std::string binary;
  /// `binary` is a program that embeds a node (`up --program`): started with
  /// `--config FILE program_args...`, without the `node` command.
  bool program = false;
  std::vector<std::string> program_args;
  std::vector<member> nodes;
  /// Written by `cluster init` for nodes on other hosts: no process here to
  /// start, signal or watch.
  bool made_by_init = false;
};

/// What `cluster init` writes as "made_by" in cluster.json.
inline constexpr const char* made_by_init_mark = "conclave cluster init";

/// The bytes of `p` ("" if it cannot be read).
std::string read_file(const std::filesystem::path& p);

/// DIR/tls: the throwaway CA and node certificates (`up` without --insecure).
std::string tls_dir(const std::string& dir);

/// DIR/node-ID.
std::filesystem::path node_dir(const std::string& dir, uint64_t id);

/// DIR/cluster.json; nothing if it is missing or not the JSON `up` and
/// `init` write (a field of the wrong type included).
std::optional<cluster_file> load_cluster(const std::string& dir);

} // namespace conclave::cluster::files
