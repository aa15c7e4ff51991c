#include "runtime/node/node_config.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <set>
#include <sys/socket.h>
#include <unistd.h>

namespace conclave::node {

result<node_config> make_node_config(const node_options& o) {
  node_config c;
  if (o.id == 0)
    return std::string{"--id: required, a positive integer unique in the cluster"};
  c.id = election::node_id{o.id};
  if (o.cluster.empty() || o.cluster.size() > 64)
    return std::string{"--cluster: expected a name of 1 to 64 characters"};
  c.cluster = o.cluster;
  if (o.listen.empty())
    return std::string{"--listen: required, HOST:PORT this node listens on"};
  auto listen = parse_address(o.listen);
  if (!listen)
    return "--listen: " + listen.error();
  c.listen = listen.value();
  if (o.peers.find_first_not_of(" \t") == std::string::npos)
    return std::string{"--peers: required, the members ID@HOST:PORT,... (for a "
                       "one-member group, list this node alone)"};
  auto peers = parse_peers(o.peers);
  if (!peers)
    return "--peers: " + peers.error();
  std::map<std::string, uint64_t> by_address;
  by_address[c.listen.to_string()] = o.id;
  for (auto& [id, addr] : peers.value()) {
    if (id == o.id) {
      if (addr != c.listen)
        return "--peers: lists this node (" + std::to_string(id) + ") with "
               + addr.to_string() + " but --listen is " + c.listen.to_string();
      continue;
    }
    auto [i, fresh] = by_address.emplace(addr.to_string(), id);
    if (!fresh)
      return "--peers: nodes " + std::to_string(i->second) + " and " + std::to_string(id)
             + " share the address " + addr.to_string();
    c.peers.emplace(id, addr);
  }
  if (!o.metrics.empty()) {
    auto m = parse_address(o.metrics);
    if (!m)
      return "--metrics: " + m.error();
    if (m.value() == c.listen)
      return "--metrics: " + m.value().to_string() + " is also the --listen address";
    c.metrics = m.value();
  }
  if (!o.http.empty()) {
    auto h = parse_address(o.http);
    if (!h)
      return "--http: " + h.error();
    if (h.value() == c.listen || (c.metrics && h.value() == *c.metrics))
      return "--http: " + h.value().to_string()
             + " is also the --listen or --metrics address";
    c.http = h.value();
  }
  if (!o.peers_http.empty()) {
    auto ph = parse_peers(o.peers_http);
    if (!ph)
      return "--peers-http: " + ph.error();
    for (auto& [id, addr] : ph.value()) {
      if (id == c.id.value)
        continue; // this node's own is --http
      if (!c.peers.count(id))
        return "--peers-http: node " + std::to_string(id) + " is not in --peers";
      c.peers_http.emplace(id, addr);
    }
  }
  if (o.http_max_connections < 1 || o.http_max_connections > 4096)
    return std::string{"--http-max-connections: expected 1..4096"};
  if (o.http_max_connections_per_source < 1
      || o.http_max_connections_per_source > o.http_max_connections)
    return "--http-max-connections-per-source: expected 1..--http-max-connections ("
           + std::to_string(o.http_max_connections) + ")";
  c.http_max_connections = o.http_max_connections;
  c.http_max_connections_per_source = o.http_max_connections_per_source;
  c.data_dir = o.data_dir;
  c.checkpoint_every_records = o.checkpoint_every;
  c.checkpoint_every_bytes = o.checkpoint_every == 0 ? 0 : c.checkpoint_every_bytes;
  // lease: the store's primary is still elected (Bully, guarded); the
  // node's leadership is a lease on that store.
  c.lease_leadership = o.algorithm == "lease";
  auto algo = election::parse_algorithm(c.lease_leadership ? "bully" : o.algorithm);
  if (!algo)
    return "--algorithm: expected bully, ring or lease, got " + in_quotes(o.algorithm);
  if (c.lease_leadership) {
    if (o.leader_lease.empty())
      return std::string{"--leader-lease: the lease's name must not be empty"};
    if (o.leader_lease_ttl_ms < 10 || o.leader_lease_ttl_ms > 86400000)
      return std::string{"--leader-lease-ttl-ms: expected 10..86400000"};
    if (o.no_quorum_guard)
      return std::string{"--no-quorum-guard: not with --algorithm lease (the store "
                         "needs its guarded primary)"};
  }
  c.leader_lease = o.leader_lease;
  c.leader_lease_ttl = std::chrono::milliseconds{o.leader_lease_ttl_ms};
  using std::chrono::milliseconds;
  auto& e = c.election;
  e.algo = algo.value();
  if (o.detector == "phi")
    e.detector.kind = election::detector_kind::phi;
  else if (o.detector == "fixed")
    e.detector.kind = election::detector_kind::fixed;
  else
    return "--detector: expected fixed or phi, got " + in_quotes(o.detector);
  if (o.heartbeat_ms == 0)
    return std::string{"--heartbeat-ms: must be at least 1"};
  if (o.detector_timeout_ms <= o.heartbeat_ms)
    return "--detector-timeout-ms: must exceed --heartbeat-ms ("
           + std::to_string(o.heartbeat_ms) + ")";
  if (o.phi_threshold <= 0)
    return std::string{"--phi-threshold: must be positive"};
  e.heartbeat_interval = milliseconds{o.heartbeat_ms};
  e.detector.timeout = milliseconds{o.detector_timeout_ms};
  e.detector.phi_threshold = o.phi_threshold;
  e.election_wait = milliseconds{o.election_wait_ms};
  e.preempt = o.preempt;
  e.guard.enabled = !o.no_quorum_guard;
  e.guard.death_proof = !o.no_death_proof;
  e.guard.lease = o.lease_ms != 0 ? milliseconds{o.lease_ms}
                                  : milliseconds{o.detector_timeout_ms * 2 / 3};
  if (auto v = election::validate(e); !v)
    return (e.guard.enabled && v.error().find("lease") != std::string::npos
                ? "--lease-ms (or --detector-timeout-ms, --heartbeat-ms): "
                : "")
           + v.error();
  if (o.link_heartbeat_ms == 0 || o.link_timeout_ms <= 2 * o.link_heartbeat_ms)
    return std::string{"--link-timeout-ms: must exceed twice --link-heartbeat-ms "
                       "(and both must be positive)"};
  auto format = parse_log_format(o.log_format);
  if (!format)
    return "--log-format: expected text or json, got " + in_quotes(o.log_format);
  c.log_format = *format;
  int tls_given = !o.tls_ca.empty() + !o.tls_cert.empty() + !o.tls_key.empty();
  if (tls_given != 0 && tls_given != 3)
    return std::string{"--tls-ca, --tls-cert, --tls-key: give all three or none"};
  if (tls_given == 3) {
    for (auto [file, flag] :
         {std::pair{&o.tls_ca, "--tls-ca"}, std::pair{&o.tls_cert, "--tls-cert"},
          std::pair{&o.tls_key, "--tls-key"}})
      if (::access(file->c_str(), R_OK) != 0)
        return std::string{flag} + ": cannot read " + in_quotes(*file);
    c.tls = node_config::tls_files{o.tls_ca, o.tls_cert, o.tls_key};
  } else {
    // Plaintext BASP allocates whatever length a frame announces, before any
    // authentication: it must not be reachable beyond this host (docs/design/node.md).
    auto why = std::string{" is beyond loopback: plaintext links are loopback-only "
                           "(CAF 0.17's wire protocol trusts anyone who connects); give "
                           "--tls-ca, --tls-cert and --tls-key"};
    if (!is_loopback(c.listen.host))
      return "--listen: " + c.listen.to_string() + why;
    for (auto& [id, addr] : c.peers)
      if (!is_loopback(addr.host))
        return "--peers: node " + std::to_string(id) + " at " + addr.to_string() + why;
    if (c.http && !is_loopback(c.http->host))
      return "--http: " + c.http->to_string()
             + " is beyond loopback: without --tls-ca, --tls-cert and --tls-key the API "
               "is served as plain HTTP, on loopback only";
  }
  if (o.nice < -20 || o.nice > 19)
    return "--nice: expected -20..19, got " + std::to_string(o.nice);
  c.nice = o.nice;
  c.link_heartbeat = milliseconds{o.link_heartbeat_ms};
  c.link_timeout = milliseconds{o.link_timeout_ms};
  return c;
}

std::optional<bind_failure> check_bindable(const address& a, std::string_view flag) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  auto port = std::to_string(a.port);
  if (::getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr)
    return bind_failure{std::string{flag} + ": cannot resolve host " + in_quotes(a.host)};
  std::string err;
  bool in_use = false;
  int fd = ::socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0) {
    err = std::strerror(errno);
  } else {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 1) != 0) {
      in_use = errno == EADDRINUSE;
      err = in_use ? "port in use" : std::strerror(errno);
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (!err.empty())
    return bind_failure{
        std::string{flag} + ": cannot listen on " + a.to_string() + ": " + err, in_use};
  return std::nullopt;
}

} // namespace conclave::node
