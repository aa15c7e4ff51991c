// What conclave's TLS connections reuse, although CAF 0.17.6's OpenSSL
// module builds a new SSL context for every connection (it reads and parses
// the certificate, the key and the CA again each time, and keeps no session):
//
// - Parsed files. This executable interposes SSL_CTX_use_certificate_chain_file,
//   SSL_CTX_use_PrivateKey_file and SSL_CTX_load_verify_locations (found by
//   the dynamic linker before libssl's, like tls_error_queue.cpp's wrappers):
//   a PEM file is parsed once per process and its certificates and key are
//   handed to each new context. A file is parsed again when it changed (its
//   inode, size or modification time), so a replaced file takes effect for new
//   connections as before. An encrypted key, a CA directory or a file that
//   does not parse goes to libssl's own function (and its error).
//   Measured: parsing costs about 0.8 ms per context (the key 0.4 ms), paid by
//   a node's I/O thread for every client connection it accepts.
//
// - TLS 1.3 session resumption for client processes. Every accepting
//   handshake gets a session id context and this process's ticket key (random,
//   made once per process), so that a session ticket it issued is accepted by
//   its later connections although each has a new context; one ticket per
//   connection, valid for an hour. A client process that called
//   enable_tls_session_files() offers the ticket it saved for the member it
//   dials, and saves the ticket of each full handshake in a file per member
//   (mode 0600: it stands for the client certificate for as long as it is
//   valid). A resumed handshake sends, parses and verifies no certificate
//   and signs nothing; the member still knows the client's certificate (it is
//   inside the ticket, sealed with the member's key). A ticket the member
//   cannot use (it restarted, the ticket expired or is garbled) costs nothing
//   but the full handshake it replaces. Nodes dialing each other keep their
//   connections and offer no tickets.
#pragma once

#include "runtime/node/tls_session_files.hpp"

#include <string>

struct ssl_st;

namespace conclave::node {

/// Parses these PEM files now (any may be ""), so that the first TLS
/// connection finds them parsed: called on a helper thread while the actor
/// system starts. Harmless if a file does not parse (the connection then
/// reports libssl's error).
void preload_tls_files(const std::string& cert, const std::string& key,
                       const std::string& ca);

/// Called by the SSL_accept wrapper (tls_error_queue.cpp) before a
/// handshake's first step (the SSL_connect wrapper calls prepare_tls_dial,
/// tls_session_files.hpp).
void prepare_tls_accept(ssl_st* s);

/// True if the file interposers are this process's (not libssl's).
bool tls_file_cache_active();

} // namespace conclave::node
