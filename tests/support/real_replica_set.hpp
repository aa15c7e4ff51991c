// Test support: three replica hosts over memory devices on a real CAF
// scheduler, member 2 primary, for the blocking facades (kv_client,
// interactive_txn), which cannot run under the test coordinator.
#pragma once

#include "actors/replication/client.hpp"
#include "actors/replication/replica_host.hpp"
#include "storage/api/memory_log_device.hpp"
#include "storage/api/term_file.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace conclave::replication::testing {

class real_replica_set {
public:
  explicit real_replica_set(caf::actor_system& sys) {
    for (auto id : ids) {
      replica_host_options o;
      o.self = id;
      o.members = ids;
      o.device = std::make_shared<conclave::store::memory_log_device>();
      o.terms = std::make_shared<memory_term_file>();
      auto t = std::make_shared<actor_transport>();
      o.transport = t;
      transports.push_back(t);
      hosts.push_back(spawn_replica_host(sys, o));
    }
    for (auto& t : transports)
      for (size_t i = 0; i < ids.size(); ++i)
        t->set_peer(ids[i], hosts[i]);
    caf::scoped_actor self{sys};
    self->request(hosts[1], std::chrono::seconds(5),
                  become_primary_msg{term{1, ids[1], 0}})
        .receive([&](bool ok) { primary_up = ok; }, [](caf::error&) {});
  }

  /// Stops the hosts however the test ends (a primary's heartbeat timer
  /// would keep ~actor_system waiting).
  ~real_replica_set() {
    for (auto& h : hosts)
      caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  }

  client_options options() const {
    client_options o;
    o.members = ids;
    o.lookup = [hs = hosts](node_id id) { return hs.at(id.value - 1); };
    return o;
  }

  std::vector<node_id> ids{node_id{1}, node_id{2}, node_id{3}};
  std::vector<std::shared_ptr<actor_transport>> transports;
  std::vector<caf::actor> hosts;
  bool primary_up = false;
};

} // namespace conclave::replication::testing
