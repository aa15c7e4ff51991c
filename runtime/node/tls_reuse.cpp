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

std::mutex sessions_mtx;
std::string sessions_dir;      ///< "" while session files are off
std::string sessions_identity; ///< hashed into every file name

/// A session id context: the same for every accepting handshake of conclave.
const unsigned char session_context[] = "conclave";

std::once_flag ticket_keys_once;
unsigned char ticket_keys[80];
bool ticket_keys_made = false;

/// HOST:PORT of the peer of `fd`; "" if unknown.
std::string peer_of(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return {};
  char host[INET6_ADDRSTRLEN] = {};
  unsigned port = 0;
  if (sa.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&sa);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&sa);
    ::inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
  } else {
    return {};
  }
  return std::string{host} + ":" + std::to_string(port);
}

bool session_files_on() {
  std::lock_guard<std::mutex> guard{sessions_mtx};
  return !sessions_dir.empty();
}

std::string file_of_peer(const std::string& peer) {
  std::string dir, identity;
  {
    std::lock_guard<std::mutex> guard{sessions_mtx};
    dir = sessions_dir;
    identity = sessions_identity;
  }
  if (dir.empty() || peer.empty())
    return {};
  // SHA-256 over identity and peer: a file name that reveals neither.
  std::string input = identity;
  input.push_back('\0');
  input += peer;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &n, EVP_sha256(), nullptr) != 1)
    return {};
  std::string name = "tls-session-";
  char hex[3];
  for (unsigned i = 0; i < 16 && i < n; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", digest[i]);
    name += hex;
  }
  return dir + "/" + name;
}

/// Replaces `file` with `bytes` (a temporary file of mode 0600, then rename).
void write_private_file(const std::string& file,
                        const std::vector<unsigned char>& bytes) {
  auto tmp = file + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  size_t done = 0;
  while (done < bytes.size()) {
    auto w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w <= 0)
      break;
    done += static_cast<size_t>(w);
  }
  bool ok = done == bytes.size();
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0)
    ::unlink(tmp.c_str());
}

void free_path(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(ptr);
}

/// The index of a dialing SSL's session file in its ex_data.
int path_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_path);
  return index;
}

/// OpenSSL's new-session callback of a dialing context: a ticket arrived.
int on_new_session(SSL* s, SSL_SESSION* session) {
  // A resumed session's ticket is still in its file; only full handshakes
  // write one (so at most one file write per full handshake).
  if (SSL_session_reused(s) != 0 || SSL_SESSION_is_resumable(session) != 1)
    return 0;
  auto* path = path_index() < 0
                   ? nullptr
                   : static_cast<std::string*>(SSL_get_ex_data(s, path_index()));
  if (path == nullptr)
    return 0;
  const auto& file = *path;
  int len = i2d_SSL_SESSION(session, nullptr);
  if (len <= 0)
    return 0;
  std::vector<unsigned char> bytes(static_cast<size_t>(len));
  unsigned char* p = bytes.data();
  if (i2d_SSL_SESSION(session, &p) != len)
    return 0;
  write_private_file(file, bytes);
  return 0; // no reference kept
}

/// The session saved in `file`; nullptr if none or garbled.
SSL_SESSION* read_session(const std::string& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return nullptr;
  std::vector<unsigned char> bytes(16384);
  size_t got = 0;
  for (;;) {
    auto r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r <= 0)
      break;
    got += static_cast<size_t>(r);
    if (got == bytes.size())
      break; // larger than any ticket: garbled
  }
  ::close(fd);
  if (got == 0 || got == bytes.size())
    return nullptr;
  const unsigned char* p = bytes.data();
  ERR_set_mark();
  SSL_SESSION* s = d2i_SSL_SESSION(nullptr, &p, static_cast<long>(got));
  ERR_pop_to_mark();
  if (s != nullptr && SSL_SESSION_is_resumable(s) != 1) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

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

void enable_tls_session_files(const std::string& dir, const std::string& identity) {
  if (!dir.empty())
    ::mkdir(dir.c_str(), 0700); // its parent is the caller's business
  std::lock_guard<std::mutex> guard{tr::sessions_mtx};
  tr::sessions_dir = dir;
  tr::sessions_identity = identity;
}

std::string tls_session_file(const std::string& peer) {
  return tr::file_of_peer(peer);
}

void prepare_tls_dial(ssl_st* s) {
  if (tr::session_files_on())
    prepare_tls_dial_to(s, tr::peer_of(SSL_get_fd(s)));
}

void prepare_tls_dial_to(ssl_st* s, const std::string& peer) {
  auto file = tr::file_of_peer(peer);
  if (file.empty() || tr::path_index() < 0)
    return;
  delete static_cast<std::string*>(SSL_get_ex_data(s, tr::path_index()));
  auto* path = new std::string{file};
  if (SSL_set_ex_data(s, tr::path_index(), path) != 1) {
    delete path;
    return;
  }
  SSL_CTX* ctx = SSL_get_SSL_CTX(s);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT
                                          | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &tr::on_new_session);
  if (SSL_SESSION* saved = tr::read_session(file)) {
    SSL_set_session(s, saved);
    SSL_SESSION_free(saved);
  }
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
