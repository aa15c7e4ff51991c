// Multi-process tests of the secure defaults: `cluster up` runs its nodes over
// TLS with mutual authentication (certificates of a throwaway CA in DIR/tls);
// a node whose certificate another CA signed, or that speaks plaintext, never
// links; garbage at a node's port (random bytes, a BASP header announcing a
// 4 GiB body, half-open and partial connections) disturbs nothing. Loopback
// only, bounded (every intruder runs under `timeout`). A process holding a
// valid certificate of the CA that names another member is refused at the
// membership handshake, as dialer and as the dialed node (identity proofs),
// and its wire-protocol frames that name another member's node as their
// source are refused before the node reads them.
#include "tests/process/process_support.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/error.hpp>
#include <caf/exit_reason.hpp>
#include <caf/message.hpp>

#include <openssl/ssl.h>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace conclave::process_test;
using conclave::testing::rss_kib;
using namespace std::chrono_literals;

namespace {

std::string port_of(const std::string& host_port) {
  return host_port.substr(host_port.rfind(':') + 1);
}

/// A connected loopback socket to `port`, or -1.
int connect_to(const std::string& port) {
  return conclave::testing::tcp_connect("127.0.0.1:" + port);
}

/// CAF 0.17's 32-byte BASP header: operation (0: server handshake), padding,
/// payload length (big endian) 0xFFFFFFFF, then zeros.
std::string huge_basp_header() {
  std::string h(32, '\0');
  for (int i = 4; i < 8; ++i)
    h[static_cast<size_t>(i)] = '\xff';
  return h;
}

/// The garbage of issue 12 against one port: 200 connections of random bytes,
/// one header announcing a 0xFFFFFFFF-byte body (kept open a while), and 200
/// connections left half-open or holding a partial header.
/// 200 connections to `host_port`, from the local address `from` (none:
/// any), each sending 64 + 7i random bytes (drawn from `seed`) and closing.
void random_byte_connections(const std::string& host_port, const char* from,
                             unsigned seed) {
  std::mt19937 rng{seed};
  std::uniform_int_distribution<int> byte{0, 255};
  for (int i = 0; i < 200; ++i) {
    int fd = conclave::testing::tcp_connect(host_port, from);
    ASSERT_GE(fd, 0);
    std::string junk(64 + static_cast<size_t>(i) * 7, '\0');
    for (auto& c : junk)
      c = static_cast<char>(byte(rng));
    static_cast<void>(::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL));
    ::close(fd);
  }
}

void throw_garbage(const std::string& port) {
  random_byte_connections("127.0.0.1:" + port, nullptr, 12);
  int big = connect_to(port);
  ASSERT_GE(big, 0);
  auto h = huge_basp_header();
  static_cast<void>(::send(big, h.data(), h.size(), MSG_NOSIGNAL));
  std::vector<int> open;
  for (int i = 0; i < 200; ++i) {
    int fd = connect_to(port);
    ASSERT_GE(fd, 0);
    if (i % 2 == 1) // a partial header; the others say nothing at all
      static_cast<void>(
          ::send(fd, h.data(), 1 + static_cast<size_t>(i) % 31, MSG_NOSIGNAL));
    open.push_back(fd);
  }
  std::this_thread::sleep_for(1500ms); // longer than the link timeout (1 s)
  for (int fd : open)
    ::close(fd);
  ::close(big);
}

/// The cluster did not notice: `leader` still leads in `term`, alone
/// (`leader_count`: cluster_test::leaders of `st`), and every node is alive.
void expect_same_leader(const nlohmann::json& st, const nlohmann::json& term,
                        uint64_t leader, int leader_count) {
  EXPECT_EQ(st["term"], term) << st.dump(2); // no leader change
  EXPECT_EQ(st["leader"], leader);
  EXPECT_EQ(leader_count, 1);
  for (auto& n : st["nodes"])
    EXPECT_TRUE(n["alive"].get<bool>()) << n;
}

/// No node of the cluster in `dir` logged a link going down.
void expect_no_link_down(const std::filesystem::path& dir, int nodes) {
  for (int id = 1; id <= nodes; ++id) {
    auto log = read_file(dir / ("node-" + std::to_string(id)) / "node.log");
    EXPECT_EQ(log.find(" down"), std::string::npos) << "node " << id << ": " << log;
  }
}

} // namespace

TEST_F(cluster_test, cluster_up_uses_tls_and_refuses_foreign_and_plaintext_peers) {
  // 500 ms detector, as in the garbage test below: at load 12 the default
  // 150 ms let scheduling delays change the term (1 -> 6) while intruders
  // redialled; what this test guards (refused handshakes closing healthy
  // links) drops links, which any detector sees.
  auto j = up(3, "--detector-timeout-ms 500");
  ASSERT_TRUE(std::filesystem::exists(dir / "tls" / "ca.pem"));
  auto ini = read_file(dir / "node-1" / "config.ini");
  EXPECT_NE(ini.find("tls-cert = " + (dir / "tls" / "node-1.pem").string()),
            std::string::npos)
      << ini;
  EXPECT_NE(read_file(dir / "node-1" / "node.log").find("links use TLS"),
            std::string::npos);
  auto term = j["term"];
  auto target = j["nodes"][0]["address"].get<std::string>();
  // Another cluster's CA signed this intruder's certificate.
  auto other = dir / "other";
  ASSERT_EQ(
      run_conclave("cluster up --nodes 1 --timeout-ms 20000 --dir " + other.string())
          .status,
      0);
  run_conclave("cluster down --dir " + other.string());
  auto intruder = [&](const std::string& tls) {
    auto port = std::to_string(free_port());
    // id 4 dials the higher id 9, which is node 1's address: a refused TLS
    // handshake never gets as far as node 1 answering (as node 1).
    auto r = conclave::testing::run_command(
        "timeout 3 " + std::string{CONCLAVE_BIN} + " node --id 4 --listen 127.0.0.1:"
        + port + " --peers 4@127.0.0.1:" + port + ",9@" + target + " " + tls + " 2>&1");
    return r.out;
  };
  auto foreign = intruder("--tls-ca " + (other / "tls" / "ca.pem").string()
                          + " --tls-cert " + (other / "tls" / "node-1.pem").string()
                          + " --tls-key " + (other / "tls" / "node-1.key").string());
  EXPECT_NE(foreign.find("cannot reach node 9"), std::string::npos) << foreign;
  EXPECT_EQ(foreign.find("answered as node"), std::string::npos) << foreign;
  EXPECT_EQ(foreign.find("link to node 9 up"), std::string::npos) << foreign;
  auto plain = intruder("");
  EXPECT_NE(plain.find("cannot reach node 9"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("answered as node"), std::string::npos) << plain;
  // Node 1 counted the refused TLS handshakes (both intruders redial for 3 s).
  auto url = j["nodes"][0]["metrics_url"].get<std::string>();
  auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
  auto refused =
      sample(body, "conclave_tls_handshakes_refused_total{side=\"accepting\"}");
  ASSERT_TRUE(refused) << body;
  EXPECT_GE(*refused, 2.0) << body;
  // Computed at scrape time like the counts above (the exposer keeps such
  // collectables only by weak_ptr: both were missing from /metrics before).
  EXPECT_TRUE(sample(body, "conclave_leader_silence_seconds")) << body;
  // The cluster never noticed.
  auto st = status();
  EXPECT_EQ(st["term"], term);
  EXPECT_EQ(leaders(st), 1);
  // No link of the cluster dropped: before tls_error_queue.cpp, the error a
  // refused handshake left in OpenSSL's queue closed healthy links.
  for (int id = 1; id <= 3; ++id) {
    auto log = read_file(dir / ("node-" + std::to_string(id)) / "node.log");
    EXPECT_EQ(log.find(" down"), std::string::npos) << "node " << id << ": " << log;
    EXPECT_EQ(log.find("node 4"), std::string::npos) << log;
  }
}

TEST_F(cluster_test, kv_uses_the_client_certificate_and_one_of_another_ca_is_refused) {
  auto j = up(3);
  auto leader = j["leader"].get<uint64_t>();
  ASSERT_TRUE(std::filesystem::exists(dir / "tls" / "client.pem"));
  auto kv = [&](const std::string& args) {
    return run_conclave(
        "kv --json --timeout-ms 3000 --cluster-dir " + dir.string() + " " + args, true);
  };
  // --cluster-dir takes the client certificate `up` made.
  auto w = kv("put a 1");
  ASSERT_EQ(w.status, 0) << w.out;
  EXPECT_EQ(nlohmann::json::parse(w.out)["node"], leader);
  // A client certificate that another CA signed (the client trusts the
  // cluster's CA): every node refuses the TLS handshake; nothing is written.
  auto other = dir / "other";
  std::filesystem::create_directories(other);
  auto o = [&](const std::string& f) { return (other / f).string(); };
  auto ec = std::string{" -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"};
  for (auto& cmd :
       {"openssl req -x509" + ec + " -keyout " + o("ca.key") + " -out " + o("ca.pem")
            + " -days 1 -subj /CN=other-ca",
        "openssl req" + ec + " -keyout " + o("client.key") + " -out " + o("client.csr")
            + " -subj /CN=client",
        "openssl x509 -req -in " + o("client.csr") + " -CA " + o("ca.pem") + " -CAkey "
            + o("ca.key") + " -CAcreateserial -out " + o("client.pem") + " -days 1"})
    ASSERT_EQ(conclave::testing::run_command(cmd + " >/dev/null 2>&1").status, 0) << cmd;
  auto foreign = kv("--tls-ca " + (dir / "tls" / "ca.pem").string() + " --tls-cert "
                    + o("client.pem") + " --tls-key " + o("client.key") + " put b 2");
  EXPECT_EQ(foreign.status, 1) << foreign.out;
  EXPECT_NE(foreign.out.find("no answer within"), std::string::npos) << foreign.out;
  auto url = j["nodes"][0]["metrics_url"].get<std::string>();
  auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
  auto refused =
      sample(body, "conclave_tls_handshakes_refused_total{side=\"accepting\"}");
  ASSERT_TRUE(refused) << body;
  EXPECT_GE(*refused, 1.0) << body;
  auto b = kv("get b");
  EXPECT_EQ(b.status, 1) << b.out;
  EXPECT_EQ(nlohmann::json::parse(b.out)["found"], false) << b.out;
}

TEST_F(cluster_test, garbage_at_the_leader_and_a_follower_disturbs_nothing_under_tls) {
  // A 500 ms detector instead of the default 150 ms. With the default the
  // test failed about once in three runs at load 10-15 (term 1 -> 2), and
  // at such load scheduling delays alone make nodes suspect a live leader
  // (failover_bench's idle run counts them). The defect this test guards
  // against stalled a node's I/O for 10-16 s; a stall of 500 ms or more
  // still changes the term and fails it.
  auto j = up(3, "--detector-timeout-ms 500");
  auto term = j["term"];
  auto leader = j["leader"].get<uint64_t>();
  // The leader twice (the second round shows whether memory keeps growing),
  // then follower 1. A round costs OpenSSL buffers, ≈45 KB per open
  // handshake, bounded by the budget of unfinished handshakes (64) and handed
  // back to the system once the flood drains (docs/design/node.md).
  std::map<int, long> first_rss;
  for (size_t target : {leader - 1, leader - 1, size_t{0}}) {
    auto node = j["nodes"][target];
    int pid = node["pid"].get<int>();
    auto before = rss_kib(pid);
    throw_garbage(port_of(node["address"].get<std::string>()));
    std::this_thread::sleep_for(500ms);
    auto after = rss_kib(pid);
    bool again = first_rss.count(pid) != 0;
    first_rss.emplace(pid, before);
    EXPECT_LT(after - before, again ? 2 * 1024 : 5 * 1024)
        << "node " << node["id"] << (again ? " (second round)" : "") << ": RSS " << before
        << " KiB before, " << after << " KiB after";
    // The 200 half-open connections exceed the budget of unfinished
    // handshakes (handshake_guard.hpp): some were shut down unfinished.
    auto url = node["metrics_url"].get<std::string>();
    auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
    auto guarded =
        sample(body, "conclave_tls_handshakes_guarded_total{reason=\"over_budget\"}");
    ASSERT_TRUE(guarded) << body;
    EXPECT_GT(*guarded, 0.0) << body;
    std::printf(
        "[garbage] node %d: RSS %ld -> %ld KiB, %.0f handshakes over budget so far\n",
        node["id"].get<int>(), before, after, *guarded);
    auto st = status();
    expect_same_leader(st, term, leader, leaders(st));
  }
  expect_no_link_down(dir, 3);
}

namespace {

/// The first flight of a real TLS client (its ClientHello), made by OpenSSL
/// over memory buffers: what a slow but well-formed client starts with.
std::string client_hello() {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  static_cast<void>(SSL_connect(ssl)); // wants to read the server's answer
  std::string hello(static_cast<size_t>(BIO_ctrl_pending(out)), '\0');
  static_cast<void>(BIO_read(out, hello.data(), static_cast<int>(hello.size())));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

} // namespace

TEST_F(cluster_test, garbage_at_the_default_timing_with_both_cores_busy_changes_no_term) {
  // The default detector (150 ms) and lease, and two processes spinning on
  // the machine's cores at nice 0 for the whole attack: 200 connections of
  // random bytes, 200 left half-open and 200 slow TLS clients (a real
  // ClientHello, one byte per 100 ms), each kind from its own address so that
  // only the node's total bound stops them, at the leader for 6 s.
  auto j = up(3);
  auto term = j["term"];
  auto leader = j["leader"].get<uint64_t>();
  auto node = j["nodes"][leader - 1];
  int pid = node["pid"].get<int>();
  auto target = "127.0.0.1:" + port_of(node["address"].get<std::string>());
  auto hello = client_hello();
  ASSERT_GT(hello.size(), 100u);
  auto before = rss_kib(pid);
  long peak = before;
  {
    conclave::testing::busy_cores busy{2};
    random_byte_connections(target, "127.0.0.2", 31);
    std::vector<int> silent, slow;
    for (int i = 0; i < 200; ++i) {
      int fd = conclave::testing::tcp_connect(target, "127.0.0.3");
      ASSERT_GE(fd, 0);
      silent.push_back(fd);
      fd = conclave::testing::tcp_connect(target, "127.0.0.4");
      ASSERT_GE(fd, 0);
      slow.push_back(fd);
    }
    auto end = std::chrono::steady_clock::now() + 6s;
    for (size_t at = 0; std::chrono::steady_clock::now() < end; ++at) {
      for (int fd : slow)
        if (at < hello.size())
          static_cast<void>(::send(fd, &hello[at], 1, MSG_NOSIGNAL | MSG_DONTWAIT));
      peak = std::max(peak, rss_kib(pid));
      std::this_thread::sleep_for(100ms);
    }
    for (int fd : silent)
      ::close(fd);
    for (int fd : slow)
      ::close(fd);
  }
  // The node gives the memory of the flood back once it has drained (its
  // handshake sweeper runs every 750 ms).
  long after = rss_kib(pid);
  for (auto until = std::chrono::steady_clock::now() + 4s;
       after - before > 2048 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(100ms);
    after = std::min(after, rss_kib(pid));
  }
  auto url = node["metrics_url"].get<std::string>();
  auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
  auto over =
      sample(body, "conclave_tls_handshakes_guarded_total{reason=\"over_budget\"}");
  auto timed_out =
      sample(body, "conclave_tls_handshakes_guarded_total{reason=\"timeout\"}");
  std::printf(
      "[garbage, default timing, 2 busy cores] leader %llu: RSS %ld -> peak %ld -> "
      "%ld KiB after (growth %ld KiB), handshakes over budget %.0f, timed out %.0f\n",
      static_cast<unsigned long long>(leader), before, peak, after, after - before,
      over ? *over : -1.0, timed_out ? *timed_out : -1.0);
  ASSERT_TRUE(over && timed_out) << body;
  EXPECT_GT(*over, 0.0);          // the total bound stopped some
  EXPECT_LE(after - before, 2048) // at most 2 MB kept once the flood drained
      << "RSS " << before << " -> " << after << " KiB (peak " << peak << ")";
  auto st = status();
  expect_same_leader(st, term, leader, leaders(st));
  expect_no_link_down(dir, 3);
}

TEST_F(cluster_test,
       a_handshake_left_unfinished_is_closed_by_the_node_after_its_timeout) {
  auto j = up(3, "--detector-timeout-ms 500");
  auto node = j["nodes"][0];
  // A TCP connection to the TLS port that never sends a byte: the node's
  // budget of unfinished handshakes shuts it down after 3 s.
  int fd = connect_to(port_of(node["address"].get<std::string>()));
  ASSERT_GE(fd, 0);
  timeval limit{6, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  auto t0 = std::chrono::steady_clock::now();
  char byte = 0;
  auto n = ::recv(fd, &byte, 1, 0); // 0: the node closed it
  auto waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  EXPECT_EQ(n, 0) << "the node kept an unfinished handshake open for " << waited << " s";
  EXPECT_GE(waited, 2.5);
  EXPECT_LT(waited, 5.5);
  auto url = node["metrics_url"].get<std::string>();
  auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
  auto timed_out =
      sample(body, "conclave_tls_handshakes_guarded_total{reason=\"timeout\"}");
  ASSERT_TRUE(timed_out) << body;
  EXPECT_GE(*timed_out, 1.0) << body;
  std::printf("[garbage] an unfinished handshake was closed after %.2f s\n", waited);
}

namespace {

/// User and system CPU time process `pid` has used, in milliseconds (-1 if
/// unreadable).
double cpu_ms(int pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string text{std::istreambuf_iterator<char>{in}, {}};
  auto close = text.rfind(')'); // the command name may hold spaces
  if (close == std::string::npos)
    return -1;
  std::istringstream fields{text.substr(close + 2)};
  std::string f;
  double utime = -1, stime = -1;
  for (int n = 3; fields >> f && n <= 15; ++n) { // fields 14 and 15: utime, stime
    if (n == 14)
      utime = std::stod(f);
    if (n == 15)
      stime = std::stod(f);
  }
  if (utime < 0 || stime < 0)
    return -1;
  return (utime + stime) * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

} // namespace

TEST_F(cluster_test, silent_connections_to_the_peer_port_cost_the_node_no_cpu) {
  // A TCP connection that sends nothing leaves a TLS handshake waiting at the
  // node. CAF 0.17.6 retried it whenever the socket was writable, spinning
  // the node's I/O thread at a whole core until the handshake budget's
  // timeout (3 s); the node now parks its write interest (write_parking.hpp).
  auto j = up(3);
  auto node = j["nodes"][j["leader"].get<uint64_t>() - 1];
  int pid = node["pid"].get<int>();
  auto port = port_of(node["address"].get<std::string>());
  auto window = 1500ms;
  auto idle0 = cpu_ms(pid);
  std::this_thread::sleep_for(window);
  auto idle = cpu_ms(pid) - idle0;
  std::vector<int> silent;
  for (int i = 0; i < 10; ++i) {
    int fd = connect_to(port);
    ASSERT_GE(fd, 0);
    silent.push_back(fd);
  }
  auto held0 = cpu_ms(pid);
  std::this_thread::sleep_for(window); // within the 3 s handshake timeout
  auto held = cpu_ms(pid) - held0;
  for (int fd : silent)
    ::close(fd);
  ASSERT_GE(idle0, 0);
  auto url = node["metrics_url"].get<std::string>();
  auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
  auto parks = sample(body, "conclave_tls_write_parks_total");
  std::printf(
      "[silent connections] leader CPU over %lld ms: %.0f ms idle, %.0f ms with 10 "
      "silent connections; write parks %.0f\n",
      static_cast<long long>(window.count()), idle, held, parks ? *parks : -1.0);
  ASSERT_TRUE(parks) << body;
  EXPECT_GE(*parks, 10.0); // each silent handshake was parked
  // A spinning I/O thread costs about the whole window; allow a fifth of it.
  EXPECT_LT(held, idle + 0.2 * static_cast<double>(window.count()))
      << "the node spent " << held << " ms of CPU in " << window.count()
      << " ms holding 10 silent connections (" << idle << " ms idle)";
}

namespace {

/// `conclave_rejected_messages_total{reason="REASON"}` of a node, by its
/// metrics URL (as `cluster up --json` gives it); -1 if unreadable.
double rejected(const nlohmann::json& node, const std::string& reason) {
  auto url = node["metrics_url"].get<std::string>();
  auto body = http_get(url.substr(7, url.find("/metrics") - 7), "/metrics");
  auto v = sample(body, "conclave_rejected_messages_total{reason=\"" + reason + "\"}");
  return v ? *v : -1;
}

/// A `conclave node` with another member's certificate, for `seconds`; its output.
std::string impostor(uint64_t id, const std::string& listen, const std::string& peers,
                     const std::filesystem::path& tls, uint64_t cert_of, int seconds) {
  auto c = "node-" + std::to_string(cert_of);
  auto r = conclave::testing::run_command(
      "timeout " + std::to_string(seconds) + " " + std::string{CONCLAVE_BIN}
      + " node --id " + std::to_string(id) + " --listen " + listen + " --peers " + peers
      + " --tls-ca " + (tls / "ca.pem").string() + " --tls-cert "
      + (tls / (c + ".pem")).string() + " --tls-key " + (tls / (c + ".key")).string()
      + " 2>&1");
  return r.out;
}

} // namespace

TEST_F(cluster_test, a_certificate_that_names_another_member_is_refused_both_ways) {
  auto j = up(3);
  auto term = j["term"];
  auto tls = dir / "tls";
  auto addr = [&](int i) { return j["nodes"][i]["address"].get<std::string>(); };
  auto log_of = [&](int id) {
    return read_file(dir / ("node-" + std::to_string(id)) / "node.log");
  };

  // 1. At a gate: a process holding node 2's certificate claims id 1 and dials
  //    node 3 (a member, the CA's certificate, a valid TLS handshake).
  auto port = std::to_string(free_port());
  auto out = impostor(1, "127.0.0.1:" + port, "1@127.0.0.1:" + port + ",3@" + addr(2),
                      tls, 2, 2);
  EXPECT_NE(out.find("does not name this node"), std::string::npos) << out;
  EXPECT_NE(out.find("refused our handshake: wrong_member_id"), std::string::npos) << out;
  EXPECT_EQ(out.find("link to node 3 up"), std::string::npos) << out;
  EXPECT_NE(log_of(3).find("refused a handshake from node 1 of cluster 'conclave': "
                           "wrong_member_id"),
            std::string::npos)
      << log_of(3);
  EXPECT_GE(rejected(j["nodes"][2], "wrong_member_id"), 1.0);
  auto st = status();
  EXPECT_EQ(st["term"], term) << st.dump(2); // the cluster never noticed
  EXPECT_EQ(leaders(st), 1);
  for (int id = 1; id <= 3; ++id)
    EXPECT_EQ(log_of(id).find(" down"), std::string::npos) << "node " << id;

  // 2. Dialed: node 3 is gone and a process with node 2's certificate answers
  //    at its address as node 3; nodes 1 and 2 refuse its proof.
  kill(3, "KILL");
  auto before1 = log_of(1).size();
  auto before2 = log_of(2).size();
  auto rejected_before = rejected(j["nodes"][0], "wrong_member_id");
  out =
      impostor(3, addr(2), "1@" + addr(0) + ",2@" + addr(1) + ",3@" + addr(2), tls, 2, 3);
  EXPECT_NE(out.find("listening on"), std::string::npos) << out;
  EXPECT_EQ(out.find("link to node"), std::string::npos) << out;
  for (int id : {1, 2}) {
    auto since = log_of(id).substr(id == 1 ? before1 : before2);
    EXPECT_NE(since.find("its identity proof: wrong_member_id"), std::string::npos)
        << "node " << id << ": " << since;
    EXPECT_EQ(since.find("link to node 3 up"), std::string::npos) << since;
  }
  EXPECT_GT(rejected(j["nodes"][0], "wrong_member_id"), rejected_before);
  down_and_check_replicas();
}

namespace {

/// A TLS client of a node's port with a certificate of the cluster's CA, that
/// speaks CAF 0.17's wire protocol (BASP) by hand: what an insider holding a
/// member's certificate and key could send.
class basp_intruder {
public:
  basp_intruder(const std::string& port, const std::filesystem::path& tls, int cert_of) {
    ::signal(SIGPIPE, SIG_IGN); // a write after the node closed: an error, not death
    ctx_ = SSL_CTX_new(TLS_client_method());
    auto c = "node-" + std::to_string(cert_of);
    SSL_CTX_use_certificate_chain_file(ctx_, (tls / (c + ".pem")).c_str());
    SSL_CTX_use_PrivateKey_file(ctx_, (tls / (c + ".key")).c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_load_verify_locations(ctx_, (tls / "ca.pem").c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = connect_to(port);
    timeval tv{5, 0}; // never hang the test on a silent node
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    ok_ = fd_ >= 0 && SSL_connect(ssl_) == 1;
  }

  ~basp_intruder() {
    if (ssl_ != nullptr)
      SSL_free(ssl_);
    if (fd_ >= 0)
      ::close(fd_);
    SSL_CTX_free(ctx_);
  }

  bool connected() const { return ok_; }

  /// The node id the node's server handshake declares (its first 32 payload
  /// bytes: a default CAF node id), "" if none arrived.
  std::string read_server_node() {
    auto hdr = read(32);
    if (hdr.size() != 32 || hdr[0] != 0)
      return {};
    uint32_t len = 0;
    for (int i = 4; i < 8; ++i)
      len = (len << 8) | static_cast<uint8_t>(hdr[static_cast<size_t>(i)]);
    auto payload = read(len);
    return payload.size() == len && len >= 32 ? payload.substr(0, 32) : std::string{};
  }

  /// Sends one BASP frame; false once the node closed the session.
  bool send(uint8_t op, const std::string& payload, uint64_t source_actor = 0) {
    std::string h(32, '\0');
    h[0] = static_cast<char>(op);
    auto put = [&](size_t at, uint64_t v, int n) {
      for (int i = n - 1; i >= 0; --i, v >>= 8)
        h[at + static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
    };
    put(4, payload.size(), 4);
    put(16, source_actor, 8);
    auto frame = h + payload;
    return SSL_write(ssl_, frame.data(), static_cast<int>(frame.size())) > 0;
  }

  /// Sends only a BASP header announcing a body of `len` bytes (and none of it).
  bool send_header(uint8_t op, uint32_t len) {
    std::string h(32, '\0');
    h[0] = static_cast<char>(op);
    for (int i = 3; i >= 0; --i, len >>= 8)
      h[4 + static_cast<size_t>(i)] = static_cast<char>(len & 0xff);
    h[23] = 1; // source actor 1
    h[31] = 1; // destination actor 1: a header CAF takes as valid
    return SSL_write(ssl_, h.data(), static_cast<int>(h.size())) > 0;
  }

  /// True if the node closes the session within the read timeout (5 s);
  /// what it sends before (its heartbeats) is read and dropped.
  bool closed_by_peer() {
    char buf[4096];
    for (;;) {
      errno = 0;
      int r = SSL_read(ssl_, buf, sizeof(buf));
      if (r > 0)
        continue;
      auto e = SSL_get_error(ssl_, r);
      return !(e == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
  }

private:
  std::string read(size_t n) {
    std::string out;
    char buf[4096];
    while (out.size() < n) {
      int r =
          SSL_read(ssl_, buf, static_cast<int>(std::min(sizeof(buf), n - out.size())));
      if (r <= 0)
        break;
      out.append(buf, static_cast<size_t>(r));
    }
    return out;
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool ok_ = false;
};

} // namespace

TEST_F(cluster_test, frames_naming_another_member_as_their_source_are_refused) {
  auto j = up(3, "--detector-timeout-ms 500");
  auto term = j["term"];
  auto tls = dir / "tls";
  auto addr = [&](int i) { return j["nodes"][i]["address"].get<std::string>(); };
  auto log_of = [&](int id) {
    return read_file(dir / ("node-" + std::to_string(id)) / "node.log");
  };
  auto refused = [&](const std::string& reason) {
    auto body =
        http_get(j["nodes"][0]["metrics_url"].get<std::string>().substr(7), "/metrics");
    return sample(body, "conclave_tls_frames_refused_total{reason=\"" + reason + "\"}")
        .value_or(-1.0);
  };
  // Node 3's CAF node id, as its own server handshake declares it to anyone.
  std::string node3;
  {
    basp_intruder peek{port_of(addr(2)), tls, 2};
    ASSERT_TRUE(peek.connected());
    node3 = peek.read_server_node();
  }
  ASSERT_EQ(node3.size(), 32u);

  // 1. A process with node 2's certificate connects to node 1 as a node of
  //    its own, then sends down messages naming node 3 as their source: to
  //    CAF 0.17.6, "node 3's actor N is gone", which would drop node 1's link
  //    to node 3's candidate (whatever its actor id).
  {
    basp_intruder in{port_of(addr(0)), tls, 2};
    ASSERT_TRUE(in.connected());
    auto node1 = in.read_server_node();
    ASSERT_EQ(node1.size(), 32u);
    auto mine = node1;
    mine[8] = '\x7f';                 // another process id on node 1's host: a fresh node
    ASSERT_TRUE(in.send(0x01, mine)); // client handshake
    // The exit reason, serialized by CAF (an error's context is a message,
    // which needs an actor system to serialize).
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    std::vector<char> reason;
    caf::binary_serializer sink{sys, reason};
    ASSERT_FALSE(sink(caf::error{caf::exit_reason::kill}));
    std::string down = node3 + node1 + std::string{reason.begin(), reason.end()};
    for (uint64_t aid = 1; aid <= 64; ++aid)
      if (!in.send(0x05, down, aid))
        break;
    EXPECT_TRUE(in.closed_by_peer());
  }
  EXPECT_TRUE(eventually([&] { return refused("forged_source") >= 1.0; }, 3s))
      << refused("forged_source");

  // 2. The same certificate's session declares node 3's node id in its own
  //    BASP handshake: node 1's session with node 3 holds that id, so it is
  //    refused as well.
  {
    basp_intruder in{port_of(addr(0)), tls, 2};
    ASSERT_TRUE(in.connected());
    ASSERT_EQ(in.read_server_node().size(), 32u);
    ASSERT_TRUE(in.send(0x01, node3));
    EXPECT_TRUE(in.closed_by_peer());
  }
  EXPECT_TRUE(eventually([&] { return refused("claimed_node") >= 1.0; }, 3s))
      << refused("claimed_node");

  // 3. The same certificate, as a fresh node of its own, sends a header that
  //    announces a body of almost 4 GiB: CAF would allocate all of it before
  //    reading a byte. The session is cut at the header; memory stays.
  {
    int pid1 = j["nodes"][0]["pid"].get<int>();
    auto before = rss_kib(pid1);
    basp_intruder in{port_of(addr(0)), tls, 2};
    ASSERT_TRUE(in.connected());
    auto node1 = in.read_server_node();
    ASSERT_EQ(node1.size(), 32u);
    auto mine = node1;
    mine[8] = '\x7e';
    ASSERT_TRUE(in.send(0x01, mine));
    ASSERT_TRUE(in.send_header(0x02, 0xFFFFFFF0u)); // a direct message
    std::this_thread::sleep_for(300ms);             // within the link timeout: still open
    auto after = rss_kib(pid1);
    EXPECT_TRUE(in.closed_by_peer());
    EXPECT_EQ(::kill(pid1, 0), 0) << "node 1 died";
    EXPECT_GT(after, 0);
    EXPECT_LT(after - before, 64 * 1024) << "RSS " << before << " KiB before, " << after;
  }
  EXPECT_TRUE(eventually([&] { return refused("oversized") >= 1.0; }, 3s))
      << refused("oversized");

  // The honest members never noticed: no link went down, same term, and the
  // store still takes writes.
  std::this_thread::sleep_for(700ms); // past the detector timeout
  auto st = status();
  EXPECT_EQ(st["term"], term) << st.dump(2);
  EXPECT_EQ(leaders(st), 1);
  for (int id = 1; id <= 3; ++id)
    EXPECT_EQ(log_of(id).find(" down"), std::string::npos) << "node " << id << ":\n"
                                                           << log_of(id);
  auto put = run_conclave(
      "kv --timeout-ms 5000 --cluster-dir " + dir.string() + " put after intruder", true);
  EXPECT_EQ(put.status, 0) << put.out;
}
