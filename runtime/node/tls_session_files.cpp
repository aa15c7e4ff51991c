// See tls_session_files.hpp.
#include "runtime/node/tls_session_files.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace conclave::node::tls_session_detail {

std::mutex sessions_mtx;
std::string sessions_dir;      ///< "" while session files are off
std::string sessions_identity; ///< hashed into every file name

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

/// The bytes of `file` appended to `out`; false if it cannot be read.
bool slurp(const std::string& file, std::string& out) {
  std::ifstream in{file, std::ios::binary};
  if (!in)
    return false;
  std::ostringstream text;
  text << in.rdbuf();
  out += text.str();
  return static_cast<bool>(in) || in.eof();
}

} // namespace conclave::node::tls_session_detail

namespace sf = conclave::node::tls_session_detail;

namespace conclave::node {

void enable_tls_session_files(const std::string& dir, const std::string& identity) {
  if (!dir.empty())
    ::mkdir(dir.c_str(), 0700); // its parent is the caller's business
  std::lock_guard<std::mutex> guard{sf::sessions_mtx};
  sf::sessions_dir = dir;
  sf::sessions_identity = identity;
}

std::string tls_session_file(const std::string& peer) {
  return sf::file_of_peer(peer);
}

void prepare_tls_dial(ssl_st* s) {
  if (sf::session_files_on())
    prepare_tls_dial_to(s, sf::peer_of(SSL_get_fd(s)));
}

void prepare_tls_dial_to(ssl_st* s, const std::string& peer) {
  auto file = sf::file_of_peer(peer);
  if (file.empty() || sf::path_index() < 0)
    return;
  // Prepared already (the HTTPS path prepares its dial itself, and in a
  // process that interposes SSL_connect the wrapper asks again).
  if (auto* known = static_cast<std::string*>(SSL_get_ex_data(s, sf::path_index()));
      known != nullptr && *known == file)
    return;
  delete static_cast<std::string*>(SSL_get_ex_data(s, sf::path_index()));
  auto* path = new std::string{file};
  if (SSL_set_ex_data(s, sf::path_index(), path) != 1) {
    delete path;
    return;
  }
  SSL_CTX* ctx = SSL_get_SSL_CTX(s);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT
                                          | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &sf::on_new_session);
  if (SSL_SESSION* saved = sf::read_session(file)) {
    SSL_set_session(s, saved);
    SSL_SESSION_free(saved);
  }
}

void keep_tls_sessions(const std::string& cache_dir, const std::string& tls_ca,
                       const std::string& tls_cert) {
  if (cache_dir.empty() || tls_ca.empty())
    return;
  std::string identity;
  if (!sf::slurp(tls_cert, identity))
    return;
  identity.push_back('\0');
  if (!sf::slurp(tls_ca, identity))
    return;
  std::error_code ec;
  std::filesystem::create_directories(cache_dir, ec);
  enable_tls_session_files(cache_dir, identity);
}

} // namespace conclave::node
