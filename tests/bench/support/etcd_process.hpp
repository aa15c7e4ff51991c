// Benchmarks against etcd (Debian's etcd-server, installed only by the bench
// scripts): start members on loopback as child processes, stop them by pid,
// and talk to etcd's JSON gateway over a keep-alive HTTP/1.1 connection
// (throughput runs; failover_bench keeps its own one-shot status poll).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace conclave::bench {

/// Starts `args[0]` with `args`, stdout and stderr appended to `log`.
/// Returns the child's pid (-1 if fork failed).
inline pid_t spawn_logged(std::vector<std::string> args, const std::string& log) {
  auto pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

/// Sends `sig` to the child `pid` and reaps it; SIGKILL if it has not exited
/// after `grace`.
inline void stop_child(pid_t pid, int sig = SIGTERM,
                       std::chrono::milliseconds grace = std::chrono::seconds(10)) {
  if (pid <= 0)
    return;
  ::kill(pid, sig);
  auto until = std::chrono::steady_clock::now() + grace;
  while (::waitpid(pid, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return;
    }
    ::usleep(10000);
  }
}

inline std::string base64(std::string_view in) {
  static constexpr char table[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8
                 | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6)
      out += table[(n >> k) & 63];
  }
  if (i < in.size()) {
    uint32_t n = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size())
      n |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += i + 1 < in.size() ? table[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

/// An HTTP/1.1 keep-alive connection to 127.0.0.1:port for POSTs of JSON.
class http_connection {
public:
  explicit http_connection(uint16_t port,
                           std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  }
  ~http_connection() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;

  bool ok() const { return ok_; }

  /// POSTs `body`; returns the status code (0 on a broken connection) and
  /// stores the response body in `response`.
  int post(const std::string& path, const std::string& body, std::string& response) {
    return request("POST", path, body, response);
  }

  /// GETs `path` (e.g. /metrics); same contract as post().
  int get(const std::string& path, std::string& response) {
    return request("GET", path, "", response);
  }

  int request(const std::string& method, const std::string& path, const std::string& body,
              std::string& response) {
    if (!ok_)
      return 0;
    std::string req = method + " " + path
                      + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                        "\r\nContent-Length: "
                      + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL)
        != static_cast<ssize_t>(req.size()))
      return broken();
    // Headers.
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill())
        return broken();
    auto headers = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    int status = 0;
    if (headers.size() > 12)
      status = std::atoi(headers.c_str() + 9);
    auto lower = headers;
    for (auto& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    response.clear();
    if (auto cl = lower.find("content-length:"); cl != std::string::npos) {
      auto n = static_cast<size_t>(std::stoul(lower.substr(cl + 15)));
      while (buf_.size() < n)
        if (!fill())
          return broken();
      response = buf_.substr(0, n);
      buf_.erase(0, n);
    } else if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      for (;;) {
        size_t eol;
        while ((eol = buf_.find("\r\n")) == std::string::npos)
          if (!fill())
            return broken();
        auto n = static_cast<size_t>(std::stoul(buf_.substr(0, eol), nullptr, 16));
        while (buf_.size() < eol + 2 + n + 2)
          if (!fill())
            return broken();
        response.append(buf_, eol + 2, n);
        buf_.erase(0, eol + 2 + n + 2);
        if (n == 0)
          break;
      }
    } else {
      return broken(); // no framing we can keep alive with
    }
    return status;
  }

private:
  bool fill() {
    char tmp[4096];
    auto n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0)
      return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int broken() {
    ok_ = false;
    return 0;
  }

  int fd_ = -1;
  bool ok_ = false;
  std::string buf_;
};

/// Sum of the samples of a Prometheus metric (all label sets) in `text`,
/// e.g. "etcd_disk_wal_fsync_duration_seconds_count"; 0 if absent.
inline double prometheus_value(const std::string& text, const std::string& name) {
  double sum = 0;
  size_t at = 0;
  while ((at = text.find(name, at)) != std::string::npos) {
    auto line_start = at == 0 || text[at - 1] == '\n';
    auto after = at + name.size();
    at = after;
    if (!line_start || after >= text.size() || (text[after] != ' ' && text[after] != '{'))
      continue;
    auto eol = text.find('\n', after);
    auto line =
        text.substr(after, eol == std::string::npos ? std::string::npos : eol - after);
    auto sp = line.rfind(' ');
    if (sp != std::string::npos)
      sum += std::atof(line.c_str() + sp + 1);
  }
  return sum;
}

/// Starts one etcd member (default timing) with its data in `dir` and its
/// log in `dir`.log, clients on 127.0.0.1:client. Returns the pid.
inline pid_t start_single_etcd(const std::string& bin, const std::string& dir,
                               uint16_t client, uint16_t peer) {
  auto c = "http://127.0.0.1:" + std::to_string(client);
  auto p = "http://127.0.0.1:" + std::to_string(peer);
  return spawn_logged({bin, "--name=bench", "--data-dir=" + dir,
                       "--listen-client-urls=" + c, "--advertise-client-urls=" + c,
                       "--listen-peer-urls=" + p, "--initial-advertise-peer-urls=" + p,
                       "--initial-cluster=bench=" + p, "--initial-cluster-state=new",
                       "--log-level=error"},
                      dir + ".log");
}

} // namespace conclave::bench
