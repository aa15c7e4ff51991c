// store_actor: the reliable collections store as a CAF actor, for actors that
// must not block a worker thread while a lock is held elsewhere or a commit
// waits for fdatasync. It serves one state_manager (shared with threads that
// use the library API directly).
//
// Protocol: see store_interface.hpp (the same typed interface as store_host).
//
// Waiting never blocks: a request whose lock is taken is parked in the store
// and answered when the lock is granted or its timeout passes; meanwhile the
// actor serves other requests. Transactions begun through the actor are
// aborted when the actor terminates.
#pragma once

#include "actors/store/store_interface.hpp"
#include "storage/state_manager.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <memory>

namespace conclave::store {

/// Spawns an actor serving `store`. The store must stay open while the actor
/// lives (the actor holds a shared reference).
store_actor spawn_store_actor(caf::actor_system& sys,
                              std::shared_ptr<state_manager> store);

} // namespace conclave::store
