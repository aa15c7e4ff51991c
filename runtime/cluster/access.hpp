// The flags every client command shares to reach a running cluster's store
// (--dir, or --peers with --cluster and --tls-*), settled into one set of
// members, name and TLS files. Plain files, no actor system: shared by the
// client commands (store_access.hpp connects over it) and the small front
// that serves one-shot `kv` operations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace conclave::cluster {

struct store_access {
  std::string peers;
  std::string cluster = "conclave";
  /// A `conclave cluster up` or `cluster init` directory: members, name, CA
  /// and client certificate (the --tls-* files win when given).
  std::string dir;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  /// Each member's HTTPS API address (HOST:PORT), from `dir`'s cluster.json
  /// (with --peers: none known).
  std::map<uint64_t, std::string> http;
};

/// Fills peers, cluster and TLS files from `dir`, and checks that the access
/// is complete: the one-line error otherwise (the commands exit 2 with it).
std::optional<std::string> settle_access(store_access& a);

} // namespace conclave::cluster
