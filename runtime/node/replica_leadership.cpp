#include "runtime/node/replica_leadership.hpp"

#include "actors/replication/type_ids.hpp"

#include <caf/send.hpp>

namespace conclave::node {

std::optional<replica_signal> leadership_tracker::observe(const leadership_view& v) {
  if (v.is_leader && v.acting && v.t.leader == v.self) {
    if (primary_of_ == v.t)
      return std::nullopt;
    primary_of_ = v.t;
    told_leader_.reset();
    return replication::become_primary_msg{v.t};
  }
  // Not (or no longer) the acting leader: tell the host once per term if it
  // was made primary, or when another node leads a term it was not told of.
  bool was_primary = primary_of_.has_value();
  bool other_leads = v.leader != election::no_node && v.leader != v.self;
  if (!was_primary && !other_leads)
    return std::nullopt;
  if (!was_primary && told_leader_ == v.t)
    return std::nullopt;
  primary_of_.reset();
  told_leader_ = v.t;
  return replication::leader_is_msg{v.t};
}

std::optional<uint64_t> lead_above_epoch(const std::optional<election::term>& acting,
                                         const replication::replica_status& s) {
  if (!acting || s.failed || !(*acting < s.promised))
    return std::nullopt;
  return s.promised.epoch;
}

void leadership_relay::state(const election::candidate_core& core,
                             election::timestamp now) {
  inner_->state(core, now);
  leadership_view v{core.id(), core.is_leader(), core.acting(), core.current_term(),
                    core.leader()};
  if (board_) {
    bool acting = v.is_leader && v.acting && v.t.leader == v.self;
    if (acting)
      board_->set_acting(v.t, core.lease_expiry());
    else
      board_->set_acting(std::nullopt);
  }
  if (auto s = tracker_.observe(v)) {
    std::visit([this](const auto& m) { caf::anon_send(host_, m); }, *s);
    if (board_)
      if (auto f = board_->front())
        caf::anon_send(f, replica_refresh_atom::value);
  }
}

} // namespace conclave::node
