// The TLS handshake counters of tls_error_queue.cpp, through OpenSSL's own
// API over an in-memory BIO pair: no sockets, no CAF. This test binary links
// the wrappers, so its SSL_accept/SSL_connect calls go through them exactly
// as CAF's do in the `conclave` executable.
#include "runtime/node/tls_error_queue.hpp"
#include "tests/support/ssl_pair.hpp"

#include "tests/support/test_certificates.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace conclave::node;
using conclave::test::test_certificates;

namespace {

using ctx_ptr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

/// A context as CAF's OpenSSL module builds it with authentication: our
/// certificate and key (if any), the CA, peer verification required.
ctx_ptr context(bool server, const std::string& ca, const std::string& cert,
                const std::string& key) {
  ctx_ptr ctx{SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()),
              SSL_CTX_free};
  if (!cert.empty()) {
    EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM), 1);
  }
  EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr), 1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  return ctx;
}

struct outcome {
  bool accepted = false;
  bool connected = false;
};

/// Runs both ends of one handshake in turns until neither waits for bytes.
outcome handshake(SSL_CTX* server_ctx, SSL_CTX* client_ctx) {
  auto [server, client] = conclave::test::make_ssl_pair(server_ctx, client_ctx);
  outcome o;
  bool server_done = false;
  bool client_done = false;
  for (int turn = 0; turn < 20 && !(server_done && client_done); ++turn) {
    if (!client_done) {
      int r = SSL_connect(client);
      auto e = SSL_get_error(client, r);
      if (r == 1 || (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)) {
        client_done = true;
        o.connected = r == 1;
      }
    }
    if (!server_done) {
      int r = SSL_accept(server);
      auto e = SSL_get_error(server, r);
      if (r == 1 || (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)) {
        server_done = true;
        o.accepted = r == 1;
      }
    }
  }
  SSL_free(server);
  SSL_free(client);
  ERR_clear_error();
  return o;
}

const test_certificates& ours() {
  static const test_certificates c{{1, 2}};
  return c;
}

const test_certificates& theirs() {
  static const test_certificates c{{2}};
  return c;
}

} // namespace

TEST(tls_handshake_counters, a_healthy_handshake_counts_nothing) {
  auto server = context(true, ours().ca(), ours().cert(1), ours().key(1));
  auto client = context(false, ours().ca(), ours().cert(2), ours().key(2));
  auto acc = tls_handshakes_refused(tls_side::accepting);
  auto dia = tls_handshakes_refused(tls_side::dialing);
  auto o = handshake(server.get(), client.get());
  EXPECT_TRUE(o.accepted);
  EXPECT_TRUE(o.connected);
  EXPECT_EQ(tls_handshakes_refused(tls_side::accepting), acc);
  EXPECT_EQ(tls_handshakes_refused(tls_side::dialing), dia);
}

TEST(tls_handshake_counters, a_dialer_without_certificate_is_counted_by_the_acceptor) {
  auto server = context(true, ours().ca(), ours().cert(1), ours().key(1));
  auto client = context(false, ours().ca(), "", "");
  auto acc = tls_handshakes_refused(tls_side::accepting);
  auto o = handshake(server.get(), client.get());
  EXPECT_FALSE(o.accepted);
  EXPECT_EQ(tls_handshakes_refused(tls_side::accepting), acc + 1);
}

TEST(tls_handshake_counters, a_dialer_of_another_ca_is_counted_by_the_acceptor) {
  auto server = context(true, ours().ca(), ours().cert(1), ours().key(1));
  auto client = context(false, ours().ca(), theirs().cert(2), theirs().key(2));
  auto acc = tls_handshakes_refused(tls_side::accepting);
  auto o = handshake(server.get(), client.get());
  EXPECT_FALSE(o.accepted);
  EXPECT_EQ(tls_handshakes_refused(tls_side::accepting), acc + 1);
}

TEST(tls_handshake_counters, an_acceptor_of_another_ca_is_counted_by_the_dialer) {
  auto server = context(true, theirs().ca(), theirs().cert(2), theirs().key(2));
  auto client = context(false, ours().ca(), ours().cert(1), ours().key(1));
  auto dia = tls_handshakes_refused(tls_side::dialing);
  auto o = handshake(server.get(), client.get());
  EXPECT_FALSE(o.connected);
  EXPECT_EQ(tls_handshakes_refused(tls_side::dialing), dia + 1);
}

TEST(tls_dial_abandon, a_dial_never_answered_past_its_time_is_shut_down_and_counted) {
  auto server = context(true, ours().ca(), ours().cert(1), ours().key(1));
  auto client = context(false, ours().ca(), ours().cert(2), ours().key(2));
  // A healthy handshake within its time is left alone.
  abandon_tls_dials_after(std::chrono::seconds(10));
  auto before = tls_dials_abandoned();
  auto o = handshake(server.get(), client.get());
  EXPECT_TRUE(o.connected);
  EXPECT_EQ(tls_dials_abandoned(), before);
  // The peer never answers (a stopped process): the first step waits. Past
  // the time (50 ms here) the socket is shut down, by the sweeping thread
  // (a dial waiting for its peer is parked, so nothing steps it again), and
  // the next step fails.
  abandon_tls_dials_after(std::chrono::milliseconds(50));
  // CAF blocks SIGPIPE around its OpenSSL calls; so does this test.
  auto old_pipe = std::signal(SIGPIPE, SIG_IGN);
  // Over a socket (the socket is what gets shut down); the other end stays
  // unread, as a stopped peer's.
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
  SSL* cli = SSL_new(client.get());
  SSL_set_fd(cli, fds[0]);
  SSL_set_connect_state(cli);
  int r = SSL_connect(cli);
  EXPECT_EQ(SSL_get_error(cli, r), SSL_ERROR_WANT_READ);
  EXPECT_EQ(tls_dials_abandoned(), before);
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       tls_dials_abandoned() == before && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(tls_dials_abandoned(), before + 1); // without another step
  r = SSL_connect(cli);
  auto e = SSL_get_error(cli, r);
  EXPECT_NE(r, 1);
  EXPECT_NE(e, SSL_ERROR_WANT_READ);
  EXPECT_NE(e, SSL_ERROR_WANT_WRITE);
  EXPECT_EQ(tls_dials_abandoned(), before + 1);
  char byte = 0;
  EXPECT_EQ(::send(SSL_get_fd(cli), &byte, 1, MSG_NOSIGNAL), -1); // shut down
  // Off again: a waiting dial stays as it is.
  abandon_tls_dials_after(std::chrono::nanoseconds(0));
  auto [srv2, cli2] = conclave::test::make_ssl_pair(server.get(), client.get());
  for (int i = 0; i < 3; ++i) {
    r = SSL_connect(cli2);
    EXPECT_EQ(SSL_get_error(cli2, r), SSL_ERROR_WANT_READ);
  }
  EXPECT_EQ(tls_dials_abandoned(), before + 1);
  for (auto* s : {cli, srv2, cli2})
    SSL_free(s);
  ::close(fds[0]);
  ::close(fds[1]);
  std::signal(SIGPIPE, old_pipe);
  ERR_clear_error();
}
