#include "runtime/cluster/store_access.hpp"

#include "runtime/cluster/client_connect.hpp"

#include <algorithm>

namespace conclave::cluster {

std::optional<std::string> parse_members(const store_access& a,
                                         std::map<uint64_t, node::address>& out) {
  auto m = node::parse_peers(a.peers);
  if (!m)
    return "--peers: " + m.error();
  out = std::move(m.value());
  return std::nullopt;
}

store_connection::store_connection(const store_access& a,
                                   const std::map<uint64_t, node::address>& members,
                                   std::chrono::milliseconds step_timeout,
                                   const configure_fn& configure)
    : members_(members) {
  configure_client(cfg_, a.tls_ca, a.tls_cert, a.tls_key);
  if (configure)
    configure(cfg_);
  cfg_.set("scheduler.policy", caf::atom("sharing"));
  cfg_.set("scheduler.max-threads", 2);
  sys_ = std::make_unique<caf::actor_system>(cfg_);
  front_directory_options d;
  d.cluster = a.cluster;
  d.members = members;
  d.step_timeout = step_timeout;
  dir_ = std::make_unique<front_directory>(*sys_, d);
}

store_connection::~store_connection() {
  dir_.reset();
  sys_.reset();
}

void store_connection::wait_ready(std::chrono::milliseconds timeout) {
  dir_->wait_ready(timeout);
}

replication::client_options store_connection::client_options() const {
  replication::client_options o;
  for (auto& m : members_)
    o.members.push_back(replication::node_id{m.first});
  auto* dir = dir_.get();
  o.lookup = [dir](replication::node_id id) { return dir->lookup(id.value); };
  o.primary = replication::node_id{dir_->primary_hint()};
  return o;
}

} // namespace conclave::cluster
