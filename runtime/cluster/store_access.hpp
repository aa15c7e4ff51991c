// How a client process reaches a running cluster's store: the flags every
// client command shares (--dir, or --peers with --cluster and --tls-*), and
// one connection to every member (front_directory.hpp) with the client
// library's options over it. Used by `conclave kv`, `conclave lock`,
// `conclave elect`, `conclave leader` and the C++ lease API
// (include/conclave/lease.hpp).
#pragma once

#include "actors/replication/client.hpp"
#include "runtime/cluster/access.hpp"
#include "runtime/cluster/front_directory.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace conclave::cluster {

/// The members of a settled access, or the one-line error.
std::optional<std::string> parse_members(const store_access& a,
                                         std::map<uint64_t, node::address>& out);

/// An actor system configured for a client, connections to every member, and
/// the client library's options over them. Not copyable; stopping the system
/// may wait for connections to close (the CLI commands end with _Exit).
class store_connection {
public:
  /// Adds to a client's configuration before the actor system starts, e.g.
  /// the type-ID blocks of the actors a command runs next to the client
  /// (`conclave job` registers the workflow's).
  using configure_fn = std::function<void(caf::actor_system_config&)>;

  /// `a` must be settled. Starts dialing every member at once.
  store_connection(const store_access& a,
                   const std::map<uint64_t, node::address>& members,
                   std::chrono::milliseconds step_timeout = std::chrono::seconds(1),
                   const configure_fn& configure = {});
  ~store_connection();

  caf::actor_system& system() { return *sys_; }
  front_directory& directory() { return *dir_; }
  /// Waits (up to `timeout`) until the primary a gate named is connected or
  /// every member answered or failed.
  void wait_ready(std::chrono::milliseconds timeout);
  /// Options for the client library (members, lookup, the primary a gate
  /// named); deadline and attempt timeout are the caller's.
  replication::client_options client_options() const;

private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::map<uint64_t, node::address> members_;
  std::unique_ptr<front_directory> dir_;
};

} // namespace conclave::cluster
