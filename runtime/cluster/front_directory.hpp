// A client process's connections to every member of a cluster: the replica
// front of each member (client hello at its gate, client_connect.hpp),
// connected asynchronously and kept connected, for the client library's
// host lookup (actors/replication/client.hpp), which must not block.
//
// An actor dials every member at once through the system's middleman (the
// openssl manager's when the system has one) and asks its gate for the
// front; it monitors each front it gets. A member that cannot be reached, or
// whose front goes down (its node died or the link dropped), is dialed again
// after a backoff (retry_first doubling up to retry_max). lookup() reads the
// current table under a mutex, from any thread: an invalid handle means "not
// connected now". Used by `conclave kv` and the replication benchmark.
//
// With front_directory_options::first (a member, e.g. the primary a cache or
// the cluster directory names), only that member is dialed at first, so that
// a one-shot client pays for one TLS handshake instead of one per member. The
// others are dialed as soon as any of these happens: a dial fails or a front
// goes down, `spread_after` passes without the first member's front (it may
// be frozen: its kernel accepts the connection, the member never answers), a
// gate names another member as the primary (that one), or lookup() asks for a
// member not dialed yet (that one: the client library follows a hint there).
// A wrong `first` costs a detour, never a wrong answer: the client library
// finds the primary whichever members are connected.
#pragma once

#include "runtime/node/node_config.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace conclave::cluster {

struct front_directory_options {
  std::string cluster;
  std::map<uint64_t, node::address> members;
  /// How long one connect and one client hello may take.
  std::chrono::milliseconds step_timeout{1000};
  std::chrono::milliseconds retry_first{20};
  std::chrono::milliseconds retry_max{500};
  /// A member to dial alone at first (0, or not a member: dial every member
  /// at once).
  uint64_t first = 0;
  /// With `first`: when to dial the others if its front is not up by then.
  std::chrono::milliseconds spread_after{50};
  /// Make each member's TCP connection on a thread of its own before the
  /// middleman dials (runtime/node/bounded_connect.hpp, probe_connect), so
  /// that a member cut off by the network holds no other dial. For one-shot
  /// clients such as `conclave kv`; off elsewhere.
  bool probe_first = false;
};

class front_directory {
public:
  /// Starts connecting to every member (the system must be configured with
  /// configure_client()).
  front_directory(caf::actor_system& sys, front_directory_options opts);
  ~front_directory();
  front_directory(const front_directory&) = delete;
  front_directory& operator=(const front_directory&) = delete;

  /// Member `id`'s front, or an invalid handle while it is not connected.
  /// Never blocks on the network; a member never dialed is dialed now.
  caf::actor lookup(uint64_t id) const;

  /// Waits until `n` members have a front, or `n` members' first attempts
  /// have ended and at least one has a front, or `timeout` passed; returns
  /// how many members have a front.
  size_t wait_connected(size_t n, std::chrono::milliseconds timeout) const;

  /// Waits until the primary named by a gate has a front, or every member's
  /// first attempt has ended and at least one has a front, or `timeout`
  /// passed; returns how many members have a front.
  size_t wait_ready(std::chrono::milliseconds timeout) const;

  /// Waits until member `id` has a front or `timeout` passed; returns it
  /// (invalid if not connected).
  caf::actor wait_for(uint64_t id, std::chrono::milliseconds timeout) const;

  /// Why the last connection attempt to some member failed ("" if none did).
  std::string last_error() const;

  /// The primary the last gate that answered named (0: none).
  uint64_t primary_hint() const;

  /// Whether member `id` has been dialed (at least once).
  bool dialed(uint64_t id) const;

  struct table;

private:
  std::shared_ptr<table> table_;
  caf::actor connector_;
};

} // namespace conclave::cluster
