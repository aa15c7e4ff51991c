// Tools for tests and benchmarks that drive processes on loopback: run a shell
// command and capture its output, find a loopback port that was free a moment
// ago. No GoogleTest here, so benchmark programs can use it too.
#pragma once

#include <arpa/inet.h>
#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace conclave::testing {

struct command_result {
  int status = -1; ///< exit status, -1 if it did not exit normally
  std::string out;
};

/// Runs `cmd` through the shell and captures its standard output.
inline command_result run_command(const std::string& cmd) {
  command_result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p)
    return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    r.out.append(buf.data(), n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// A loopback port that was free a moment ago (callers must still handle a clash).
/// Resident set size of `pid` in KiB (VmRSS), 0 if unknown.
inline long rss_kib(int pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return 0;
}

inline uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

} // namespace conclave::testing
