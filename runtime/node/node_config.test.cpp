#include "runtime/node/node_config.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace conclave::node;

namespace {

node_options three_nodes() {
  node_options o;
  o.id = 2;
  o.listen = "127.0.0.1:7002";
  o.peers = "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003";
  return o;
}

std::string error_of(const node_options& o) {
  auto c = make_node_config(o);
  return c ? std::string{} : c.error();
}

} // namespace

TEST(node_config, addresses_parse_with_loopback_as_the_default_host) {
  auto a = parse_address("10.0.0.1:80");
  ASSERT_TRUE(a);
  EXPECT_EQ(a.value().host, "10.0.0.1");
  EXPECT_EQ(a.value().port, 80);
  auto b = parse_address(":9000");
  ASSERT_TRUE(b);
  EXPECT_EQ(b.value().host, "127.0.0.1");
  EXPECT_FALSE(parse_address("localhost"));
  EXPECT_FALSE(parse_address("host:0"));
  EXPECT_FALSE(parse_address("host:70000"));
  EXPECT_FALSE(parse_address("host:12x"));
}

TEST(node_config, peers_are_required_and_a_group_of_one_lists_itself) {
  node_options o;
  o.id = 1;
  o.listen = "127.0.0.1:7001";
  EXPECT_NE(error_of(o).find("--peers: required"), std::string::npos);
  o.peers = "1@127.0.0.1:7001";
  auto c = make_node_config(o);
  ASSERT_TRUE(c) << c.error();
  EXPECT_TRUE(c.value().peers.empty());
}

TEST(node_config, peers_parse_and_name_the_malformed_entry) {
  auto p = parse_peers("1@127.0.0.1:1, 2@127.0.0.1:2");
  ASSERT_TRUE(p);
  EXPECT_EQ(p.value().size(), 2u);
  auto bad = parse_peers("1@127.0.0.1:1,two@127.0.0.1:2");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("two@"), std::string::npos) << bad.error();
}

TEST(node_config, a_valid_configuration_excludes_this_node_from_its_peers) {
  auto c = make_node_config(three_nodes());
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c.value().peers.size(), 2u);
  EXPECT_EQ(c.value().peers.count(2), 0u);
}

TEST(node_config, a_duplicate_id_is_named) {
  auto o = three_nodes();
  o.peers = "1@127.0.0.1:7001,3@127.0.0.1:7003,1@127.0.0.1:7004";
  EXPECT_EQ(error_of(o), "--peers: node 1 is listed twice");
}

TEST(node_config, this_node_listed_with_another_address_is_refused) {
  auto o = three_nodes();
  o.peers = "1@127.0.0.1:7001,2@127.0.0.1:7999";
  EXPECT_EQ(error_of(o), "--peers: lists this node (2) with 127.0.0.1:7999 but "
                         "--listen is 127.0.0.1:7002");
}

TEST(node_config, a_missing_id_or_listen_address_is_named) {
  auto o = three_nodes();
  o.id = 0;
  EXPECT_EQ(error_of(o).rfind("--id:", 0), 0u);
  o = three_nodes();
  o.listen.clear();
  EXPECT_EQ(error_of(o).rfind("--listen:", 0), 0u);
  o = three_nodes();
  o.listen = "nohost";
  EXPECT_EQ(error_of(o), "--listen: expected HOST:PORT, got 'nohost'");
}

TEST(node_config, two_members_on_one_address_are_refused) {
  auto o = three_nodes();
  o.peers = "1@127.0.0.1:7001,3@127.0.0.1:7001";
  EXPECT_EQ(error_of(o), "--peers: nodes 1 and 3 share the address 127.0.0.1:7001");
}

TEST(node_config, inconsistent_timing_is_refused) {
  auto o = three_nodes();
  o.detector_timeout_ms = o.heartbeat_ms; // must exceed it
  EXPECT_EQ(error_of(o).rfind("--detector-timeout-ms:", 0), 0u);
  o = three_nodes();
  o.link_timeout_ms = 150;
  EXPECT_EQ(error_of(o).rfind("--link-timeout-ms:", 0), 0u);
  o = three_nodes();
  o.algorithm = "raft";
  EXPECT_EQ(error_of(o).rfind("--algorithm:", 0), 0u);
}

TEST(node_config, a_port_in_use_is_reported) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  address a{"127.0.0.1", ntohs(sa.sin_port)};
  auto r = check_bindable(a, "--listen");
  ASSERT_TRUE(r);
  EXPECT_NE(r->message.find("port in use"), std::string::npos) << r->message;
  EXPECT_TRUE(r->in_use);
  ::close(fd);
  EXPECT_FALSE(check_bindable(a, "--listen"));
}

TEST(node_config, the_quorum_guard_is_on_by_default_with_a_lease_inside_the_timeout) {
  auto c = make_node_config(three_nodes());
  ASSERT_TRUE(c) << c.error();
  auto& g = c.value().election.guard;
  EXPECT_TRUE(g.enabled);
  EXPECT_EQ(g.lease, std::chrono::milliseconds(60)); // 2/3 of the 90 ms floor
  EXPECT_EQ(c.value().election.heartbeat_interval, std::chrono::milliseconds(20));
  EXPECT_EQ(c.value().election.detector.kind, conclave::election::detector_kind::phi);
  EXPECT_EQ(c.value().election.detector.timeout, std::chrono::milliseconds(90));
  EXPECT_TRUE(conclave::election::validate(c.value().election));
  auto o = three_nodes();
  o.no_quorum_guard = true;
  auto classic = make_node_config(o);
  ASSERT_TRUE(classic) << classic.error();
  EXPECT_FALSE(classic.value().election.guard.enabled);
}

TEST(node_config, a_lease_too_long_for_the_detector_names_the_flag) {
  auto o = three_nodes();
  o.lease_ms = 145; // + 10 ms drift reaches the 150 ms timeout
  EXPECT_NE(error_of(o).find("--lease-ms"), std::string::npos) << error_of(o);
  o.no_quorum_guard = true; // the lease does not matter without the guard
  EXPECT_EQ(error_of(o), "");
}

TEST(node_config, plaintext_links_are_loopback_only) {
  auto o = three_nodes();
  o.listen = "0.0.0.0:7002";
  o.peers = "1@127.0.0.1:7001,3@127.0.0.1:7003";
  EXPECT_NE(error_of(o).find("--listen: 0.0.0.0:7002 is beyond loopback"),
            std::string::npos)
      << error_of(o);
  auto p = three_nodes();
  p.peers = "1@10.0.0.1:7001,3@127.0.0.1:7003";
  EXPECT_NE(error_of(p).find("--peers: node 1 at 10.0.0.1:7001"), std::string::npos)
      << error_of(p);
  EXPECT_NE(error_of(p).find("--tls-ca"), std::string::npos) << error_of(p);
}

TEST(node_config, the_http_api_is_plain_on_loopback_only_and_needs_its_own_port) {
  auto o = three_nodes();
  o.http = "127.0.0.1:8080";
  auto c = make_node_config(o);
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c.value().http);
  EXPECT_EQ(c.value().http->port, 8080);
  o.http = "0.0.0.0:8080";
  EXPECT_NE(error_of(o).find("--http: 0.0.0.0:8080 is beyond loopback"),
            std::string::npos)
      << error_of(o);
  o.http = o.listen;
  EXPECT_NE(error_of(o).find("--http:"), std::string::npos) << error_of(o);
  o.http = "127.0.0.1:99999";
  EXPECT_NE(error_of(o).find("--http:"), std::string::npos) << error_of(o);
  // With TLS the API may listen beyond loopback.
  o.http = "0.0.0.0:8080";
  o.tls_ca = o.tls_cert = o.tls_key = "/etc/hostname";
  EXPECT_TRUE(make_node_config(o));
}

TEST(node_config, peers_http_names_other_members_only) {
  auto o = three_nodes(); // node 2 of 1, 2, 3
  o.peers_http = "1@127.0.0.1:8001,2@127.0.0.1:8002,3@127.0.0.1:8003";
  auto c = make_node_config(o);
  ASSERT_TRUE(c) << c.error();
  auto& ph = c.value().peers_http;
  ASSERT_EQ(ph.size(), 2u) << "this node's own entry is --http's business";
  EXPECT_EQ(ph.at(1).port, 8001);
  EXPECT_EQ(ph.at(3).port, 8003);
  o.peers_http = "9@127.0.0.1:8009";
  EXPECT_NE(error_of(o).find("--peers-http: node 9 is not in --peers"), std::string::npos)
      << error_of(o);
  o.peers_http = "1@nowhere";
  EXPECT_EQ(error_of(o).rfind("--peers-http: ", 0), 0u) << error_of(o);
}

TEST(node_config, tls_needs_all_three_readable_files) {
  auto o = three_nodes();
  o.tls_ca = "/etc/hostname";
  EXPECT_NE(error_of(o).find("all three"), std::string::npos) << error_of(o);
  o.tls_cert = "/etc/hostname";
  o.tls_key = "/nonexistent/key.pem";
  EXPECT_NE(error_of(o).find("--tls-key: cannot read"), std::string::npos) << error_of(o);
  o.tls_key = "/etc/hostname";
  o.listen = "0.0.0.0:7002"; // TLS: beyond loopback is fine
  o.peers = "1@10.0.0.1:7001,3@10.0.0.3:7003";
  auto c = make_node_config(o);
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c.value().tls);
  EXPECT_EQ(c.value().tls->key, "/etc/hostname");
}

TEST(node_config, checkpoint_every_sets_the_replica_triggers_and_zero_turns_them_off) {
  auto c = make_node_config(three_nodes());
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c.value().checkpoint_every_records, 100000u);
  EXPECT_EQ(c.value().checkpoint_every_bytes, 64u << 20);
  auto o = three_nodes();
  o.checkpoint_every = 10;
  c = make_node_config(o);
  ASSERT_TRUE(c);
  EXPECT_EQ(c.value().checkpoint_every_records, 10u);
  EXPECT_EQ(c.value().checkpoint_every_bytes, 64u << 20);
  o.checkpoint_every = 0;
  c = make_node_config(o);
  ASSERT_TRUE(c);
  EXPECT_EQ(c.value().checkpoint_every_records, 0u);
  EXPECT_EQ(c.value().checkpoint_every_bytes, 0u);
}

// Garbage member lists (the --peers of every node and cluster init's --hosts):
// every input is either refused with a one-line reason or parses into members
// with ids >= 1, distinct, ports 1..65535, which print back into a list that
// parses to the same members.
TEST(node_config, member_lists_of_random_garbage_are_refused_or_round_trip) {
  const std::string alphabet = "0123456789@:,. \t[]ab-x";
  std::mt19937_64 rng{20261127};
  size_t accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    auto len = rng() % 40;
    for (size_t k = 0; k < len; ++k)
      text += alphabet[rng() % alphabet.size()];
    if (i % 4 == 0) // near-valid lists reach the deeper checks more often
      text = std::to_string(rng() % 3) + "@" + (rng() % 2 ? "10.0.0.1" : "") + ":"
             + std::to_string(rng() % 70000) + (rng() % 2 ? "," + text : "");
    auto m = parse_members(text);
    if (!m) {
      EXPECT_FALSE(m.error().empty()) << text;
      EXPECT_EQ(m.error().find('\n'), std::string::npos) << text;
      continue;
    }
    ++accepted;
    std::string printed;
    std::set<uint64_t> ids;
    for (auto& [id, addr] : m.value()) {
      EXPECT_GE(id, 1u) << text;
      EXPECT_TRUE(ids.insert(id).second) << text;
      EXPECT_GE(addr.port, 1) << text;
      printed +=
          (printed.empty() ? "" : ",") + std::to_string(id) + "@" + addr.to_string();
    }
    auto again = parse_members(printed);
    ASSERT_TRUE(again) << text << " -> " << printed << ": " << again.error();
    EXPECT_EQ(again.value(), m.value()) << text << " -> " << printed;
  }
  EXPECT_GT(accepted, 100u); // the generator does reach valid lists
}

TEST(node_config, http_connection_bounds_are_checked_at_their_extremes) {
  auto o = three_nodes();
  auto c = make_node_config(o);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c.value().http_max_connections, 64u);
  EXPECT_EQ(c.value().http_max_connections_per_source, 16u);
  for (auto [total, per_source, ok] :
       std::vector<std::tuple<unsigned, unsigned, bool>>{{1, 1, true},
                                                         {4096, 4096, true},
                                                         {0, 0, false},
                                                         {4097, 16, false},
                                                         {64, 0, false},
                                                         {64, 65, false},
                                                         {128, 64, true}}) {
    o.http_max_connections = total;
    o.http_max_connections_per_source = per_source;
    auto e = error_of(o);
    EXPECT_EQ(e.empty(), ok) << total << "/" << per_source << ": " << e;
    if (!ok)
      EXPECT_EQ(e.rfind("--http-max-connections", 0), 0u) << e;
  }
  o.http_max_connections = 128;
  o.http_max_connections_per_source = 64;
  auto v = make_node_config(o);
  ASSERT_TRUE(v);
  EXPECT_EQ(v.value().http_max_connections, 128u);
  EXPECT_EQ(v.value().http_max_connections_per_source, 64u);
}

TEST(node_config, a_nice_value_outside_the_kernels_range_is_refused) {
  for (int bad : {-21, 20, 1000, -1000}) {
    auto o = three_nodes();
    o.nice = bad;
    EXPECT_EQ(error_of(o), "--nice: expected -20..19, got " + std::to_string(bad));
  }
  for (int good : {-20, -10, 0, 19}) {
    auto o = three_nodes();
    o.nice = good;
    EXPECT_EQ(error_of(o), "") << good;
  }
}
