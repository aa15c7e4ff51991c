// Requests that the simulated workloads make of a world's actors from outside
// them (a user's submissions and polls, the checkers' reads and samples),
// answered into shared slots: what actors/ask/ask.hpp does, without
// spawning, running and destroying a throw-away actor for every request.
//
// The request goes into the recipient's mailbox at once, from one reply sink
// per world: an actor that is never scheduled and only hands each response to
// the callback waiting for its request id. A throw-away actor sent its
// request when the coordinator ran it, after the jobs queued before it; the
// workloads ask only while the coordinator is idle (between the world's
// events), so the recipients see the same requests in the same order.
// Nothing runs until the caller runs the world.
#pragma once

#include "actors/ask/ask.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_config.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_actor.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>
#include <caf/monitorable_actor.hpp>
#include <caf/sec.hpp>

#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

namespace conclave::sim {

/// Receives the responses to the requests an asker sent (see above).
class reply_sink final : public caf::monitorable_actor {
public:
  using handler = std::function<void(caf::message&)>;

  explicit reply_sink(caf::actor_config& cfg) : caf::monitorable_actor(cfg) {}

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit*) override {
    if (!what || !what->mid.is_response())
      return;
    auto i = waiting_.find(what->mid.request_id().integer_value());
    if (i == waiting_.end())
      return;
    auto f = std::move(i->second);
    waiting_.erase(i);
    auto msg = what->move_content_to_message();
    f(msg);
  }

  /// The request id of a new request whose response goes to `f`.
  caf::message_id expect(handler f) {
    auto id = next_++;
    waiting_.emplace(id, std::move(f));
    return caf::make_message_id(id);
  }

  /// Forgets every waiting callback (the world goes away).
  void clear() { waiting_.clear(); }

private:
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, handler> waiting_;
};

/// Sends requests to a world's actors (one per world, see above).
class asker {
public:
  explicit asker(caf::actor_system& sys) {
    caf::actor_config cfg;
    sink_ = caf::make_actor<reply_sink, caf::strong_actor_ptr>(sys.next_actor_id(),
                                                               sys.node(), &sys, cfg);
  }

  ~asker() { sink().clear(); }

  asker(const asker&) = delete;
  asker& operator=(const asker&) = delete;

  /// Sends `msg` to `to`; its answer goes to `on_value` if it is a `T`, to
  /// `on_error` otherwise (an error, or an unexpected answer).
  template <class T, class Handle, class OnValue, class OnError>
  void request(const Handle& to, caf::message msg, OnValue on_value, OnError on_error) {
    auto mid = sink().expect([on_value = std::move(on_value),
                              on_error = std::move(on_error)](caf::message& m) mutable {
      if (m.match_elements<T>()) {
        on_value(m.get_mutable_as<T>(0));
      } else if (m.match_elements<caf::error>()) {
        on_error(m.get_mutable_as<caf::error>(0));
      } else {
        caf::error e = caf::make_error(caf::sec::unexpected_response);
        on_error(e);
      }
    });
    auto dest = caf::actor_cast<caf::strong_actor_ptr>(to);
    if (!dest) {
      caf::error e = caf::make_error(caf::sec::invalid_argument);
      sink().enqueue(caf::make_mailbox_element(nullptr, mid.response_id(), {}, e),
                     nullptr);
      return;
    }
    dest->enqueue(caf::make_mailbox_element(sink_, mid, {}, std::move(msg)), nullptr);
  }

  /// ask() of actors/ask/ask.hpp through this asker.
  template <class T, class Handle, class... Ts>
  std::shared_ptr<reply<T>> ask(const Handle& to, Ts... xs) {
    auto out = std::make_shared<reply<T>>();
    request<T>(
        to, caf::make_message(std::move(xs)...),
        [out](T& x) {
          out->value = std::move(x);
          out->done = true;
        },
        [out](caf::error& e) {
          out->error = std::move(e);
          out->done = true;
        });
    return out;
  }

private:
  reply_sink& sink() { return *caf::actor_cast<reply_sink*>(sink_); }

  caf::strong_actor_ptr sink_;
};

} // namespace conclave::sim
