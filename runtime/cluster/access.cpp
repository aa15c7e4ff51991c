// See access.hpp.
#include "runtime/cluster/access.hpp"

#include "runtime/cluster/cluster.hpp"

namespace conclave::cluster {

std::optional<std::string> settle_access(store_access& a) {
  if (!a.dir.empty()) {
    if (!a.peers.empty())
      return std::string{"give either --dir or --peers, not both"};
    auto c = client_access_of(a.dir);
    if (!c)
      return "--dir: no cluster in " + a.dir + " (no readable cluster.json)";
    a.peers = c->peers;
    a.cluster = c->cluster;
    // --tls-* given with --dir: the user's own files win.
    bool own = !a.tls_ca.empty() || !a.tls_cert.empty() || !a.tls_key.empty();
    if (c->tls && !own) {
      a.tls_ca = c->ca;
      a.tls_cert = c->cert;
      a.tls_key = c->key;
    }
    a.http = c->http;
  }
  if (a.peers.empty())
    return std::string{"give --peers ID@HOST:PORT,... or --dir DIR"};
  int tls_given = !a.tls_ca.empty() + !a.tls_cert.empty() + !a.tls_key.empty();
  if (tls_given != 0 && tls_given != 3)
    return std::string{"give all of --tls-ca, --tls-cert and --tls-key, or none"};
  return std::nullopt;
}

} // namespace conclave::cluster
