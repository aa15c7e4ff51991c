#include "actors/election/local_group.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

namespace conclave::election {

void local_group::start_all() const {
  for (auto& [id, h] : members)
    caf::anon_send(h, election_atoms::start_atom::value);
}

void local_group::stop_all(caf::exit_reason reason) const {
  for (auto& [id, h] : members)
    caf::anon_send_exit(h, reason);
}

local_group spawn_local_group(caf::actor_system& sys, size_t n, candidate_options base,
                              std::shared_ptr<directory_transport> directory,
                              const std::function<void(candidate_options&)>& customize) {
  local_group g;
  g.directory =
      directory ? std::move(directory) : std::make_shared<directory_transport>();
  if (!base.net)
    base.net = g.directory;
  base.peers.clear();
  for (uint64_t i = 1; i <= n; ++i)
    base.peers.push_back(node_id{i});
  for (auto id : base.peers) {
    auto o = base;
    o.id = id;
    if (customize)
      customize(o);
    auto h = spawn_candidate(sys, std::move(o));
    g.directory->put(id, h);
    g.members.emplace(id, h);
  }
  return g;
}

} // namespace conclave::election
