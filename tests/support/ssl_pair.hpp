// Both ends of a TLS connection over memory (an OpenSSL BIO pair), for tests
// and benchmarks that drive a handshake step by step without sockets.
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

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

/// What a handshake over a pair came to.
struct handshake_result {
  bool done = false;           ///< both ends finished the handshake
  bool client_resumed = false; ///< the client resumed a session
  bool server_resumed = false;
  std::string
      client_subject; ///< the CN of the client's certificate, as the server sees it
};

/// Runs both ends' handshake steps in turn until both finish (at most 20
/// rounds); if they did, sends one byte from the server, which carries a TLS
/// 1.3 session ticket to the client before it. Frees both ends and clears
/// OpenSSL's error queue.
inline handshake_result run_handshake(ssl_pair p) {
  int c = 0;
  int s = 0;
  for (int turn = 0; turn < 20 && (c != 1 || s != 1); ++turn) {
    if (c != 1)
      c = SSL_connect(p.client);
    if (s != 1)
      s = SSL_accept(p.server);
  }
  handshake_result o;
  o.done = c == 1 && s == 1;
  char byte = 'x';
  if (o.done && SSL_write(p.server, &byte, 1) == 1 && SSL_read(p.client, &byte, 1) == 1) {
    o.client_resumed = SSL_session_reused(p.client) == 1;
    o.server_resumed = SSL_session_reused(p.server) == 1;
    if (X509* x = SSL_get_peer_certificate(p.server)) {
      char name[256] = {};
      X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, name,
                                sizeof name);
      o.client_subject = name;
      X509_free(x);
    }
  } else {
    o.done = false;
  }
  SSL_free(p.server);
  SSL_free(p.client);
  ERR_clear_error();
  return o;
}

} // namespace conclave::test
