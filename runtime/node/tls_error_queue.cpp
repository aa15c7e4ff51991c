#include "runtime/node/tls_error_queue.hpp"

#include "runtime/node/basp_source_guard.hpp"
#include "runtime/node/handshake_guard.hpp"
#include "runtime/node/tls_reuse.hpp"
#include "runtime/node/write_parking.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unordered_map>

namespace {

using conclave::node::basp_source_guard;

std::atomic<bool> pace_dials{false};
std::atomic<int64_t> abandon_after_ns{0};
std::atomic<uint64_t> dials_abandoned{0};
std::mutex dials_mtx;
/// A pending dialing handshake (abandon_after_ns): when it took its first
/// step, and its socket (descriptor and inode, see handshake_guard.hpp).
struct pending_dial {
  std::chrono::steady_clock::time_point since;
  int fd;
  uint64_t inode;
};
std::unordered_map<const ssl_st*, pending_dial> dial_started;
bool dial_sweeper_started = false;

/// Shuts down the sockets of dials past their time (the lock is held). A
/// parked dial (write_parking.hpp) is not stepped again until its peer
/// answers, so its own next step cannot be relied on to notice.
void sweep_dials(std::chrono::steady_clock::time_point now,
                 std::chrono::nanoseconds limit) {
  for (auto it = dial_started.begin(); it != dial_started.end();) {
    if (now - it->second.since <= limit) {
      ++it;
      continue;
    }
    if (conclave::node::socket_inode(it->second.fd) == it->second.inode) {
      ::shutdown(it->second.fd, SHUT_RDWR);
      dials_abandoned.fetch_add(1, std::memory_order_relaxed);
    }
    it = dial_started.erase(it);
  }
}

void start_dial_sweeper() {
  if (dial_sweeper_started)
    return;
  dial_sweeper_started = true;
  std::thread{[] {
    for (;;) {
      auto limit =
          std::chrono::nanoseconds{abandon_after_ns.load(std::memory_order_relaxed)};
      {
        std::lock_guard<std::mutex> guard{dials_mtx};
        if (limit.count() > 0)
          sweep_dials(std::chrono::steady_clock::now(), limit);
      }
      // Four sweeps per limit, within 5..100 ms (100 ms while turned off).
      auto period = limit.count() > 0 ? limit / 4 : std::chrono::nanoseconds::max();
      std::this_thread::sleep_for(std::clamp<std::chrono::nanoseconds>(
          period, std::chrono::milliseconds{5}, std::chrono::milliseconds{100}));
    }
  }}.detach();
}

/// True if `s`, a dialing handshake still under way, is past its time: then
/// forgotten here, and the caller shuts its socket down.
bool dial_overdue(const ssl_st* s) {
  auto limit = abandon_after_ns.load(std::memory_order_relaxed);
  if (limit <= 0)
    return false;
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> guard{dials_mtx};
  start_dial_sweeper();
  auto fd = SSL_get_fd(s);
  auto [it, fresh] =
      dial_started.emplace(s, pending_dial{now, fd, conclave::node::socket_inode(fd)});
  if (fresh || now - it->second.since <= std::chrono::nanoseconds{limit})
    return false;
  dial_started.erase(it);
  return true;
}

void dial_ended(const ssl_st* s) {
  if (abandon_after_ns.load(std::memory_order_relaxed) <= 0)
    return;
  std::lock_guard<std::mutex> guard{dials_mtx};
  dial_started.erase(s);
}
std::atomic<uint64_t> refused_accepting{0};
std::atomic<uint64_t> refused_dialing{0};

/// Counts a handshake step that failed for good (not one that waits for bytes).
void count_failure(ssl_st* s, int ret, std::atomic<uint64_t>& counter) {
  if (ret == 1)
    return;
  // SSL_get_error only peeks at the error queue: CAF's own call still sees it.
  auto e = SSL_get_error(s, ret);
  if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
    counter.fetch_add(1, std::memory_order_relaxed);
}

using io_fn = int (*)(ssl_st*, void*, int);
using wr_fn = int (*)(ssl_st*, const void*, int);
using hs_fn = int (*)(ssl_st*);
using clear_fn = void (*)();

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// The BASP stream of every TLS session, as SSL_read hands it to CAF
// (basp_source_guard.hpp), and which certificate declared which node.
struct session_entry {
  basp_source_guard guard;
  std::string certificate; ///< subject CN of the peer's certificate ("" if none)
  bool registered = false; ///< its node is in `nodes` below
  bool closed = false;     ///< refused: every later read fails too
};

struct node_entry {
  std::string certificate;
  size_t sessions = 0;
};

/// The ex-data slot that marks a context whose sessions are not CAF's
/// (exempt_from_basp_checks).
int exempt_index() {
  static const int index =
      SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

bool exempt(const ssl_st* s) {
  auto* ctx = SSL_get_SSL_CTX(s);
  return ctx != nullptr && SSL_CTX_get_ex_data(ctx, exempt_index()) != nullptr;
}

std::mutex sessions_mtx;
std::unordered_map<const ssl_st*, session_entry> sessions;
std::map<std::string, node_entry> nodes; ///< node id bytes -> certificate
std::string local_node;                  ///< this node's id bytes, once set
std::array<std::atomic<uint64_t>, conclave::node::tls_frame_refusals.size()>
    refused_frames{};

std::string subject_cn(ssl_st* s) {
  X509* cert = SSL_get_peer_certificate(s);
  if (cert == nullptr)
    return {};
  std::string cn;
  auto* name = X509_get_subject_name(cert);
  int at = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (at >= 0) {
    auto* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
    cn.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
              static_cast<size_t>(ASN1_STRING_length(data)));
  }
  X509_free(cert);
  return cn;
}

void count_refusal(std::string_view reason) {
  auto& names = conclave::node::tls_frame_refusals;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == reason)
      refused_frames[i].fetch_add(1, std::memory_order_relaxed);
}

/// Checks what SSL_read returned for `s`; false if the connection must close.
bool guard_read(ssl_st* s, const void* buf, int n) {
  std::lock_guard<std::mutex> guard{sessions_mtx};
  auto i = sessions.find(s);
  if (i == sessions.end()) {
    i = sessions.emplace(s, session_entry{basp_source_guard{local_node}, subject_cn(s)})
            .first;
  }
  auto& e = i->second;
  if (e.closed)
    return false;
  auto r = e.guard.feed(static_cast<const char*>(buf), static_cast<size_t>(n));
  if (r != basp_source_guard::refusal::none) {
    count_refusal(conclave::node::to_string(r));
    e.closed = true;
    return false;
  }
  if (!e.registered && !e.guard.peer_node().empty()) {
    auto& entry = nodes[e.guard.peer_node()];
    if (entry.sessions > 0 && entry.certificate != e.certificate) {
      // A node another certificate's session speaks for: not this one's.
      count_refusal("claimed_node");
      e.closed = true;
      return false;
    }
    entry.certificate = e.certificate;
    ++entry.sessions;
    e.registered = true;
  }
  return true;
}

void forget_session(const ssl_st* s) {
  std::lock_guard<std::mutex> guard{sessions_mtx};
  auto i = sessions.find(s);
  if (i == sessions.end())
    return;
  if (i->second.registered) {
    auto n = nodes.find(i->second.guard.peer_node());
    if (n != nodes.end() && --n->second.sessions == 0)
      nodes.erase(n);
  }
  sessions.erase(i);
}

/// A handshake step of a CAF session returned `ret`: while it waits for the
/// peer's bytes its socket's write interest is parked (write_parking.hpp);
/// once it finished, failed or wants to write, it is given back.
void park_while_waiting(ssl_st* s, int ret) {
  auto fd = SSL_get_fd(s);
  if (ret != 1 && SSL_get_error(s, ret) == SSL_ERROR_WANT_READ)
    conclave::node::park_tls_writes(fd);
  else
    conclave::node::unpark_tls_writes(fd);
}

void clear_queue() {
  static auto clear =
      reinterpret_cast<clear_fn>(::dlsym(RTLD_DEFAULT, "ERR_clear_error"));
  if (clear != nullptr)
    clear();
}

} // namespace

extern "C" {

int SSL_read(ssl_st* s, void* buf, int num) {
  static auto real = next<io_fn>("SSL_read");
  clear_queue();
  auto ret = real(s, buf, num);
  if (ret > 0 && !exempt(s) && !guard_read(s, buf, ret)) {
    // Refused (basp_source_guard.hpp): an error in the queue makes
    // SSL_get_error report SSL_ERROR_SSL, and CAF closes the connection
    // without reading these bytes.
    ERR_raise(ERR_LIB_SSL, SSL_R_UNEXPECTED_MESSAGE);
    return -1;
  }
  return ret;
}

void SSL_free(ssl_st* s) {
  static auto real = next<void (*)(ssl_st*)>("SSL_free");
  if (s != nullptr) {
    forget_session(s);
    dial_ended(s);
  }
  real(s);
}

int SSL_write(ssl_st* s, const void* buf, int num) {
  static auto real = next<wr_fn>("SSL_write");
  clear_queue();
  return real(s, buf, num);
}

int SSL_connect(ssl_st* s) {
  static auto real = next<hs_fn>("SSL_connect");
  clear_queue();
  // The first step: offer a saved session ticket (tls_reuse.hpp).
  if (SSL_in_before(s) != 0)
    conclave::node::prepare_tls_dial(s);
  if (dial_overdue(s)) {
    // Given up by CAF already (abandon_tls_dials_after): end it here.
    dials_abandoned.fetch_add(1, std::memory_order_relaxed);
    ::shutdown(SSL_get_fd(s), SHUT_RDWR);
  }
  auto ret = real(s);
  count_failure(s, ret, refused_dialing);
  if (ret == 1)
    dial_ended(s);
  park_while_waiting(s, ret);
  // Waiting for the peer's handshake reply: wait for it here, briefly, rather
  // than be called again at once (see pace_pending_tls_dials).
  if (ret != 1 && pace_dials.load(std::memory_order_relaxed)
      && SSL_get_error(s, ret) == SSL_ERROR_WANT_READ) {
    pollfd p{SSL_get_fd(s), POLLIN, 0};
    if (p.fd >= 0)
      ::poll(&p, 1, 1);
  }
  return ret;
}

int SSL_accept(ssl_st* s) {
  static auto real = next<hs_fn>("SSL_accept");
  clear_queue();
  // The HTTPS API's sessions are not CAF's: its server bounds its own
  // connections and read times, and its failures are not counted here.
  if (exempt(s))
    return real(s);
  // Unfinished handshakes are budgeted (handshake_guard.hpp): one over the
  // budget finds its socket shut down, so this step fails and CAF closes it.
  auto fd = SSL_get_fd(s);
  conclave::node::handshake_guard_step(fd);
  // The first step: accept this process's session tickets (tls_reuse.hpp).
  if (SSL_in_before(s) != 0)
    conclave::node::prepare_tls_accept(s);
  auto ret = real(s);
  count_failure(s, ret, refused_accepting);
  park_while_waiting(s, ret);
  if (ret == 1) {
    conclave::node::handshake_guard_ended(fd);
  } else {
    auto e = SSL_get_error(s, ret);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
      conclave::node::handshake_guard_ended(fd);
  }
  return ret;
}

} // extern "C"

namespace conclave::node {

void pace_pending_tls_dials(bool on) {
  pace_dials.store(on, std::memory_order_relaxed);
}

void abandon_tls_dials_after(std::chrono::nanoseconds after) {
  abandon_after_ns.store(after.count(), std::memory_order_relaxed);
}

uint64_t tls_dials_abandoned() {
  return dials_abandoned.load(std::memory_order_relaxed);
}

uint64_t tls_handshakes_refused(tls_side side) {
  return (side == tls_side::accepting ? refused_accepting : refused_dialing)
      .load(std::memory_order_relaxed);
}

void set_local_basp_node(std::string node_id) {
  std::lock_guard<std::mutex> guard{sessions_mtx};
  local_node = std::move(node_id);
}

std::optional<std::string> tls_certificate_of_node(const std::string& node_id) {
  std::lock_guard<std::mutex> guard{sessions_mtx};
  auto i = nodes.find(node_id);
  if (i == nodes.end())
    return std::nullopt;
  return i->second.certificate;
}

void exempt_from_basp_checks(ssl_ctx_st* ctx) {
  static char mark = 1;
  if (ctx != nullptr)
    SSL_CTX_set_ex_data(ctx, exempt_index(), &mark);
}

uint64_t tls_frames_refused(std::string_view reason) {
  for (size_t i = 0; i < tls_frame_refusals.size(); ++i)
    if (tls_frame_refusals[i] == reason)
      return refused_frames[i].load(std::memory_order_relaxed);
  return 0;
}

bool tls_error_queue_fix_active() {
  return next<io_fn>("SSL_read") != nullptr
         && ::dlsym(RTLD_DEFAULT, "ERR_clear_error") != nullptr;
}

} // namespace conclave::node
