// The flags every client command takes to reach a running cluster (kv, job,
// lock, elect, leader): one definition, so they have the same names, help
// and CONCLAVE_<COMMAND>_* variables everywhere.
#pragma once

#include "runtime/cli/command.hpp"
#include "runtime/cluster/access.hpp"

namespace conclave::cli {

/// --dir, --peers, --cluster, --tls-ca, --tls-cert, --tls-key into `a`.
inline void add_access_flags(CLI::App* sub, cluster::store_access& a) {
  option(sub, "--dir", a.dir,
         "a `conclave cluster up` or `cluster init` directory: its members, name, CA "
         "and client certificate");
  option(sub, "--peers", a.peers,
         "the members, ID@HOST:PORT,... (as given to the nodes)");
  option(sub, "--cluster", a.cluster, "cluster name")->capture_default_str();
  option(sub, "--tls-ca", a.tls_ca, "CA certificate (PEM) that signs the members'");
  option(sub, "--tls-cert", a.tls_cert,
         "a client certificate (PEM) signed by that CA (with --dir: instead of its own)");
  option(sub, "--tls-key", a.tls_key, "its private key (PEM)");
}

} // namespace conclave::cli
