// The HTTPS path's TLS context (kv_http::make_context) over memory, against
// a member-like server context that asks for the client certificate: the
// certificate, key and CA are read when a handshake first needs them, so a
// handshake resumed with a saved ticket reads none of them, and a full one
// still proves the client and checks the member.
#include "runtime/cli/kv_http.hpp"

#include "runtime/node/tls_session_files.hpp"
#include "tests/support/ssl_pair.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_certificates.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

namespace kv_http_tls_test {

namespace fs = std::filesystem;
using conclave::test::test_certificates;
using ctx_ptr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

const test_certificates& certs() {
  static const test_certificates c{{1, 2}};
  return c;
}

/// A member's context: node 1's certificate, a client certificate required.
ctx_ptr member_context(const test_certificates& c) {
  ctx_ptr ctx{SSL_CTX_new(TLS_server_method()), SSL_CTX_free};
  EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), c.cert(1).c_str()), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), c.key(1).c_str(), SSL_FILETYPE_PEM),
            1);
  EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), c.ca().c_str(), nullptr), 1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  const unsigned char id[] = "kv-http-tls-test";
  SSL_CTX_set_session_id_context(ctx.get(), id, sizeof id - 1);
  return ctx;
}

/// One handshake of a client of `client_ctx` with `member`, as member
/// address `peer` (for the session files).
conclave::test::handshake_result handshake(SSL_CTX* member, SSL_CTX* client_ctx,
                                           const std::string& peer) {
  auto pair = conclave::test::make_ssl_pair(member, client_ctx);
  conclave::node::prepare_tls_dial_to(pair.client, peer);
  return conclave::test::run_handshake(pair);
}

struct kv_http_tls : ::testing::Test {
  conclave::test::temp_dir dir{"conclave-kv-http-tls"};
  ctx_ptr member = member_context(certs());
  void TearDown() override { conclave::node::enable_tls_session_files("", ""); }

  /// A copy of `file` in the test's directory (to damage or remove).
  std::string copy(const std::string& file, const std::string& name) {
    auto to = dir.path() / name;
    fs::copy_file(file, to, fs::copy_options::overwrite_existing);
    return to.string();
  }

  ctx_ptr client(const std::string& ca, const std::string& cert, const std::string& key) {
    std::string error;
    ctx_ptr ctx{conclave::cli::kv_http::make_context(ca, cert, key, error), SSL_CTX_free};
    EXPECT_TRUE(ctx) << error;
    return ctx;
  }
};

} // namespace kv_http_tls_test

using namespace kv_http_tls_test;

TEST_F(kv_http_tls, a_full_handshake_reads_the_certificate_when_asked_for_it) {
  auto ctx = client(certs().ca(), certs().cert(2), certs().key(2));
  // Nothing read yet: the context holds no certificate of its own.
  EXPECT_EQ(SSL_CTX_get0_certificate(ctx.get()), nullptr);
  auto o = handshake(member.get(), ctx.get(), "127.0.0.1:7001");
  ASSERT_TRUE(o.done);
  EXPECT_FALSE(o.client_resumed);
  EXPECT_EQ(o.client_subject, "node-2");
}

TEST_F(kv_http_tls, a_resumed_handshake_needs_none_of_the_files) {
  conclave::node::enable_tls_session_files(dir.path().string(), "identity");
  auto cert = copy(certs().cert(2), "client.pem");
  auto key = copy(certs().key(2), "client.key");
  auto ca = copy(certs().ca(), "ca.pem");
  auto first_ctx = client(ca, cert, key);
  ASSERT_TRUE(handshake(member.get(), first_ctx.get(), "127.0.0.1:7001").done);
  // The next process: its files are gone before its handshake.
  auto next_ctx = client(ca, cert, key);
  for (auto& f : {cert, key, ca})
    fs::remove(f);
  auto o = handshake(member.get(), next_ctx.get(), "127.0.0.1:7001");
  ASSERT_TRUE(o.done);
  EXPECT_TRUE(o.client_resumed);
  EXPECT_EQ(o.client_subject, "node-2"); // from inside the ticket
  // Without a ticket (another member) the same context cannot prove itself.
  EXPECT_FALSE(handshake(member.get(), next_ctx.get(), "127.0.0.1:7002").done);
}

TEST_F(kv_http_tls, a_damaged_key_fails_the_full_handshake_not_the_context) {
  auto key = copy(certs().cert(2), "not-a-key.pem");
  auto ctx = client(certs().ca(), certs().cert(2), key);
  EXPECT_FALSE(handshake(member.get(), ctx.get(), "127.0.0.1:7001").done);
  // Another node's key: the certificate and the key do not match.
  auto other = client(certs().ca(), certs().cert(2), certs().key(1));
  EXPECT_FALSE(handshake(member.get(), other.get(), "127.0.0.1:7001").done);
}

TEST_F(kv_http_tls, a_member_of_another_ca_is_refused) {
  static const test_certificates stranger{{1, 2}};
  auto foreign = member_context(stranger);
  auto ctx = client(certs().ca(), certs().cert(2), certs().key(2));
  EXPECT_FALSE(handshake(foreign.get(), ctx.get(), "127.0.0.1:7001").done);
  // A CA file that holds no certificate verifies nobody.
  std::ofstream{dir.path() / "empty.pem"} << "not a certificate\n";
  auto empty =
      client((dir.path() / "empty.pem").string(), certs().cert(2), certs().key(2));
  EXPECT_FALSE(handshake(member.get(), empty.get(), "127.0.0.1:7001").done);
}

TEST_F(kv_http_tls, a_file_that_cannot_be_read_is_named_at_once) {
  for (int missing = 0; missing < 3; ++missing) {
    std::string files[3] = {certs().ca(), certs().cert(2), certs().key(2)};
    files[missing] = (dir.path() / "absent.pem").string();
    std::string error;
    auto* ctx = conclave::cli::kv_http::make_context(files[0], files[1], files[2], error);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(error.find("absent.pem"), std::string::npos) << error;
    SSL_CTX_free(ctx);
  }
}
