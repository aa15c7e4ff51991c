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

#include <memory>

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
