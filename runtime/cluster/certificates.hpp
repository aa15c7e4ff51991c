// Throwaway certificates for `conclave cluster up`: a CA, one certificate per
// node (CN node-ID) and one for clients (CN client: `conclave kv`; it names
// no member, so it cannot pass a member's identity proof), made with the
// `openssl` command-line tool in DIR/tls/.
// No crypto of our own: the tool does it all. See docs/design/node.md.
#pragma once

#include "runtime/node/node_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace conclave::cluster {

/// The files one node is configured with.
struct node_certificate {
  std::string ca;
  std::string cert;
  std::string key;
};

/// The subject CN (and file stem) of the client certificate.
inline constexpr const char* client_certificate_name = "client";

/// The `openssl` command-line arguments that make the CA, each node's
/// certificate and the client certificate (pure: for tests and for the docs'
/// recipe).
std::vector<std::vector<std::string>>
certificate_commands(const std::string& tls_dir, const std::string& cluster,
                     const std::vector<uint64_t>& ids);

/// Makes DIR/tls/ca.pem, DIR/tls/node-ID.{pem,key} for every id and
/// DIR/tls/client.{pem,key} (replacing
/// old ones; keys readable by the owner only). The error names the failed step
/// and where the tool's output is (DIR/tls/openssl.log).
node::result<void> make_certificates(const std::string& tls_dir,
                                     const std::string& cluster,
                                     const std::vector<uint64_t>& ids);

/// The client certificate's files under `tls_dir`.
node_certificate client_certificate_of(const std::string& tls_dir);

/// The files of node `id` under `tls_dir`.
node_certificate certificate_of(const std::string& tls_dir, uint64_t id);

} // namespace conclave::cluster
