// Tools for tests and benchmarks that drive processes on loopback: run a shell
// command and capture its output, find a loopback port that was free a moment
// ago. No GoogleTest here, so benchmark programs can use it too.
#pragma once

#include <arpa/inet.h>
#include <array>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "runtime/cluster/listen_ports.hpp"

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

/// Resident set size of `pid` in KiB (VmRSS), 0 if unknown.
inline long rss_kib(int pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return 0;
}

/// `n` child processes that spin on a core each (nice 0, like any other
/// load) until this object ends; killed and reaped by their pids.
class busy_cores {
public:
  explicit busy_cores(int n) {
    for (int i = 0; i < n; ++i) {
      pid_t pid = ::fork();
      if (pid == 0) {
        volatile uint64_t x = 0;
        for (;;)
          x = x + 1; // no allocation, no locks: safe after fork
      }
      if (pid > 0)
        pids_.push_back(pid);
    }
  }
  busy_cores(const busy_cores&) = delete;
  busy_cores& operator=(const busy_cores&) = delete;
  ~busy_cores() {
    for (auto pid : pids_)
      ::kill(pid, SIGKILL);
    for (auto pid : pids_)
      ::waitpid(pid, nullptr, 0);
  }
  size_t size() const { return pids_.size(); }

private:
  std::vector<pid_t> pids_;
};

/// A loopback port that was free a moment ago, outside the kernel's ephemeral
/// range so that no outgoing connection takes it while its owner restarts
/// (callers must still handle a clash).
inline uint16_t free_port() {
  auto ports = conclave::cluster::free_listen_ports(1);
  return ports.empty() ? 0 : ports.front();
}

} // namespace conclave::testing
