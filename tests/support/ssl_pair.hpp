// Both ends of a TLS connection over memory (an OpenSSL BIO pair), for tests
// and benchmarks that drive a handshake step by step without sockets.
#pragma once

#include <openssl/bio.h>
#include <openssl/ssl.h>

namespace conclave::test {

struct ssl_pair {
  SSL* server = nullptr; ///< in accept state
  SSL* client = nullptr; ///< in connect state
};

/// A server and a client session of the given contexts, wired to each other.
/// The caller frees both with SSL_free (each owns its end of the pair).
inline ssl_pair make_ssl_pair(SSL_CTX* server_ctx, SSL_CTX* client_ctx) {
  ssl_pair p{SSL_new(server_ctx), SSL_new(client_ctx)};
  BIO* a = nullptr;
  BIO* b = nullptr;
  BIO_new_bio_pair(&a, 0, &b, 0);
  SSL_set_bio(p.server, a, a);
  SSL_set_bio(p.client, b, b);
  SSL_set_accept_state(p.server);
  SSL_set_connect_state(p.client);
  return p;
}

} // namespace conclave::test
