// tls_reuse.cpp through OpenSSL's own API over in-memory BIO pairs (no
// sockets, no CAF): contexts are built as CAF's OpenSSL module builds them
// (files loaded through the interposed functions), a new pair of contexts
// per handshake, and this test binary's SSL_connect/SSL_accept go through the
// wrappers of tls_error_queue.cpp as CAF's do in the `conclave` executable.
#include "runtime/node/tls_reuse.hpp"
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
#include <sys/stat.h>

using namespace conclave::node;
using conclave::test::test_certificates;
namespace fs = std::filesystem;

// Named, not anonymous: the test sources of this folder share one unity
// translation unit.
namespace tls_reuse_test {

using ctx_ptr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

const test_certificates& reuse_certs() {
  static const test_certificates c{{1, 2}};
  return c;
}

/// A context as CAF's OpenSSL module builds one per connection.
ctx_ptr reuse_context(const std::string& cert, const std::string& key) {
  ctx_ptr ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM), 1);
  EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), reuse_certs().ca().c_str(), nullptr),
            1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  return ctx;
}

/// One handshake between new contexts (node 1 accepts, node 2 dials as
/// member address `peer`), then one byte from the acceptor, which carries
/// the session ticket to the dialer before it.
conclave::test::handshake_result reuse_handshake(const std::string& peer) {
  auto server_ctx = reuse_context(reuse_certs().cert(1), reuse_certs().key(1));
  auto client_ctx = reuse_context(reuse_certs().cert(2), reuse_certs().key(2));
  auto pair = conclave::test::make_ssl_pair(server_ctx.get(), client_ctx.get());
  prepare_tls_dial_to(pair.client, peer);
  return conclave::test::run_handshake(pair);
}

struct tls_sessions : ::testing::Test {
  conclave::test::temp_dir dir{"conclave-tls-sessions"};
  void TearDown() override { enable_tls_session_files("", ""); }
};

} // namespace tls_reuse_test

using namespace tls_reuse_test;

TEST(tls_files, the_interposed_loaders_are_active) {
  EXPECT_TRUE(tls_file_cache_active());
}

TEST(tls_files, a_replaced_key_file_is_read_again) {
  conclave::test::temp_dir dir{"conclave-tls-files"};
  auto key = (dir.path() / "key.pem").string();
  fs::copy_file(reuse_certs().key(1), key);
  {
    auto ctx = reuse_context(reuse_certs().cert(1), key); // parsed and matching
  }
  // Another key under the same name (a new file, as an editor or a copy
  // tool writes it): node 1's certificate no longer matches it.
  auto tmp = key + ".new";
  fs::copy_file(reuse_certs().key(2), tmp);
  fs::rename(tmp, key);
  ctx_ptr ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  ASSERT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), reuse_certs().cert(1).c_str()),
            1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM), 0);
  ERR_clear_error();
}

TEST(tls_files, a_garbled_file_gets_libssls_error) {
  conclave::test::temp_dir dir{"conclave-tls-files"};
  auto cert = (dir.path() / "cert.pem").string();
  std::ofstream{cert} << "-----BEGIN CERTIFICATE-----\nnot base64 at all\n"
                         "-----END CERTIFICATE-----\n";
  ctx_ptr ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  ERR_clear_error();
  EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()), 0);
  EXPECT_NE(ERR_peek_error(), 0u);
  ERR_clear_error();
  EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), cert.c_str(), nullptr), 0);
  ERR_clear_error();
}

TEST(tls_files, a_chain_file_gives_the_leaf_and_its_chain) {
  conclave::test::temp_dir dir{"conclave-tls-files"};
  auto chain = (dir.path() / "chain.pem").string();
  {
    std::ofstream out{chain};
    out << std::ifstream{reuse_certs().cert(2)}.rdbuf()
        << std::ifstream{reuse_certs().ca()}.rdbuf();
  }
  ctx_ptr ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  ASSERT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), chain.c_str()), 1);
  STACK_OF(X509)* extra = nullptr;
  ASSERT_EQ(SSL_CTX_get0_chain_certs(ctx.get(), &extra), 1);
  ASSERT_NE(extra, nullptr);
  EXPECT_EQ(sk_X509_num(extra), 1);
  X509* leaf = SSL_CTX_get0_certificate(ctx.get());
  ASSERT_NE(leaf, nullptr);
  char name[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, name,
                            sizeof name);
  EXPECT_STREQ(name, "node-2");
}

TEST_F(tls_sessions, without_session_files_every_handshake_is_full) {
  auto first = reuse_handshake("127.0.0.1:7001");
  auto second = reuse_handshake("127.0.0.1:7001");
  ASSERT_TRUE(first.done);
  ASSERT_TRUE(second.done);
  EXPECT_FALSE(second.client_resumed);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST_F(tls_sessions, the_second_handshake_resumes_and_still_names_the_dialer) {
  enable_tls_session_files(dir.path().string(), "identity A");
  auto first = reuse_handshake("127.0.0.1:7001");
  ASSERT_TRUE(first.done);
  EXPECT_FALSE(first.client_resumed);
  auto file = tls_session_file("127.0.0.1:7001");
  ASSERT_TRUE(fs::exists(file));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto second = reuse_handshake("127.0.0.1:7001");
  ASSERT_TRUE(second.done);
  EXPECT_TRUE(second.client_resumed);
  EXPECT_TRUE(second.server_resumed);
  EXPECT_EQ(second.client_subject, "node-2");
}

TEST_F(tls_sessions, a_ticket_is_offered_only_to_its_member_under_its_identity) {
  enable_tls_session_files(dir.path().string(), "identity A");
  ASSERT_TRUE(reuse_handshake("127.0.0.1:7001").done);
  // Another member: no ticket of its own yet.
  auto other = reuse_handshake("127.0.0.1:7002");
  ASSERT_TRUE(other.done);
  EXPECT_FALSE(other.client_resumed);
  // Another certificate (identity): not the ticket of the first.
  enable_tls_session_files(dir.path().string(), "identity B");
  EXPECT_NE(tls_session_file("127.0.0.1:7001"), "");
  auto b = reuse_handshake("127.0.0.1:7001");
  ASSERT_TRUE(b.done);
  EXPECT_FALSE(b.client_resumed);
}

TEST_F(tls_sessions, a_garbled_ticket_file_costs_a_full_handshake) {
  enable_tls_session_files(dir.path().string(), "identity A");
  std::ofstream{tls_session_file("127.0.0.1:7001")} << "garbage";
  auto o = reuse_handshake("127.0.0.1:7001");
  ASSERT_TRUE(o.done);
  EXPECT_FALSE(o.client_resumed);
  EXPECT_EQ(o.client_subject, "node-2");
  // The full handshake saved a good ticket over it.
  auto again = reuse_handshake("127.0.0.1:7001");
  ASSERT_TRUE(again.done);
  EXPECT_TRUE(again.client_resumed);
}
