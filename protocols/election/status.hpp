// What a candidate tells the outside: who leads, its term, participants, and
// leadership notifications for subscribers.
#pragma once

#include "protocols/election/candidate_core.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace conclave::election {

/// Answer to "who leads?".
struct leader_info {
  node_id self;
  node_id leader;
  term t;
  bool is_leader = false;
  bool acting = false;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, leader_info& x) {
    return f(caf::meta::type_name("leader_info"), x.self, x.leader, x.t, x.is_leader,
             x.acting);
  }
};

/// Pushed to subscribers on every leadership change.
struct leadership_event {
  enum class kind : uint8_t {
    became_leader,
    lost_leadership,
    leader_changed,
    acting_started,
    acting_stopped
  };
  kind what = kind::leader_changed;
  node_id self;   ///< the candidate reporting
  node_id leader; ///< the leader it now knows (no_node if none)
  term t;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, leadership_event& x) {
    return f(caf::meta::type_name("leadership_event"), x.what, x.self, x.leader, x.t);
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, participant& x) {
  return f(caf::meta::type_name("participant"), x.id, x.state);
}

} // namespace conclave::election
