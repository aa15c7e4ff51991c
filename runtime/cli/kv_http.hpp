// The HTTPS path of a one-shot `conclave kv get|put|delete`: one TCP connect,
// one TLS handshake (resumed with the ticket kept in the cache directory,
// node/tls_reuse.hpp) and one request to a member's /v1/kv route
// (docs/reference/http.md), with no actor system, no BASP handshake and no
// client hello. See docs/design/node.md ("Where a one-shot kv put spends its
// time").
//
// Exactly-once: a write carries the caller's session (`session=ID&seq=N`,
// the route puts it in front of the transaction, as the client library does
// on the CAF path), so sending it again after a lost answer, to another
// member over HTTPS or over the CAF path with the same session id, is
// answered with the first outcome instead of being applied twice.
//
// The request building and the answer parsing are pure (tested without
// sockets); call() does the I/O, every step bounded by a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

struct ssl_ctx_st;

namespace conclave::cli::kv_http {

using clock_type = std::chrono::steady_clock;

/// What to ask a member's /v1/kv route. Keys and values travel as base64
/// (encoding=base64), so any bytes survive.
struct request {
  enum class kind { get, put, remove } what = kind::get;
  std::string collection = "kv";
  std::string key;
  std::string value;
  /// The write's session (both empty/0 for a read).
  std::string session;
  uint64_t seq = 0;
};

/// Percent-encodes everything but unreserved characters (RFC 3986).
std::string percent_encode(const std::string& s);

/// The HTTP/1.1 request text for `r` to `host` (HOST:PORT).
std::string request_text(const request& r, const std::string& host);

/// An HTTP answer.
struct response {
  int status = 0;
  std::string body;
};

enum class parse_state { incomplete, done, bad };

/// Parses `bytes` received so far: done once the status line, the headers
/// and Content-Length bytes of body are in; bad for what is not an HTTP/1.x
/// answer with a Content-Length (or one larger than `max_body`).
parse_state parse_response(const std::string& bytes, response& out,
                           size_t max_body = 64u << 20);

/// What an answer means for the command.
struct verdict {
  enum class kind {
    ok,        ///< print `output` on stdout, exit 0
    not_found, ///< a get of an absent key: exit 1, "key not found"
    retry,     ///< not an answer to keep: ask elsewhere (or fall back)
  } what = kind::retry;
  std::string output;   ///< without the newline
  uint64_t primary = 0; ///< the node that answered as the primary
  std::string problem;  ///< for retry: what the answer said
};

/// The command's reading of an answer to `r` (`json`: put/delete print one
/// JSON object). Only 200 and a get's 404 are kept: any other answer (a
/// refusal, a node without its store client, an outcome it could not settle)
/// is left to the next member or the CAF path, which give the same errors
/// as always; a write is safe to send again there thanks to its session.
verdict judge(const request& r, const response& a, bool json);

/// A TLS client context with the client certificate, verifying the members'
/// certificates against `ca`; nullptr (and `error`) if the files do not load.
ssl_ctx_st* make_context(const std::string& ca, const std::string& cert,
                         const std::string& key, std::string& error);

/// One HTTPS exchange with HOST:PORT.
struct exchange {
  enum class kind {
    answered, ///< `answer` holds a complete HTTP answer
    not_sent, ///< nothing of the request left this process
    unknown,  ///< the request may have been sent, no complete answer
  } what = kind::not_sent;
  response answer;
  std::string error;
};

/// Connects, shakes hands (offering a saved session ticket), sends `text` and
/// reads the answer. The connect and handshake end by `setup_deadline`, the
/// whole exchange by `deadline`. Never blocks past them. `on_handshake` (if
/// any) is called once the handshake is done.
exchange call(ssl_ctx_st* ctx, const std::string& host_port, const std::string& text,
              clock_type::time_point setup_deadline, clock_type::time_point deadline,
              void (*on_handshake)() = nullptr);

/// 16 random bytes in hex: a one-shot command's session id.
std::string random_session_id();

} // namespace conclave::cli::kv_http
