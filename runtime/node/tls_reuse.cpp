// See tls_reuse.hpp.
#include "runtime/node/tls_reuse.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <arpa/inet.h>
#include <cstdio>
#include <dlfcn.h>
#include <fcntl.h>
#include <map>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace conclave::node::tls_reuse_detail {

// -- parsed files -------------------------------------------------------------

/// What identifies one version of a file.
struct file_stamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;

  bool operator==(const file_stamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
  }
};

bool stamp_of(const char* path, file_stamp& out) {
  struct stat st {};
  if (::stat(path, &st) != 0)
    return false;
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.size = st.st_size;
  out.mtime_ns =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

enum class file_kind { chain, key, ca };

/// One parsed PEM file: a certificate chain (leaf first), a key, or the
/// certificates and CRLs of a CA file.
struct parsed_file {
  file_stamp stamp;
  std::vector<X509*> certs;
  std::vector<X509_CRL*> crls;
  EVP_PKEY* key = nullptr;

  parsed_file() = default;
  parsed_file(const parsed_file&) = delete;
  parsed_file& operator=(const parsed_file&) = delete;
  ~parsed_file() {
    for (auto* c : certs)
      X509_free(c);
    for (auto* c : crls)
      X509_CRL_free(c);
    EVP_PKEY_free(key);
  }
};

using parsed_ptr = std::shared_ptr<const parsed_file>;

std::mutex files_mtx;
std::map<std::pair<file_kind, std::string>, parsed_ptr> files;

int no_passphrase(char*, int, int, void*) {
  return -1;
}

/// Parses `path` as `kind`; nullptr if it does not parse.
std::shared_ptr<parsed_file> parse(file_kind kind, const char* path) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new_file(path, "r"), &BIO_free};
  if (!bio)
    return nullptr;
  auto out = std::make_shared<parsed_file>();
  switch (kind) {
  case file_kind::chain: {
    // As SSL_CTX_use_certificate_chain_file reads it: the leaf with its
    // trust settings, then any number of CA certificates.
    X509* leaf = PEM_read_bio_X509_AUX(bio.get(), nullptr, nullptr, nullptr);
    if (leaf == nullptr)
      return nullptr;
    out->certs.push_back(leaf);
    while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
      out->certs.push_back(c);
    auto last = ERR_peek_last_error();
    if (ERR_GET_LIB(last) != ERR_LIB_PEM || ERR_GET_REASON(last) != PEM_R_NO_START_LINE)
      return nullptr; // not the end of the file: something in it did not parse
    break;
  }
  case file_kind::key:
    // No passphrase: an encrypted key does not parse here (libssl's own
    // function then asks the context's callback, as without this cache).
    out->key = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr);
    if (out->key == nullptr)
      return nullptr;
    break;
  case file_kind::ca: {
    STACK_OF(X509_INFO)* infos =
        PEM_X509_INFO_read_bio(bio.get(), nullptr, nullptr, nullptr);
    if (infos == nullptr)
      return nullptr;
    for (int i = 0; i < sk_X509_INFO_num(infos); ++i) {
      X509_INFO* info = sk_X509_INFO_value(infos, i);
      if (info->x509 != nullptr && X509_up_ref(info->x509) == 1)
        out->certs.push_back(info->x509);
      if (info->crl != nullptr && X509_CRL_up_ref(info->crl) == 1)
        out->crls.push_back(info->crl);
    }
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    if (out->certs.empty() && out->crls.empty())
      return nullptr;
    break;
  }
  }
  return out;
}

/// The parsed contents of `path`, parsed now if it is new or changed;
/// nullptr if it cannot be read or parsed. Leaves OpenSSL's error queue as
/// it found it.
parsed_ptr parsed(file_kind kind, const char* path) {
  if (path == nullptr || *path == '\0')
    return nullptr;
  file_stamp stamp;
  if (!stamp_of(path, stamp))
    return nullptr;
  std::lock_guard<std::mutex> guard{files_mtx};
  auto& slot = files[{kind, std::string{path}}];
  if (slot && slot->stamp == stamp)
    return slot;
  ERR_set_mark();
  auto fresh = parse(kind, path);
  ERR_pop_to_mark();
  if (!fresh) {
    slot.reset();
    return nullptr;
  }
  // A file replaced while it was read gets parsed again next time.
  fresh->stamp = stamp;
  slot = std::move(fresh);
  return slot;
}

template <class F>
F real_fn(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// -- sessions -----------------------------------------------------------------

/// A session id context: the same for every accepting handshake of conclave.
const unsigned char session_context[] = "conclave";

std::once_flag ticket_keys_once;
unsigned char ticket_keys[80];
bool ticket_keys_made = false;

} // namespace conclave::node::tls_reuse_detail

namespace tr = conclave::node::tls_reuse_detail;

extern "C" {

int SSL_CTX_use_certificate_chain_file(SSL_CTX* ctx, const char* file) {
  static auto real =
      tr::real_fn<int (*)(SSL_CTX*, const char*)>("SSL_CTX_use_certificate_chain_file");
  auto p = tr::parsed(tr::file_kind::chain, file);
  if (p && SSL_CTX_use_certificate(ctx, p->certs.front()) == 1
      && SSL_CTX_clear_chain_certs(ctx) == 1) {
    bool ok = true;
    for (size_t i = 1; i < p->certs.size() && ok; ++i)
      ok = SSL_CTX_add1_chain_cert(ctx, p->certs[i]) == 1;
    if (ok)
      return 1;
  }
  return real(ctx, file);
}

int SSL_CTX_use_PrivateKey_file(SSL_CTX* ctx, const char* file, int type) {
  static auto real =
      tr::real_fn<int (*)(SSL_CTX*, const char*, int)>("SSL_CTX_use_PrivateKey_file");
  // An encrypted key needs the context's passphrase callback: libssl's own.
  if (type == SSL_FILETYPE_PEM && SSL_CTX_get_default_passwd_cb(ctx) == nullptr) {
    auto p = tr::parsed(tr::file_kind::key, file);
    if (p) {
      ERR_set_mark();
      int ok = SSL_CTX_use_PrivateKey(ctx, p->key);
      ERR_pop_to_mark();
      if (ok == 1)
        return 1;
    }
  }
  return real(ctx, file, type);
}

int SSL_CTX_load_verify_locations(SSL_CTX* ctx, const char* ca_file,
                                  const char* ca_path) {
  static auto real = tr::real_fn<int (*)(SSL_CTX*, const char*, const char*)>(
      "SSL_CTX_load_verify_locations");
  if (ca_path == nullptr && ca_file != nullptr) {
    auto p = tr::parsed(tr::file_kind::ca, ca_file);
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    if (p && store != nullptr) {
      bool ok = true;
      for (auto* c : p->certs)
        ok = ok && X509_STORE_add_cert(store, c) == 1;
      for (auto* c : p->crls)
        ok = ok && X509_STORE_add_crl(store, c) == 1;
      if (ok)
        return 1;
    }
  }
  return real(ctx, ca_file, ca_path);
}

} // extern "C"

namespace conclave::node {

void preload_tls_files(const std::string& cert, const std::string& key,
                       const std::string& ca) {
  tr::parsed(tr::file_kind::key, key.c_str());
  tr::parsed(tr::file_kind::chain, cert.c_str());
  tr::parsed(tr::file_kind::ca, ca.c_str());
}

void prepare_tls_accept(ssl_st* s) {
  std::call_once(tr::ticket_keys_once, [] {
    tr::ticket_keys_made = RAND_bytes(tr::ticket_keys, sizeof tr::ticket_keys) == 1;
  });
  if (!tr::ticket_keys_made)
    return; // each context's own random key: no resumption, nothing else lost
  SSL_CTX* ctx = SSL_get_SSL_CTX(s);
  SSL_CTX_set_tlsext_ticket_keys(ctx, tr::ticket_keys, sizeof tr::ticket_keys);
  SSL_CTX_set_timeout(ctx, 3600);
  SSL_set_session_id_context(s, tr::session_context, sizeof tr::session_context - 1);
  SSL_set_num_tickets(s, 1);
}

bool tls_file_cache_active() {
  return tr::real_fn<void*>("SSL_CTX_use_PrivateKey_file") != nullptr;
}

} // namespace conclave::node
