// An in-process group of candidates 1..n that reach each other through a
// directory_transport: examples, benchmarks and tests start groups this way.
#pragma once

#include "actors/election/candidate_actor.hpp"
#include "actors/election/directory_transport.hpp"

#include <functional>
#include <map>
#include <memory>

namespace conclave::election {

struct local_group {
  std::shared_ptr<directory_transport> directory;
  std::map<node_id, candidate_actor> members;

  /// Sends start_atom to every member.
  void start_all() const;
  /// Sends an exit message to every member (a leader resigns first, unless
  /// `reason` is kill).
  void stop_all(caf::exit_reason reason) const;
};

/// Spawns candidates with ids 1..n, every one listing all as peers, with `base`
/// as the options template (id and peers are set here; base.net defaults to the
/// group's directory). `customize` may adjust each member's options.
local_group
spawn_local_group(caf::actor_system& sys, size_t n, candidate_options base,
                  std::shared_ptr<directory_transport> directory = nullptr,
                  const std::function<void(candidate_options&)>& customize = {});

} // namespace conclave::election
