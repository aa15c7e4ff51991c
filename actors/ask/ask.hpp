// ask(): a request from a throw-away actor whose answer lands in a shared
// slot, for code that drives actors on CAF's test coordinator (the
// simulated world and the actor tests), where a blocking
// scoped_actor would wait forever: nothing runs until the caller runs the
// scheduler.
//
//   auto r = conclave::ask<uint64_t>(sys, store, commit_atom_v, t);
//   run();
//   if (r->done && !r->error) use(*r->value);
//
// Never blocks and never runs anything itself: the request is only enqueued.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>

#include <memory>
#include <optional>

namespace conclave {

/// The answer to a request, once the scheduler has delivered it.
template <class T>
struct reply {
  bool done = false;
  std::optional<T> value;
  caf::error error;
};

/// Whether every reply in `replies` (pointers to reply<T>) has arrived.
template <class Replies>
bool all_done(const Replies& replies) {
  for (auto& r : replies)
    if (!r->done)
      return false;
  return true;
}

/// Sends `xs...` to `to` from a throw-away actor spawned in `sys`; its answer
/// (a `T` or an error) lands in the returned slot.
template <class T, class Handle, class... Ts>
std::shared_ptr<reply<T>> ask(caf::actor_system& sys, const Handle& to, Ts... xs) {
  auto out = std::make_shared<reply<T>>();
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(to, caf::infinite, xs...)
        .then(
            [=](T& x) {
              out->value = std::move(x);
              out->done = true;
            },
            [=](caf::error& e) {
              out->error = std::move(e);
              out->done = true;
            });
  });
  return out;
}

} // namespace conclave
