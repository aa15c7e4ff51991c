#include "runtime/cli/kv_http.hpp"

#include "runtime/cli/stage_trace.hpp"

#include "runtime/node/base64.hpp"
#include "runtime/node/tls_session_files.hpp"

#include <nlohmann/json.hpp>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <arpa/inet.h>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace conclave::cli::kv_http {

namespace {

/// Lower-case copy.
std::string lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return s;
}

/// Milliseconds left until `t` (0 if past), for poll().
int ms_until(clock_type::time_point t) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(t - clock_type::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 60000));
}

/// Waits until `fd` is ready for `events` or `until` passes: false then.
bool wait_fd(int fd, short events, clock_type::time_point until) {
  for (;;) {
    int ms = ms_until(until);
    if (ms == 0)
      return false;
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, ms);
    if (r > 0)
      return true;
    if (r < 0 && errno != EINTR)
      return false;
  }
}

/// Splits HOST:PORT ([v6]:PORT too).
bool split_host_port(const std::string& hp, std::string& host, std::string& port) {
  auto colon = hp.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == hp.size())
    return false;
  host = hp.substr(0, colon);
  port = hp.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return true;
}

/// A nonblocking socket connected to `hp` by `until`; -1 and `error` if not.
int connect_to(const std::string& hp, clock_type::time_point until, std::string& error) {
  std::string host, port;
  if (!split_host_port(hp, host, port)) {
    error = "not HOST:PORT: " + hp;
    return -1;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    error = hp + ": " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (auto* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  ai->ai_protocol);
    if (fd < 0)
      continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      int err = ETIMEDOUT;
      if (wait_fd(fd, POLLOUT, until)) {
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
          err = errno;
      }
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      error = hp + ": connect: " + std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

/// OpenSSL's last error as text.
std::string ssl_error_text() {
  unsigned long e = ERR_get_error();
  if (e == 0)
    return "closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

/// Runs `step` (an SSL call) until it succeeds, waiting for the socket as
/// OpenSSL asks, until `until`. The step's result (> 0: done), or 0 on a
/// failure or the deadline.
template <class Step>
int drive(SSL* ssl, int fd, clock_type::time_point until, Step step) {
  for (;;) {
    int r = step();
    if (r > 0)
      return r;
    int e = SSL_get_error(ssl, r);
    short events = e == SSL_ERROR_WANT_READ    ? POLLIN
                   : e == SSL_ERROR_WANT_WRITE ? POLLOUT
                                               : 0;
    if (events == 0 || !wait_fd(fd, events, until))
      return 0;
  }
}

} // namespace

std::string percent_encode(const std::string& s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
                 || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
                 || c == '~';
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string request_text(const request& r, const std::string& host) {
  std::string target = "/v1/kv/" + percent_encode(node::to_base64(r.key))
                       + "?encoding=base64&collection=" + percent_encode(r.collection);
  if (!r.session.empty())
    target += "&session=" + percent_encode(r.session) + "&seq=" + std::to_string(r.seq);
  std::string body;
  const char* method = "GET";
  if (r.what == request::kind::put) {
    method = "PUT";
    body = nlohmann::json{{"value", node::to_base64(r.value)}}.dump();
  } else if (r.what == request::kind::remove) {
    method = "DELETE";
  }
  std::string text = std::string{method} + " " + target + " HTTP/1.1\r\nHost: " + host
                     + "\r\nConnection: close\r\n";
  if (r.what == request::kind::put)
    text += "Content-Type: application/json\r\nContent-Length: "
            + std::to_string(body.size()) + "\r\n";
  return text + "\r\n" + body;
}

parse_state parse_response(const std::string& bytes, response& out, size_t max_body) {
  auto head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos)
    return bytes.size() > 65536 ? parse_state::bad : parse_state::incomplete;
  // Status line: HTTP/1.x NNN reason
  auto line_end = bytes.find("\r\n");
  auto status_line = bytes.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12
      || status_line[8] != ' ')
    return parse_state::bad;
  int status = 0;
  auto [p, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc{} || p != status_line.data() + 12 || status < 100)
    return parse_state::bad;
  std::optional<size_t> length;
  size_t pos = line_end + 2;
  while (pos < head_end) {
    auto e = bytes.find("\r\n", pos);
    auto line = bytes.substr(pos, e - pos);
    pos = e + 2;
    auto colon = line.find(':');
    if (colon == std::string::npos)
      return parse_state::bad;
    auto name = lower(line.substr(0, colon));
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.erase(0, 1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
      value.pop_back();
    if (name == "content-length") {
      size_t n = 0;
      auto [q, ec2] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec2 != std::errc{} || q != value.data() + value.size() || value.empty())
        return parse_state::bad;
      length = n;
    } else if (name == "transfer-encoding") {
      return parse_state::bad; // the node always sends a length
    }
  }
  if (!length || *length > max_body)
    return parse_state::bad;
  auto body_start = head_end + 4;
  if (bytes.size() < body_start + *length)
    return parse_state::incomplete;
  out.status = status;
  out.body = bytes.substr(body_start, *length);
  return parse_state::done;
}

verdict judge(const request& r, const response& a, bool json_out) {
  verdict v;
  auto j = nlohmann::json::parse(a.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    v.problem = "HTTP " + std::to_string(a.status) + " without a JSON object";
    return v;
  }
  auto number = [&](const char* name) -> uint64_t {
    auto i = j.find(name);
    return i != j.end() && i->is_number_unsigned() ? i->get<uint64_t>() : 0;
  };
  if (a.status == 200) {
    v.primary = number("node");
    if (r.what == request::kind::get) {
      auto i = j.find("value");
      std::optional<std::string> value;
      if (i != j.end() && i->is_string())
        value = node::from_base64(i->get<std::string>());
      if (!value) {
        v.problem = "an answer without a base64 value";
        return v;
      }
      v.what = verdict::kind::ok;
      v.output = std::move(*value);
      return v;
    }
    auto i = j.find("lsn");
    if (i == j.end() || !i->is_number_unsigned()) {
      v.problem = "an answer without an lsn";
      return v;
    }
    v.what = verdict::kind::ok;
    v.output = json_out
                   ? nlohmann::json{{"node", v.primary}, {"lsn", number("lsn")}}.dump()
                   : "ok lsn " + std::to_string(number("lsn"));
    return v;
  }
  auto err = j.find("error");
  std::string said = err != j.end() && err->is_string() ? err->get<std::string>() : "";
  // A get's 404 from the route: the key (or its whole collection) is absent.
  if (a.status == 404 && r.what == request::kind::get && said == "no such key") {
    v.what = verdict::kind::not_found;
    return v;
  }
  v.problem = "HTTP " + std::to_string(a.status) + (said.empty() ? "" : ": " + said);
  return v;
}

namespace {

/// The files a context reads when a handshake first needs them.
struct tls_files {
  std::string ca;
  std::string cert;
  std::string key;
  std::once_flag ca_once;
  bool ca_loaded = false;
};

void free_files(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<tls_files*>(ptr);
}

int files_index() {
  static const int index =
      SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_files);
  return index;
}

tls_files* files_of(SSL_CTX* ctx) {
  return static_cast<tls_files*>(SSL_CTX_get_ex_data(ctx, files_index()));
}

/// The member asked for the client certificate (a full handshake): the
/// certificate chain and the key, read now.
int use_client_files(SSL* ssl, void*) {
  auto* f = files_of(SSL_get_SSL_CTX(ssl));
  if (f == nullptr)
    return 0;
  return SSL_use_certificate_chain_file(ssl, f->cert.c_str()) == 1
                 && SSL_use_PrivateKey_file(ssl, f->key.c_str(), SSL_FILETYPE_PEM) == 1
                 && SSL_check_private_key(ssl) == 1
             ? 1
             : 0;
}

/// The member's certificate is to be verified (a full handshake): the CA
/// file, read once, then OpenSSL's own verification.
int verify_with_ca(X509_STORE_CTX* x, void* arg) {
  auto* f = static_cast<tls_files*>(arg);
  std::call_once(f->ca_once, [&] {
    f->ca_loaded = X509_STORE_load_file(X509_STORE_CTX_get0_store(x), f->ca.c_str()) == 1;
  });
  if (!f->ca_loaded) {
    X509_STORE_CTX_set_error(x, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
    return 0;
  }
  return X509_verify_cert(x);
}

bool readable(const std::string& file) {
  return ::access(file.c_str(), R_OK) == 0;
}

} // namespace

ssl_ctx_st* make_context(const std::string& ca, const std::string& cert,
                         const std::string& key, std::string& error) {
  // A member that refuses the handshake (a client certificate of another CA)
  // closes the socket under SSL_write: an error to handle, not a signal that
  // ends the process.
  std::signal(SIGPIPE, SIG_IGN);
  for (auto* f : {&ca, &cert, &key})
    if (!readable(*f)) {
      error = *f + ": " + std::strerror(errno);
      return nullptr;
    }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    error = ssl_error_text();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_security_level(ctx, 2);
  // The files are read when a handshake needs them, not here: a handshake
  // resumed with a saved ticket (tls_session_files.hpp) sends no certificate
  // and verifies none, and reading them (about 2 ms) would be its largest
  // cost.
  auto* files = new tls_files{ca, cert, key, {}, false};
  if (files_index() < 0 || SSL_CTX_set_ex_data(ctx, files_index(), files) != 1) {
    delete files;
    SSL_CTX_free(ctx);
    error = "cannot keep the TLS files with the context";
    return nullptr;
  }
  SSL_CTX_set_cert_cb(ctx, use_client_files, nullptr);
  // The members' certificates are the cluster CA's; like the CAF path, the
  // chain is what is verified (their names are node ids, not host names).
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_cert_verify_callback(ctx, verify_with_ca, files);
  return ctx;
}

exchange call(ssl_ctx_st* ctx, const std::string& host_port, const std::string& text,
              clock_type::time_point setup_deadline, clock_type::time_point deadline,
              void (*on_handshake)()) {
  exchange out;
  setup_deadline = std::min(setup_deadline, deadline);
  int fd = connect_to(host_port, setup_deadline, out.error);
  if (fd < 0)
    return out;
  stages().mark("connected");
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    out.error = host_port + ": " + ssl_error_text();
    if (ssl != nullptr)
      SSL_free(ssl);
    ::close(fd);
    return out;
  }
  // Offers the ticket saved for this address and keeps the one a full
  // handshake gets (node/tls_session_files.hpp).
  node::prepare_tls_dial(ssl);
  if (drive(ssl, fd, setup_deadline, [&] { return SSL_connect(ssl); }) <= 0) {
    out.error = host_port + ": TLS handshake: "
                + (clock_type::now() >= setup_deadline ? std::string{"no answer in time"}
                                                       : ssl_error_text());
  } else {
    if (on_handshake != nullptr)
      on_handshake();
    out.what = exchange::kind::unknown; // from the first byte written
    size_t sent = 0;
    bool ok = true;
    while (ok && sent < text.size()) {
      int n = drive(ssl, fd, deadline, [&] {
        return SSL_write(ssl, text.data() + sent, static_cast<int>(text.size() - sent));
      });
      ok = n > 0;
      sent += ok ? static_cast<size_t>(n) : 0;
    }
    std::string got;
    char buf[16384];
    while (ok) {
      int n = drive(ssl, fd, deadline,
                    [&] { return SSL_read(ssl, buf, static_cast<int>(sizeof buf)); });
      if (n <= 0)
        break;
      got.append(buf, static_cast<size_t>(n));
      auto st = parse_response(got, out.answer);
      if (st == parse_state::done) {
        out.what = exchange::kind::answered;
        break;
      }
      if (st == parse_state::bad) {
        out.error = host_port + ": not an HTTP answer";
        break;
      }
    }
    if (out.what != exchange::kind::answered && out.error.empty())
      out.error =
          host_port + ": "
          + (clock_type::now() >= deadline ? std::string{"no answer in time"}
                                           : "connection closed before the answer");
  }
  // No close_notify: the process ends next, and the kernel closes the socket.
  SSL_free(ssl);
  ::close(fd);
  return out;
}

std::string random_session_id() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    // Not expected; the time and pid still make a collision unlikely.
    auto t = clock_type::now().time_since_epoch().count();
    std::memcpy(bytes, &t, sizeof t);
    auto pid = static_cast<uint64_t>(::getpid());
    std::memcpy(bytes + 8, &pid, sizeof pid);
  }
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (auto b : bytes) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

} // namespace conclave::cli::kv_http
