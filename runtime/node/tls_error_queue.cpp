#include "runtime/node/tls_error_queue.hpp"

#include <openssl/ssl.h>

#include <atomic>
#include <dlfcn.h>
#include <poll.h>

namespace {

std::atomic<bool> pace_dials{false};
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
  return real(s, buf, num);
}

int SSL_write(ssl_st* s, const void* buf, int num) {
  static auto real = next<wr_fn>("SSL_write");
  clear_queue();
  return real(s, buf, num);
}

int SSL_connect(ssl_st* s) {
  static auto real = next<hs_fn>("SSL_connect");
  clear_queue();
  auto ret = real(s);
  count_failure(s, ret, refused_dialing);
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
  auto ret = real(s);
  count_failure(s, ret, refused_accepting);
  return ret;
}

} // extern "C"

namespace conclave::node {

void pace_pending_tls_dials(bool on) {
  pace_dials.store(on, std::memory_order_relaxed);
}

uint64_t tls_handshakes_refused(tls_side side) {
  return (side == tls_side::accepting ? refused_accepting : refused_dialing)
      .load(std::memory_order_relaxed);
}

bool tls_error_queue_fix_active() {
  return next<io_fn>("SSL_read") != nullptr
         && ::dlsym(RTLD_DEFAULT, "ERR_clear_error") != nullptr;
}

} // namespace conclave::node
