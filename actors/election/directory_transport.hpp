// A transport over CAF actor handles: a directory maps node ids to candidate
// handles, local or remote (middleman proxies look the same), and watching is a
// CAF monitor. Used for in-process groups, and by nodes once they have connected
// to their peers. The directory may change while candidates run (a peer
// reconnects): it is guarded by a mutex. Messages carry their sending
// candidate as CAF sender, and a message is taken only from the handle
// registered for the member it names (admits()): over the wire, CAF attributes
// a message to an actor of the node at the other end of the connection, so a
// process linked as one member cannot speak for another.
#pragma once

#include "actors/election/candidate_actor.hpp"
#include "actors/election/host.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace conclave::election {

class directory_transport final : public transport {
public:
  /// Registers (or replaces) the handle of `id`.
  void put(node_id id, candidate_actor handle);
  void erase(node_id id);
  candidate_actor get(node_id id) const;

  void send(caf::local_actor* self, node_id to, const message& m) override;
  void watch(caf::local_actor* self, node_id peer) override;
  std::optional<node_id> node_of(const caf::actor_addr& addr) const override;
  /// Only the registered handle of `from` speaks for `from`: send() names the
  /// sending candidate as the sender, and a message from any other actor, or
  /// from a member not registered now, is refused.
  bool admits(const caf::strong_actor_ptr& sender, node_id from) const override;

private:
  mutable std::mutex mtx_;
  std::map<node_id, candidate_actor> handles_;
};

} // namespace conclave::election
