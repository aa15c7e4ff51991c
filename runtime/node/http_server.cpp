// cpp-httplib stays in this one source: its header is not part of the node's
// unity build (runtime/node/CMakeLists.txt).
#include "runtime/node/http_server.hpp"
#include "runtime/node/listen_queue.hpp"

#include "protocols/workflow/store_layout.hpp"
#include "runtime/node/http_api.hpp"
#include "runtime/node/http_gate.hpp"
#include "runtime/node/http_routes.hpp"
#include "runtime/node/http_watch.hpp"
#include "runtime/node/http_workers.hpp"
#include "runtime/node/node_probe.hpp"
#include "runtime/node/socket_numbers.hpp"
#include "runtime/node/status_file.hpp"
#include "runtime/node/tls_error_queue.hpp"
#include "runtime/node/ui_assets.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/ssl.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <atomic>
#include <future>
#include <iostream>
#include <mutex>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

namespace conclave::node {

namespace {

/// One member's own view (GET /v1/cluster?scope=local), asked over the
/// member's HTTP address, checked with this node's CA: the answering member must
/// present a certificate of the cluster's CA (its name is not checked: the
/// certificates name members, not addresses).
member_view fetch_member_view(uint64_t id, const address& a,
                              const std::optional<node_config::tls_files>& tls,
                              std::chrono::milliseconds bound) {
  member_view out;
  out.from = id;
  std::unique_ptr<httplib::ClientImpl> cli;
  if (tls) {
    // Reads need no client certificate (and a member's own certificate is
    // not one a member's HTTP server takes from a client).
    auto c = std::make_unique<httplib::SSLClient>(a.host, a.port);
    c->enable_server_certificate_verification(false); // no host name check
    SSL_CTX* ctx = c->ssl_context();
    if (ctx == nullptr
        || SSL_CTX_load_verify_locations(ctx, tls->ca.c_str(), nullptr) != 1) {
      out.error = "cannot load the cluster's CA";
      return out;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr); // the chain is checked
    exempt_from_basp_checks(ctx);                      // HTTP, not BASP
    cli = std::move(c);
  } else {
    cli = std::make_unique<httplib::ClientImpl>(a.host, a.port);
  }
  auto half = std::chrono::duration_cast<std::chrono::microseconds>(bound) / 2;
  cli->set_connection_timeout(0, half.count());
  cli->set_read_timeout(0, half.count());
  cli->set_write_timeout(0, half.count());
  cli->set_keep_alive(false);
  auto r = cli->Get("/v1/cluster?scope=local");
  if (!r) {
    out.error = "no answer from " + a.to_string() + ": " + httplib::to_string(r.error());
    return out;
  }
  if (r->status != 200) {
    out.error = a.to_string() + " answered " + std::to_string(r->status);
    return out;
  }
  out.body = r->body;
  return out;
}

/// Every other member's view, asked in parallel; within about `bound`.
std::vector<member_view>
fetch_member_views(const std::map<uint64_t, address>& members,
                   const std::optional<node_config::tls_files>& tls,
                   std::chrono::milliseconds bound) {
  std::vector<std::future<member_view>> pending;
  for (auto& [id, a] : members)
    pending.push_back(
        std::async(std::launch::async, fetch_member_view, id, a, std::cref(tls), bound));
  std::vector<member_view> out;
  for (auto& f : pending)
    out.push_back(f.get());
  return out;
}

/// The library's task queue, served by the node's worker pool
/// (http_workers.hpp). The library's closure carries no socket: the accept
/// interposer (socket_numbers.hpp) tells which one its accept thread just
/// accepted.
class bounded_queue final : public httplib::TaskQueue {
public:
  bounded_queue(size_t workers, http_workers::hooks hooks)
      : pool_{workers, std::move(hooks)} {}

  void enqueue(std::function<void()> fn) override {
    pool_.enqueue(take_accepted_socket(), std::move(fn));
  }

  void shutdown() override { pool_.shutdown(); }

private:
  http_workers pool_;
};

void fill(httplib::Response& res, const http_response& r) {
  res.status = r.status;
  res.set_content(r.body, r.content_type.c_str());
}

/// TLS with the node's certificate; a client certificate is asked for and
/// verified against the node's CA when sent, not required (reads are open to
/// any client that completes the handshake; writes need one,
/// http_routes.hpp).
bool setup_tls(SSL_CTX& ctx, const node_config::tls_files& t) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(&ctx, t.cert.c_str()) != 1)
    return false;
  if (SSL_CTX_use_PrivateKey_file(&ctx, t.key.c_str(), SSL_FILETYPE_PEM) != 1)
    return false;
  if (SSL_CTX_load_verify_locations(&ctx, t.ca.c_str(), nullptr) != 1)
    return false;
  SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
  // With peer verification on, OpenSSL refuses to resume a session (an
  // "internal error" alert) unless the context names its sessions: browsers
  // resume on their second connection.
  static const unsigned char sid_ctx[] = "conclave-http";
  if (SSL_CTX_set_session_id_context(&ctx, sid_ctx, sizeof(sid_ctx) - 1) != 1)
    return false;
  return true;
}

class server final : public http_server {
public:
  server(const node_config& c, std::shared_ptr<status_writer> status,
         std::shared_ptr<node_probe> probe, prometheus::Registry& registry,
         const http_limits& limits, std::shared_ptr<http_backend_slot> backends)
      : status_{std::move(status)}, probe_{std::move(probe)}, limits_{limits},
        backends_{std::move(backends)}, ring_{wall_clock_us(), limits.watch_window,
                                              limits.max_watch_streams} {
    requests_ = &prometheus::BuildCounter()
                     .Name("conclave_http_requests_total")
                     .Help("HTTP requests answered by the node's API")
                     .Register(registry)
                     .Add({});
    rejected_ = &prometheus::BuildCounter()
                     .Name("conclave_http_rejected_requests_total")
                     .Help("HTTP requests answered with a 4xx or 503 status (malformed, "
                           "too large, unknown route, over the connection limit), by "
                           "status")
                     .Register(registry);
    auto& connections = prometheus::BuildCounter()
                            .Name("conclave_http_connections_closed_total")
                            .Help("HTTP connections the node closed unanswered: over the "
                                  "open-connection bounds (refused, before any TLS "
                                  "handshake), or without a complete request within the "
                                  "request deadline (timeout)")
                            .Register(registry);
    refused_ = &connections.Add({{"reason", "refused"}});
    timed_out_ = &connections.Add({{"reason", "timeout"}});
    http_gate_limits gl;
    gl.max_open = limits.max_connections;
    gl.max_open_per_source = limits.max_connections_per_source;
    gl.request_deadline = limits.request_deadline;
    gate_ = std::make_shared<http_gate>(gl, [this] { timed_out_->Increment(); });
    if (c.tls) {
      auto tls = *c.tls;
      srv_ = std::make_unique<httplib::SSLServer>(
          [tls](SSL_CTX& ctx) { return setup_tls(ctx, tls); });
    } else {
      srv_ = std::make_unique<httplib::Server>();
    }
    tls_ = c.tls.has_value();
    if (c.http)
      http_.emplace(c.id.value, c.http->to_string());
    for (auto& [id, a] : c.peers_http) {
      http_.emplace(id, a.to_string());
      if (id != c.id.value)
        peer_http_.emplace(id, a);
    }
    tls_files_ = c.tls;
    scheme_ = c.tls ? "https" : "http";
    configure();
  }

  bool valid() const { return srv_->is_valid(); }
  bool bind(const address& a) {
    if (!srv_->bind_to_port(a.host, a.port))
      return false;
    // The library listened with a queue of 5 (listen_queue.hpp).
    return widen_listen_queue(listen_fd_, http_listen_queue);
  }
  void start() {
    // Leadership and member changes reach the ring from whichever thread
    // changed the status (candidate, transport); publish never blocks.
    status_->set_listener(
        [this, prev = status_->snapshot()](const node_status& now) mutable {
          for (auto& [type, data] : status_events(prev, now, wall_clock_us()))
            ring_.publish(std::move(type), std::move(data));
          prev = now;
        });
    thread_ = std::thread{[this] { srv_->listen_after_bind(); }};
  }

  void stop() override {
    if (!thread_.joinable())
      return;
    status_->set_listener(nullptr);
    ring_.close(); // open streams end, their workers return
    srv_->stop();
    thread_.join();
  }

  std::shared_ptr<replication::commit_observer> commit_events(uint64_t node) override {
    auto o = std::make_shared<replication::commit_observer>();
    o->collections = {workflow::layout::jobs};
    // Until a stream was opened nobody holds a position in the ring that
    // these events could follow: skip the decoding (cheap when unwatched).
    o->notify = [this, node](replication::committed_changes&& c) {
      if (!ring_.ever_watched())
        return;
      for (auto& [type, data] : store_events(c, node, wall_clock_us()))
        ring_.publish(std::move(type), std::move(data));
    };
    return o;
  }

  /// The TLS context's sessions speak HTTP, not BASP (tls_error_queue.hpp).
  void exempt_tls() {
    if (auto* ssl = dynamic_cast<httplib::SSLServer*>(srv_.get()))
      exempt_from_basp_checks(ssl->ssl_context());
  }

  ~server() override { stop(); }

private:
  void configure() {
    auto& s = *srv_;
    s.new_task_queue = [this] {
      http_workers::hooks h{gate_, tls_, [this] { refused_->Increment(); }};
      return new bounded_queue(limits_.max_connections, std::move(h));
    };
    // The socket the library binds and listens on, as created: the last one
    // it was given to set options on (it tries an address's candidates in
    // order and stops at the first it binds).
    s.set_socket_options([this](socket_t fd) {
      httplib::default_socket_options(fd);
      listen_fd_ = fd;
    });
    s.set_payload_max_length(limits_.max_body_bytes);
    s.set_read_timeout(limits_.read_timeout);
    s.set_write_timeout(limits_.read_timeout);
    s.set_keep_alive_timeout(limits_.keep_alive_timeout.count());
    s.set_keep_alive_max_count(100);
    // A response goes out in a few writes (headers, body; a watch event's
    // chunk size, data, CRLF): with Nagle's algorithm each waited for the
    // client's delayed ACK (~40 ms).
    s.set_tcp_nodelay(true);
    // After an answer the connection waits for its next request: on the
    // gate's request deadline again.
    s.set_post_routing_handler([this](const httplib::Request&, httplib::Response&) {
      if (auto* t = http_workers::current_ticket())
        gate_->awaiting_request(*t);
    });
    s.set_pre_routing_handler(
        [this](const httplib::Request& req, httplib::Response& res) {
          requests_->Increment();
          size_t header_bytes = 0;
          for (auto& [k, v] : req.headers)
            header_bytes += k.size() + v.size() + 4;
          if (header_bytes > limits_.max_header_bytes) {
            reject(res, http_error(431, "request headers exceed "
                                            + std::to_string(limits_.max_header_bytes)
                                            + " bytes"));
            return httplib::Server::HandlerResponse::Handled;
          }
          return httplib::Server::HandlerResponse::Unhandled;
        });
    // Routed by method so that the library reads (and limits) a body before
    // the API sees the request; handle_http picks the route. A method the
    // library does not know is answered 400 by it.
    auto answer = [this](const httplib::Request& req, httplib::Response& res) {
      request_arrived();
      auto r = route_request(request_of(req), view(),
                             backends_ ? backends_->get() : http_backends{});
      // Reads are open: a status page loaded from another member may ask.
      res.set_header("Access-Control-Allow-Origin", "*");
      if (r.status >= 400 && r.status < 500)
        reject(res, r);
      else
        fill(res, r);
    };
    s.Get("/v1/watch", [this](const httplib::Request& req, httplib::Response& res) {
      watch(req, res);
    });
    s.Get(R"(/|/ui|/ui/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      request_arrived();
      auto* a = find_ui_asset(req.path);
      if (a == nullptr)
        return reject(res, http_error(404, "no page " + req.path));
      res.set_header("Cache-Control", "no-cache");
      res.set_content(reinterpret_cast<const char*>(a->data), a->size, a->content_type);
    });
    s.Get(".*", answer);
    s.Post(".*", answer);
    s.Put(".*", answer);
    s.Delete(".*", answer);
    s.Patch(".*", answer);
    s.Options(".*", answer);
    // Called for every answer of status 400 or more: those the library
    // makes itself (unparsable, too large) have no body yet.
    s.set_error_handler(httplib::Server::HandlerWithResponse{
        [this](const httplib::Request&, httplib::Response& res) {
          if (!res.body.empty())
            return httplib::Server::HandlerResponse::Unhandled;
          reject(res, http_error(res.status, reason_of(res.status)));
          return httplib::Server::HandlerResponse::Handled;
        }});
  }

  /// GET /v1/watch: server-sent events from the ring, resumed after
  /// Last-Event-ID (or ?last_event_id=) when the client sends one.
  void watch(const httplib::Request& req, httplib::Response& res) {
    request_arrived();
    res.set_header("Access-Control-Allow-Origin", "*");
    if (!ring_.try_open_stream()) {
      reject(res, http_error(503, "too many open watch streams (limit "
                                      + std::to_string(limits_.max_watch_streams) + ")"));
      return;
    }
    // A stream is bounded by the ring, not by the open-connection bounds,
    // and has no request deadline.
    if (auto* t = http_workers::current_ticket())
      gate_->detach(*t);
    if (auto* pool = http_workers::current())
      pool->leave_pool();
    auto id = req.get_header_value("Last-Event-ID");
    if (id.empty())
      id = req.get_param_value("last_event_id");
    std::optional<watch_position> from;
    if (!id.empty())
      from = parse_event_id(id).value_or(watch_position{0, 0}); // unknown: a gap
    auto pos = std::make_shared<watch_position>(
        from ? *from : watch_position{ring_.boot(), ring_.last_seq()});
    auto hello = std::make_shared<bool>(true);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, pos, hello](size_t, httplib::DataSink& sink) {
          std::string out;
          if (*hello) {
            *hello = false;
            nlohmann::json h{{"node", status_->snapshot().id},
                             {"window", ring_.capacity()},
                             {"last", event_id(ring_.boot(), ring_.last_seq())}};
            out = "retry: 1000\nevent: hello\ndata: " + h.dump() + "\n\n";
            return sink.write(out.data(), out.size());
          }
          auto b = ring_.wait(*pos, 256,
                              std::chrono::steady_clock::now() + limits_.watch_keepalive);
          if (b.closed) {
            sink.done();
            return false;
          }
          if (b.gap)
            out += "event: reset\ndata: {\"reason\":\"events since the client's "
                   "Last-Event-ID are no longer kept, or came from an earlier run "
                   "of this node\"}\n\n";
          for (auto& e : b.events)
            out += sse_frame(ring_.boot(), e);
          if (b.gap || !b.events.empty())
            *pos = {ring_.boot(),
                    b.events.empty() ? ring_.last_seq() : b.events.back().seq};
          if (out.empty())
            out = ": keepalive\n\n";
          return sink.write(out.data(), out.size());
        },
        [this](bool) { ring_.close_stream(); });
  }

  /// A complete request reached its handler: its connection is off the
  /// gate's deadline until the answer is out.
  void request_arrived() {
    if (auto* t = http_workers::current_ticket())
      gate_->request_read(*t);
  }

  void reject(httplib::Response& res, const http_response& r) {
    rejected_->Add({{"status", std::to_string(r.status)}}).Increment();
    fill(res, r);
  }

  static std::string reason_of(int status) {
    switch (status) {
    case 400:
      return "malformed request";
    case 413:
      return "request body exceeds the limit";
    case 414:
      return "request target too long";
    default:
      return "request refused (HTTP " + std::to_string(status) + ")";
    }
  }

  /// What the API sees of a request; over TLS, whether the client's
  /// certificate was verified against the node's CA (the handshake already
  /// refused one that does not verify).
  static http_request request_of(const httplib::Request& req) {
    http_request r;
    r.method = req.method;
    r.path = req.path;
    for (auto& [k, v] : req.params)
      r.query.emplace(k, v);
    r.body = req.body;
    if (req.ssl) {
      r.tls = true;
      auto* ssl = const_cast<SSL*>(req.ssl);
      if (X509* cert = SSL_get1_peer_certificate(ssl)) {
        r.client_verified = SSL_get_verify_result(ssl) == X509_V_OK;
        X509_free(cert);
      }
    }
    return r;
  }

  http_view view() const {
    http_view v;
    v.status = status_->snapshot();
    v.lags = probe_->replica_lags();
    v.leader_silence_seconds = probe_->leader_silence_seconds();
    v.now_us = wall_clock_us();
    v.http = http_;
    v.http_scheme = scheme_;
    v.peer_silence = probe_->peer_silence_seconds();
    if (!peer_http_.empty())
      v.fetch_views = [this] {
        return fetch_member_views(peer_http_, tls_files_, limits_.member_view_bound);
      };
    return v;
  }

  std::shared_ptr<status_writer> status_;
  std::shared_ptr<node_probe> probe_;
  http_limits limits_;
  std::shared_ptr<http_backend_slot> backends_;
  std::map<uint64_t, std::string> http_;
  std::map<uint64_t, address> peer_http_; ///< other members' HTTP addresses
  std::optional<node_config::tls_files> tls_files_;
  std::string scheme_;
  std::unique_ptr<httplib::Server> srv_;
  int listen_fd_ = -1;
  prometheus::Counter* requests_;
  prometheus::Family<prometheus::Counter>* rejected_;
  prometheus::Counter* refused_;
  prometheus::Counter* timed_out_;
  std::shared_ptr<http_gate> gate_;
  bool tls_ = false;
  watch_ring ring_;
  std::thread thread_;
};

} // namespace

std::unique_ptr<http_server> start_http(const node_config& c,
                                        std::shared_ptr<status_writer> status,
                                        std::shared_ptr<node_probe> probe,
                                        prometheus::Registry& registry, bool& failed,
                                        std::shared_ptr<http_backend_slot> backends,
                                        const http_limits& limits) {
  failed = false;
  if (!c.http)
    return nullptr;
  auto s = std::make_unique<server>(c, std::move(status), std::move(probe), registry,
                                    limits, std::move(backends));
  if (!s->valid()) {
    std::cerr << "conclave: error: --http: cannot load the TLS certificate, key or CA\n";
    failed = true;
    return nullptr;
  }
  if (!s->bind(*c.http)) {
    std::cerr << "conclave: error: --http: cannot listen on " << c.http->to_string()
              << ": port in use or not permitted\n";
    failed = true;
    return nullptr;
  }
  s->exempt_tls();
  s->start();
  return s;
}

} // namespace conclave::node
