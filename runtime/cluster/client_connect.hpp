// Connecting a client process to a running cluster's replicated store: the
// actor-system setup (middleman, TLS through CAF's openssl manager, the
// replication message types) and the client hello at a member's gate that
// returns the replica's front. configure_client is shared by `conclave kv`
// and the replication benchmark (tests/bench/replication); connect_front is
// the blocking one-member form the benchmark's warm-up uses (kv connects to
// every member asynchronously: front_directory.hpp). See docs/design/node.md
// ("conclave kv").
#pragma once

#include "runtime/node/node_config.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace conclave::cluster {

/// Loads the middleman (and, when `tls_ca` is not empty, the openssl manager
/// with these files) and the replication message types into `cfg`.
void configure_client(caf::actor_system_config& cfg, const std::string& tls_ca,
                      const std::string& tls_cert, const std::string& tls_key);

/// OpenSSL's one-time set-up in a process (the first SSL context fetches the
/// provider's algorithm tables: about 1.5 ms of CPU, cheap for every later
/// context) and the parsing of the certificate, key and CA files (about
/// 0.8 ms; node/tls_reuse.hpp keeps them parsed for CAF's contexts), on a
/// thread of its own: started before the actor system, it overlaps the
/// system's start instead of delaying the first TLS dial. Does nothing when
/// `tls_ca` is "". A dial that comes first waits for the files it needs
/// (OpenSSL's set-up and the parsed-file cache are thread-safe); the
/// destructor joins.
class tls_warm_up {
public:
  tls_warm_up(const std::string& tls_ca, const std::string& tls_cert,
              const std::string& tls_key);
  ~tls_warm_up();
  tls_warm_up(const tls_warm_up&) = delete;
  tls_warm_up& operator=(const tls_warm_up&) = delete;
  void join();

private:
  std::thread thread_;
};

/// What a client hello at one member's gate gave.
struct front_answer {
  caf::actor front;     ///< the replica's front; null when `error` says why
  uint64_t primary = 0; ///< the primary the member names (0: none known)
  std::string error;
};

/// Connects to member `id`'s gate at `where` (over TLS when the system has
/// the openssl manager) and asks for the front of cluster `cluster`; each of
/// the two steps waits at most `step`.
front_answer connect_front(caf::scoped_actor& self, const std::string& cluster,
                           uint64_t id, const node::address& where,
                           std::chrono::milliseconds step);

} // namespace conclave::cluster
