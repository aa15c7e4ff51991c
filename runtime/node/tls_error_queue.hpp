// A fix for CAF 0.17.6's OpenSSL transport, which never clears OpenSSL's
// per-thread error queue: after one failed TLS handshake (a peer without a
// valid certificate, or plaintext bytes), the error left in the queue of the
// middleman's thread makes SSL_get_error() report a fatal error for the next
// healthy connection's routine "want read", and CAF closes that link. Measured:
// one plaintext dialer against a 3-node TLS cluster took links down 88 times in
// 3 s. OpenSSL's rule is to clear the queue before each I/O call; CAF does not,
// so this executable interposes SSL_read, SSL_write, SSL_connect and SSL_accept
// (defined here, found by the dynamic linker before libssl's) with wrappers
// that clear the queue and call libssl's own. See docs/design/node.md.
//
// The same wrappers count TLS handshakes that fail (SSL_connect or SSL_accept
// ending in anything but success or "want read/write"): a peer without a
// certificate of the CA, another CA's, plaintext or random bytes, a peer that
// closes mid-handshake. CAF reports none of these to the application.
//
// SSL_read's wrapper also reads the BASP stream each TLS session carries
// before CAF does (basp_source_guard.hpp): a frame naming another node than
// the connection's own as its source, or another destination than this node,
// closes the connection (counted by reason). It records which certificate
// (subject CN) declared which CAF node in its BASP handshake, so the
// membership handshake can check that the member id a hello claims is the one
// the certificate of the TLS session carrying it names; a second session
// declaring a node that a session of another certificate holds is refused
// (`claimed_node`). SSL_free's wrapper forgets a closed session.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct ssl_ctx_st;

namespace conclave::node {

/// Which side of a TLS handshake this process was.
enum class tls_side { accepting, dialing };

/// Handshakes that failed on `side` since the process started.
uint64_t tls_handshakes_refused(tls_side side);

/// Client processes only: makes a dialing handshake that waits for the
/// peer's reply wait for it (up to 1 ms per call) instead of returning at
/// once. CAF 0.17.6 retries SSL_connect whenever the socket is writable while
/// a message waits behind the handshake, so a peer that accepted the TCP
/// connection but never answers (a frozen process) made the middleman's
/// thread spin a core until it resumed; paced, that costs about 1 % of a core.
/// Nodes leave it off (their I/O thread must not pause for one peer).
void pace_pending_tls_dials(bool on);

/// Nodes: a dialing handshake still waiting for the peer `after` its first
/// step is abandoned (its socket shut down, so the next step fails and CAF
/// closes the connection); zero turns this off (the default). CAF 0.17.6
/// gives up such a dial at the middleman's next heartbeat tick
/// (docs/design/caf-0.17.md) but does not close it: the connection stays
/// registered, and its handshake is retried whenever the socket is writable,
/// until the peer answers. A stopped member's kernel accepts every dial, so
/// each one left a connection spinning the I/O thread for as long as the
/// member stayed stopped.
void abandon_tls_dials_after(std::chrono::nanoseconds after);

/// Dialing handshakes abandoned so since the process started.
uint64_t tls_dials_abandoned();

/// Reasons a TLS session's BASP stream was refused (the label of
/// conclave_tls_frames_refused_total).
inline constexpr std::array<std::string_view, 6> tls_frame_refusals{
    "forged_source", "foreign_destination", "changed_node",
    "malformed",     "claimed_node",        "oversized"};

/// Sessions closed for `reason` since the process started.
uint64_t tls_frames_refused(std::string_view reason);

/// This process's CAF node id as BASP serializes it (basp_node_bytes in
/// peer_links.hpp): frames for another destination are refused from then on.
void set_local_basp_node(std::string node_id);

/// The subject CN of the certificate whose TLS session declared CAF node
/// `node_id` (BASP bytes) in its handshake and is still open; nullopt if none.
std::optional<std::string> tls_certificate_of_node(const std::string& node_id);

/// Sessions of `ctx` carry no BASP (the node's HTTPS API, http_server.cpp):
/// SSL_read hands their bytes on unchecked and their failed handshakes are
/// not counted. Marks the context itself (any number of contexts; the
/// mark ends with the context).
void exempt_from_basp_checks(ssl_ctx_st* ctx);

/// True if the wrappers are in place (libssl's functions were found); calling
/// it also keeps the wrappers' object file in the link.
bool tls_error_queue_fix_active();

} // namespace conclave::node
