#include "actors/election/directory_transport.hpp"

#include <caf/local_actor.hpp>
#include <caf/send.hpp>

namespace conclave::election {

void directory_transport::put(node_id id, candidate_actor handle) {
  std::lock_guard<std::mutex> guard{mtx_};
  handles_[id] = std::move(handle);
}

void directory_transport::erase(node_id id) {
  std::lock_guard<std::mutex> guard{mtx_};
  handles_.erase(id);
}

candidate_actor directory_transport::get(node_id id) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = handles_.find(id);
  return i == handles_.end() ? candidate_actor{} : i->second;
}

void directory_transport::send(caf::local_actor* self, node_id to, const message& m) {
  auto h = get(to);
  if (!h)
    return; // not connected: dropped, as on a real network
  // Sent as `self`, so that the receiver can check who speaks (admits()).
  auto sender = self != nullptr ? caf::actor_cast<caf::strong_actor_ptr>(self)
                                : caf::strong_actor_ptr{};
  std::visit(
      [&](const auto& x) {
        h->eq_impl(caf::make_message_id(), std::move(sender),
                   self != nullptr ? self->context() : nullptr, x);
      },
      m);
}

bool directory_transport::admits(const caf::strong_actor_ptr& sender,
                                 node_id from) const {
  if (!sender)
    return false;
  auto h = get(from);
  return h && h.address() == caf::actor_cast<caf::actor_addr>(sender);
}

void directory_transport::watch(caf::local_actor* self, node_id peer) {
  if (auto h = get(peer))
    self->monitor(h);
}

std::optional<node_id> directory_transport::node_of(const caf::actor_addr& addr) const {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [id, h] : handles_)
    if (h.address() == addr)
      return id;
  return std::nullopt;
}

} // namespace conclave::election
