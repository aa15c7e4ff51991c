// One HTTP/1.0 exchange over a plain TCP socket, for tests and benchmarks
// that talk to the processes they started on loopback (metrics pages, a
// reference server's API). No GoogleTest here, so benchmark programs can use
// it too.
//
// Bounded: the socket's send and receive timeouts are `timeout`, and the
// answer is read until the server closes (HTTP/1.0). Any failure gives "".
#pragma once

#include <arpa/inet.h>
#include <chrono>
#include <cstdint>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace conclave::testing {

/// A TCP connection to `host_port` ("A.B.C.D:PORT"), from the local address
/// `from` when given (a loopback address such as 127.0.0.2 stands for
/// another host), with send and receive timeouts of `timeout` (none: 0);
/// -1 if it fails.
inline int tcp_connect(const std::string& host_port, const char* from = nullptr,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds{0}) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos)
    return -1;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  if (timeout.count() > 0) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  if (from != nullptr) {
    sockaddr_in src{};
    src.sin_family = AF_INET;
    if (::inet_pton(AF_INET, from, &src.sin_addr) != 1
        || ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1))));
  if (::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &sa.sin_addr) != 1
      || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends `request` (the whole HTTP/1.0 request, headers and body) to
/// `host:port` (a numeric IPv4 address) and returns the response body, or ""
/// if the exchange failed.
inline std::string http_exchange(const std::string& host, uint16_t port,
                                 const std::string& request,
                                 std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return "";
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  std::string response;
  if (::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) == 1
      && ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0
      && ::send(fd, request.data(), request.size(), MSG_NOSIGNAL)
             == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0)
      response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  auto body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

} // namespace conclave::testing
