// What a TLS connection costs in CPU when each side builds a new SSL context
// per connection, as CAF 0.17.6's OpenSSL module does
// (runtime/node/tls_reuse.hpp), side by side in one run, medians of
// --rounds rounds, in microseconds of one thread (no sockets: both ends of a
// handshake run in this thread over an in-memory BIO pair, so the figures are
// CPU time, not network time):
//
//   context      SSL_CTX_new and the certificate, key and CA loaded the way
//                CAF does: files parsed by libssl (before) or handed over
//                parsed (tls_reuse's file cache)
//   handshake    both ends' SSL_connect / SSL_accept calls of one handshake,
//                full (certificates sent, verified, signatures) or resumed
//                with the ticket of an earlier one
//
//   tls_bench [--rounds 200]
#include "runtime/node/tls_reuse.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/ssl_pair.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_certificates.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

using conclave::bench::median;
using clock_type = std::chrono::steady_clock;

namespace {

double micros(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

const conclave::test::test_certificates& certs() {
  static const conclave::test::test_certificates c{{1, 2}};
  return c;
}

/// libssl's own loaders, past this executable's interposed ones.
struct libssl_loaders {
  int (*chain)(SSL_CTX*, const char*) = nullptr;
  int (*key)(SSL_CTX*, const char*, int) = nullptr;
  int (*ca)(SSL_CTX*, const char*, const char*) = nullptr;
};

libssl_loaders& libssl() {
  static libssl_loaders l = [] {
    libssl_loaders r;
    void* lib = ::dlopen("libssl.so.3", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr)
      return r;
    r.chain = reinterpret_cast<int (*)(SSL_CTX*, const char*)>(
        ::dlsym(lib, "SSL_CTX_use_certificate_chain_file"));
    r.key = reinterpret_cast<int (*)(SSL_CTX*, const char*, int)>(
        ::dlsym(lib, "SSL_CTX_use_PrivateKey_file"));
    r.ca = reinterpret_cast<int (*)(SSL_CTX*, const char*, const char*)>(
        ::dlsym(lib, "SSL_CTX_load_verify_locations"));
    return r;
  }();
  return l;
}

/// A context for node `id` as CAF builds it; `parse` uses libssl's loaders.
SSL_CTX* context(uint64_t id, bool parse) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  auto cert = certs().cert(id);
  auto key = certs().key(id);
  auto ca = certs().ca();
  bool ok =
      parse ? libssl().chain(ctx, cert.c_str()) == 1
                  && libssl().key(ctx, key.c_str(), SSL_FILETYPE_PEM) == 1
                  && libssl().ca(ctx, ca.c_str(), nullptr) == 1
            : SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) == 1
                  && SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) == 1
                  && SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) == 1;
  if (!ok) {
    std::fprintf(stderr, "tls_bench: cannot load the test certificates\n");
    std::exit(1);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_cipher_list(ctx, "HIGH:!aNULL:!MD5");
  return ctx;
}

struct handshake_cost {
  double dialer = 0;   ///< µs in SSL_connect
  double acceptor = 0; ///< µs in SSL_accept
  bool resumed = false;
};

/// One handshake between new contexts (node 2 dials node 1), then one byte
/// from the acceptor (which brings the dialer its ticket).
handshake_cost handshake() {
  SSL_CTX* server_ctx = context(1, false);
  SSL_CTX* client_ctx = context(2, false);
  auto [server, client] = conclave::test::make_ssl_pair(server_ctx, client_ctx);
  conclave::node::prepare_tls_dial_to(client, "127.0.0.1:7001");
  handshake_cost cost;
  int c = 0;
  int s = 0;
  for (int turn = 0; turn < 20 && (c != 1 || s != 1); ++turn) {
    if (c != 1) {
      auto t0 = clock_type::now();
      c = SSL_connect(client);
      cost.dialer += micros(t0, clock_type::now());
    }
    if (s != 1) {
      auto t0 = clock_type::now();
      s = SSL_accept(server);
      cost.acceptor += micros(t0, clock_type::now());
    }
  }
  if (c != 1 || s != 1) {
    std::fprintf(stderr, "tls_bench: handshake failed\n");
    std::exit(1);
  }
  char byte = 'x';
  SSL_write(server, &byte, 1);
  auto t0 = clock_type::now();
  SSL_read(client, &byte, 1); // the ticket: saved by the dialer
  cost.dialer += micros(t0, clock_type::now());
  cost.resumed = SSL_session_reused(client) == 1;
  SSL_free(server);
  SSL_free(client);
  SSL_CTX_free(server_ctx);
  SSL_CTX_free(client_ctx);
  ERR_clear_error();
  return cost;
}

} // namespace

int main(int argc, char** argv) {
  int rounds = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: tls_bench [--rounds N]\n");
      return 2;
    }
  }
  if (rounds < 1 || libssl().chain == nullptr || libssl().key == nullptr
      || libssl().ca == nullptr) {
    std::fprintf(stderr, "tls_bench: bad --rounds, or libssl's loaders not found\n");
    return 2;
  }
  conclave::test::temp_dir sessions{"conclave-tls-bench"};
  SSL_CTX_free(context(1, false)); // OpenSSL's one-time set-up, not measured
  std::vector<double> parsed, cached, full_dial, full_accept, res_dial, res_accept;
  int resumed = 0;
  for (int r = 0; r < rounds; ++r) {
    // Contexts, alternating.
    for (bool parse : {true, false}) {
      auto t0 = clock_type::now();
      SSL_CTX* ctx = context(1, parse);
      (parse ? parsed : cached).push_back(micros(t0, clock_type::now()));
      SSL_CTX_free(ctx);
    }
    // A full handshake (no session files), then one with the ticket of a
    // full handshake made just before.
    conclave::node::enable_tls_session_files("", "");
    auto full = handshake();
    full_dial.push_back(full.dialer);
    full_accept.push_back(full.acceptor);
    conclave::node::enable_tls_session_files(sessions.path().string(), "bench");
    ::unlink(conclave::node::tls_session_file("127.0.0.1:7001").c_str());
    handshake();
    auto res = handshake();
    resumed += res.resumed ? 1 : 0;
    res_dial.push_back(res.dialer);
    res_accept.push_back(res.acceptor);
  }
  conclave::node::enable_tls_session_files("", "");
  std::printf("TLS CPU cost, one thread, %d rounds, median µs (OpenSSL %s)\n", rounds,
              OpenSSL_version(OPENSSL_VERSION));
  std::printf("%-46s %10.0f\n", "context, files parsed by libssl", median(parsed));
  std::printf("%-46s %10.0f\n", "context, files from the parsed-file cache",
              median(cached));
  std::printf("%-46s %10.0f %10.0f\n", "full handshake: dialer, acceptor",
              median(full_dial), median(full_accept));
  std::printf("%-46s %10.0f %10.0f\n", "resumed handshake: dialer, acceptor",
              median(res_dial), median(res_accept));
  std::printf("resumed: %d of %d\n", resumed, rounds);
  return resumed == rounds ? 0 : 1;
}
