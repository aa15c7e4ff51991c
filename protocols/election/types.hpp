// Strong types shared by every election algorithm: node ids, terms, time.
//
// A term is (epoch, leader id, leader incarnation), ordered lexicographically.
// Every completed election raises the epoch above the highest one its winner has
// seen, and the leader id keeps two leaders elected concurrently (on two sides of a
// partition, or by two racing initiators) distinct and totally ordered. The
// incarnation (fixed when a candidate starts; later starts get larger values)
// keeps a restarted candidate, which remembers nothing, from leading again under
// a term of its previous life: without it, two lives could stamp actions with one
// fencing token. Terms are fencing tokens: a candidate never accepts a leadership
// claim whose term is lower than the highest term it has seen.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace conclave::election {

/// Time as the protocol cores see it: a monotonic offset from an arbitrary
/// origin. The host supplies it (CAF's clock, real or virtual, or the simulator's
/// event queue); cores never read a clock themselves.
using timestamp = std::chrono::nanoseconds;
using duration = std::chrono::nanoseconds;

/// Identity of a candidate. Unique within a group; higher ids win elections.
struct node_id {
  uint64_t value = 0;

  friend constexpr bool operator==(node_id a, node_id b) { return a.value == b.value; }
  friend constexpr bool operator!=(node_id a, node_id b) { return a.value != b.value; }
  friend constexpr bool operator<(node_id a, node_id b) { return a.value < b.value; }
  friend constexpr bool operator>(node_id a, node_id b) { return a.value > b.value; }
  friend constexpr bool operator<=(node_id a, node_id b) { return a.value <= b.value; }
  friend constexpr bool operator>=(node_id a, node_id b) { return a.value >= b.value; }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, node_id& x) {
    return f(x.value);
  }
};

/// Marks "no node" (no leader known). Real ids start at 1.
constexpr node_id no_node{0};

inline std::string to_string(node_id x) {
  return std::to_string(x.value);
}

/// A leadership term: (epoch, leader), compared lexicographically.
struct term {
  uint64_t epoch = 0;
  node_id leader = no_node;
  uint64_t incarnation = 0;

  friend constexpr bool operator==(const term& a, const term& b) {
    return a.epoch == b.epoch && a.leader == b.leader && a.incarnation == b.incarnation;
  }
  friend constexpr bool operator!=(const term& a, const term& b) { return !(a == b); }
  friend constexpr bool operator<(const term& a, const term& b) {
    if (a.epoch != b.epoch)
      return a.epoch < b.epoch;
    if (a.leader != b.leader)
      return a.leader < b.leader;
    return a.incarnation < b.incarnation;
  }
  friend constexpr bool operator>(const term& a, const term& b) { return b < a; }
  friend constexpr bool operator<=(const term& a, const term& b) { return !(b < a); }
  friend constexpr bool operator>=(const term& a, const term& b) { return !(a < b); }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, term& x) {
    return f(x.epoch, x.leader, x.incarnation);
  }
};

/// "epoch/leader" — the incarnation is left out for readability.
inline std::string to_string(const term& t) {
  return std::to_string(t.epoch) + "/" + to_string(t.leader);
}

} // namespace conclave::election

template <>
struct std::hash<conclave::election::node_id> {
  size_t operator()(conclave::election::node_id x) const noexcept {
    return std::hash<uint64_t>{}(x.value);
  }
};
