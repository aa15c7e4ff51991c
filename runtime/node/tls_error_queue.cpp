#include "runtime/node/tls_error_queue.hpp"

#include <dlfcn.h>

// OpenSSL's types stay opaque here: only pointers pass through.
struct ssl_st;

namespace {

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
  return real(s);
}

int SSL_accept(ssl_st* s) {
  static auto real = next<hs_fn>("SSL_accept");
  clear_queue();
  return real(s);
}

} // extern "C"

namespace conclave::node {

bool tls_error_queue_fix_active() {
  return next<io_fn>("SSL_read") != nullptr
         && ::dlsym(RTLD_DEFAULT, "ERR_clear_error") != nullptr;
}

} // namespace conclave::node
