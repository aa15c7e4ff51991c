// ask(): a request from a throw-away actor whose answer lands in a shared
// slot, for tests on the test coordinator (where a blocking scoped_actor
// would wait forever: nothing runs until the test runs the scheduler).
//
//   auto r = conclave::testing::ask<uint64_t>(sys(), store, commit_atom_v, t);
//   run();
//   ASSERT_TRUE(r->done); EXPECT_FALSE(r->error);
#pragma once

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>

#include <memory>
#include <optional>

namespace conclave::testing {

template <class T>
struct reply {
  bool done = false;
  std::optional<T> value;
  caf::error error;
};

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

} // namespace conclave::testing
