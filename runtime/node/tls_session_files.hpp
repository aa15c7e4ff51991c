// TLS 1.3 session tickets kept in files, for one-shot client processes: a
// process that called enable_tls_session_files() (or keep_tls_sessions())
// offers, on each dial, the ticket it saved for the member it dials, and
// saves the ticket of each full handshake in a file per member (mode 0600:
// it stands for the client certificate for as long as it is valid). A
// resumed handshake sends, parses and verifies no certificate and signs
// nothing. A ticket the member cannot use (it restarted, the ticket expired
// or is garbled) costs nothing but the full handshake it replaces.
//
// Plain OpenSSL, no actor system: linked both by the full `conclave` binary
// (whose SSL_connect wrapper calls prepare_tls_dial, node/tls_reuse.hpp) and
// by the small front that serves one-shot `kv` operations (which calls it
// itself before its handshake).
#pragma once

#include <string>

struct ssl_st;

namespace conclave::node {

/// Client processes: offer and keep TLS session tickets in files under `dir`
/// (created if missing, mode 0700), one per member address and `identity`
/// (e.g. the client certificate and CA files' bytes: a ticket stands for the
/// certificate it was issued to, so another certificate must not find it).
/// "" turns it off (the default).
void enable_tls_session_files(const std::string& dir, const std::string& identity);

/// enable_tls_session_files(cache_dir, bytes of tls_cert + NUL + bytes of
/// tls_ca), creating cache_dir. Best effort: with cache_dir or tls_ca empty,
/// or a file that cannot be read, session files stay off.
void keep_tls_sessions(const std::string& cache_dir, const std::string& tls_ca,
                       const std::string& tls_cert);

/// The file that holds the ticket for a member at `peer` (HOST:PORT as
/// getpeername gives it) under `identity`; "" when session files are off.
std::string tls_session_file(const std::string& peer);

/// Before a dialing handshake's first step: offer the saved ticket of the
/// socket's peer and keep the one a full handshake gets. Does nothing while
/// session files are off; a second call for the same SSL does nothing.
void prepare_tls_dial(ssl_st* s);

/// prepare_tls_dial for a handshake with the member at `peer` (HOST:PORT):
/// what prepare_tls_dial does with the socket's peer address; tests call it
/// for handshakes over memory.
void prepare_tls_dial_to(ssl_st* s, const std::string& peer);

} // namespace conclave::node
