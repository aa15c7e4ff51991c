// See client_connect.hpp.
#include "runtime/cluster/client_connect.hpp"

#include "actors/replication/type_ids.hpp"
#include "runtime/node/bounded_connect.hpp"
#include "runtime/node/gate_actor.hpp"
#include "runtime/node/socket_numbers.hpp"
#include "runtime/node/tls_error_queue.hpp"
#include "runtime/node/tls_reuse.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include <openssl/ssl.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace conclave::cluster {

void configure_client(caf::actor_system_config& cfg, const std::string& tls_ca,
                      const std::string& tls_cert, const std::string& tls_key) {
  cfg.load<caf::io::middleman>();
  // Keeps this executable's socket renumbering linked in (socket_numbers.hpp):
  // CAF names a connection by its descriptor number.
  (void)node::socket_renumbering_active();
  // And the bound on a dial's blocking connect (bounded_connect.hpp): a
  // member cut off by the network must not hold every other dial.
  (void)node::bounded_connect_active();
  if (!tls_ca.empty()) {
    cfg.load<caf::openssl::manager>();
    cfg.openssl_cafile = tls_ca;
    cfg.openssl_certificate = tls_cert;
    cfg.openssl_key = tls_key;
    // A frozen member accepts the TCP connection (its kernel does) but never
    // answers the TLS handshake: without pacing, CAF's I/O thread would spin
    // a core on it for as long as the process runs.
    node::pace_pending_tls_dials(true);
  }
  cfg.add_message_types<caf::id_block::conclave_replication>();
  // A node closes a link that stays silent for its link timeout (1 s by
  // default), and a request sent afterwards to the front it gave is dropped
  // (the requester sees a timeout, not an error): a client that keeps its
  // connection between requests must send heartbeats like a node.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds{100}});
}

tls_warm_up::tls_warm_up(const std::string& tls_ca, const std::string& tls_cert,
                         const std::string& tls_key) {
  if (tls_ca.empty())
    return;
  // The context itself is of no use: what stays is OpenSSL's process-wide
  // state (initialised once, thread-safely), its cache of fetched
  // algorithms, and the parsed files, which CAF's contexts then find ready.
  thread_ = std::thread{[tls_ca, tls_cert, tls_key] {
    SSL_CTX_free(SSL_CTX_new(TLS_method()));
    node::preload_tls_files(tls_cert, tls_key, tls_ca);
  }};
}

tls_warm_up::~tls_warm_up() {
  join();
}

void tls_warm_up::join() {
  if (thread_.joinable())
    thread_.join();
}

front_answer connect_front(caf::scoped_actor& self, const std::string& cluster,
                           uint64_t id, const node::address& where,
                           std::chrono::milliseconds step) {
  auto& sys = self->system();
  auto mm = sys.has_openssl_manager() ? sys.openssl_manager().actor_handle()
                                      : sys.middleman().actor_handle();
  front_answer out;
  node::gate_actor gate;
  self->request(mm, step, caf::connect_atom::value, where.host, where.port)
      .receive(
          [&](const caf::node_id&, caf::strong_actor_ptr& ptr,
              const std::set<std::string>& ifs) {
            if (!ptr)
              out.error = "node " + std::to_string(id) + ": nothing published at "
                          + where.to_string();
            else if (ifs != sys.message_types(caf::detail::type_list<node::gate_actor>{}))
              out.error = "node " + std::to_string(id) + " at " + where.to_string()
                          + " is not a conclave node of this version";
            else
              gate = caf::actor_cast<node::gate_actor>(ptr);
          },
          [&](caf::error& e) {
            out.error = "node " + std::to_string(id) + " at " + where.to_string() + ": "
                        + sys.render(e);
          });
  if (!gate)
    return out;
  self->request(gate, step, node::client_hello_atom::value, cluster)
      .receive(
          [&](const caf::actor& f, uint64_t, uint64_t p, const std::string&,
              const std::string& refused) {
            if (!refused.empty()) {
              out.error = "node " + std::to_string(id) + " refused: " + refused;
              return;
            }
            out.primary = p;
            out.front = f;
          },
          [&](caf::error& e) {
            out.error = "node " + std::to_string(id) + ": " + sys.render(e);
          });
  return out;
}

} // namespace conclave::cluster
