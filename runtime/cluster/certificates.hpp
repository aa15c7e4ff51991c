// Certificates for `conclave cluster up` (a throwaway CA in DIR/tls/) and
// `conclave cluster init` (a new CA, or the user's, for nodes on other hosts):
// a CA, one certificate per node (CN node-ID) and one for clients (CN client:
// `conclave kv`; it names no member, so it cannot pass a member's identity
// proof), made with the `openssl` command-line tool.
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

/// How long the certificates live and which CA signs them. The defaults are
/// `cluster up`'s: a new throwaway CA, everything valid for 30 days.
struct certificate_options {
  /// Validity of the node and client certificates, in days.
  unsigned days = 30;
  /// Validity of a new CA, in days.
  unsigned ca_days = 30;
  /// Subject CN of a new CA; empty: "CLUSTER throwaway CA".
  std::string ca_name;
  /// An existing CA (certificate and unencrypted key, PEM) that signs instead
  /// of a new one; both or neither. Its certificate is copied to ca.pem.
  std::string ca_cert;
  std::string ca_key;
};

/// The `openssl` command-line arguments that make the CA (unless one is
/// given), each node's certificate and the client certificate (pure: for
/// tests and for the docs' recipe).
std::vector<std::vector<std::string>>
certificate_commands(const std::string& tls_dir, const std::string& cluster,
                     const std::vector<uint64_t>& ids,
                     const certificate_options& options = {});

/// Makes TLS_DIR/ca.pem, TLS_DIR/node-ID.{pem,key} for every id and
/// TLS_DIR/client.{pem,key} (replacing old ones; keys readable by the owner
/// only). A new CA's key is TLS_DIR/ca.key. The error names the failed step
/// and where the tool's output is (TLS_DIR/openssl.log).
node::result<void> make_certificates(const std::string& tls_dir,
                                     const std::string& cluster,
                                     const std::vector<uint64_t>& ids,
                                     const certificate_options& options = {});

/// The client certificate's files under `tls_dir`.
node_certificate client_certificate_of(const std::string& tls_dir);

/// The files of node `id` under `tls_dir`.
node_certificate certificate_of(const std::string& tls_dir, uint64_t id);

} // namespace conclave::cluster
