// GET /v1/watch on loopback: how soon a leadership change reaches a client,
// and what open streams cost a node.
//
// 1. A 3-node cluster (`cluster up --insecure`: plain HTTP, loopback). Each
//    round opens a stream on every follower, kills the leader with SIGKILL,
//    and reads each stream (a thread each) until a `leader` event
//    names a new leader. The figure is the time from the change (the event's
//    `at_us`, stamped by the node when its status changed) to the client
//    reading the event (same machine, same wall clock). Then the victim is
//    restarted.
// 2. A 1-node cluster: its resident memory and thread count idle, then with
//    N open streams (opened 32 at a time, each until its `hello`), and the
//    time of GET /livez while they are open.
//
//   watch_bench [--rounds 10] [--streams 1000] [--quick]
//
// Prints figures (medians); never asserts on time. Processes it starts are
// its clusters' nodes, stopped with `cluster down`.
#include "tests/bench/support/stats.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/process_tools.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::string run(const std::string& cmd) {
  return conclave::testing::run_command(cmd + " 2>/dev/null").out;
}

int64_t wall_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

long proc_field(int pid, const std::string& field) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0)
      return std::stol(line.substr(field.size()));
  return -1;
}

/// One raw HTTP/1.1 connection reading a server-sent event stream.
struct sse_conn {
  int fd = -1;
  std::string buf;
  size_t parsed = 0;

  sse_conn(const std::string& host_port, const std::string& path,
           const char* version = "HTTP/1.1") {
    fd = conclave::testing::tcp_connect(host_port);
    if (fd < 0)
      return;
    auto req = "GET " + path + " " + version + "\r\nHost: " + host_port + "\r\n\r\n";
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  }
  sse_conn(const sse_conn&) = delete;
  sse_conn& operator=(const sse_conn&) = delete;
  ~sse_conn() {
    if (fd >= 0)
      ::close(fd);
  }

  /// Reads until `want(event, data)` is true for a complete event or the
  /// deadline passes; the wall clock (µs) when the matching bytes were read,
  /// or 0.
  template <class Want>
  int64_t read_until(Want want, std::chrono::steady_clock::time_point deadline) {
    while (fd >= 0) {
      // Complete events already read.
      for (;;) {
        auto end = buf.find("\n\n", parsed);
        if (end == std::string::npos)
          break;
        std::string event, data;
        size_t at = parsed;
        while (at < end) {
          auto nl = buf.find('\n', at);
          auto line = buf.substr(at, std::min(nl, end) - at);
          if (line.rfind("event: ", 0) == 0)
            event = line.substr(7);
          else if (line.rfind("data: ", 0) == 0)
            data = line.substr(6);
          at = std::min(nl, end) + 1;
        }
        parsed = end + 2;
        if (!event.empty() && want(event, data))
          return last_read_us;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0)
        return 0;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0)
        return 0;
      char tmp[16384];
      auto n = ::recv(fd, tmp, sizeof(tmp), 0);
      if (n <= 0)
        return 0;
      last_read_us = wall_us();
      buf.append(tmp, static_cast<size_t>(n));
    }
    return 0;
  }
  int64_t last_read_us = 0;
};

json status_of(const std::string& bin, const std::string& d) {
  return json::parse(run(bin + " cluster status --json" + d), nullptr, false);
}

void bench_latency(const std::string& bin, int rounds) {
  auto dir =
      fs::temp_directory_path() / ("conclave-watch-bench-" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto d = " --dir " + dir.string();
  auto up = json::parse(run(bin + " cluster up --json --insecure --nodes 3" + d), nullptr,
                        false);
  if (up.is_discarded()) {
    std::cerr << "cluster up failed\n";
    return;
  }
  std::vector<double> ms;
  int missed = 0;
  for (int r = 0; r < rounds; ++r) {
    std::this_thread::sleep_for(1500ms); // settle: links back, heartbeats steady
    auto st = status_of(bin, d);
    if (st.is_discarded())
      continue;
    uint64_t leader = 0;
    int leader_pid = 0;
    std::vector<std::unique_ptr<sse_conn>> streams;
    for (auto& n : st["nodes"]) {
      leader = n.value("leader", uint64_t{0});
      if (n.value("is_leader", false))
        leader_pid = n.value("pid", 0);
      else if (n.value("alive", false) && n["http"].is_string())
        streams.push_back(
            std::make_unique<sse_conn>(n["http"].get<std::string>(), "/v1/watch"));
    }
    if (leader_pid <= 1) {
      std::cerr << "round " << r << ": no leader\n";
      continue;
    }
    auto soon = std::chrono::steady_clock::now() + 3s;
    for (auto& s : streams)
      s->read_until([](const std::string& e, const std::string&) { return e == "hello"; },
                    soon);
    // Each stream is read on its own thread from before the kill, so that
    // an event is stamped when it arrives.
    std::vector<double> got_ms(streams.size(), -1);
    std::vector<std::thread> readers;
    for (size_t i = 0; i < streams.size(); ++i)
      readers.emplace_back([&, i] {
        int64_t at_us = 0;
        auto got = streams[i]->read_until(
            [&](const std::string& e, const std::string& data) {
              if (e != "leader")
                return false;
              auto j = json::parse(data, nullptr, false);
              auto l = j.is_discarded() ? 0 : j.value("leader", uint64_t{0});
              if (l == 0 || l == leader)
                return false;
              at_us = j.value("at_us", int64_t{0});
              return true;
            },
            std::chrono::steady_clock::now() + 5s);
        if (got != 0 && at_us != 0)
          got_ms[i] = static_cast<double>(got - at_us) / 1000.0;
      });
    // The leader is a node of this bench's own cluster.
    ::kill(leader_pid, SIGKILL);
    for (auto& t : readers)
      t.join();
    for (auto v : got_ms)
      v < 0 ? ++missed : (ms.push_back(v), 0);
    streams.clear();
    run(bin + " cluster restart --node " + std::to_string(leader) + d);
  }
  run(bin + " cluster down" + d);
  fs::remove_all(dir);
  std::vector<double> sorted = ms;
  std::cout << std::fixed << std::setprecision(3)
            << "leadership change -> its event read from /v1/watch (3 nodes, " << rounds
            << " kill -9 rounds, " << ms.size() << " events from followers"
            << (missed ? ", " + std::to_string(missed) + " missed" : std::string{})
            << "): median " << conclave::bench::median(ms) << " ms, p90 "
            << conclave::bench::percentile(sorted, 0.9) << " ms, max "
            << (ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end())) << " ms\n";
}

/// One GET /livez over a new connection (HTTP/1.0: the server closes it);
/// milliseconds, or -1 if the answer was not a live node's.
double livez_ms(const std::string& http) {
  auto t0 = std::chrono::steady_clock::now();
  sse_conn c{http, "/livez", "HTTP/1.0"};
  // read_until returns at the end of the answer (the server closes).
  c.read_until([](const std::string&, const std::string&) { return false; },
               std::chrono::steady_clock::now() + 5s);
  auto t =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
          .count();
  return c.buf.find("\"live\":true") != std::string::npos ? t : -1;
}

void bench_memory(const std::string& bin, int count, bool after_close) {
  auto dir = fs::temp_directory_path()
             / ("conclave-watch-bench-mem-" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto d = " --dir " + dir.string();
  auto up = json::parse(run(bin + " cluster up --json --insecure --nodes 1" + d), nullptr,
                        false);
  auto st = status_of(bin, d);
  if (up.is_discarded() || st.is_discarded() || !st["nodes"][0]["http"].is_string()) {
    std::cerr << "cluster up failed\n";
    return;
  }
  int pid = st["nodes"][0]["pid"].get<int>();
  auto http = st["nodes"][0]["http"].get<std::string>();
  std::this_thread::sleep_for(2s);
  long rss0 = proc_field(pid, "VmRSS:"), threads0 = proc_field(pid, "Threads:");
  std::vector<std::unique_ptr<sse_conn>> streams;
  int open = 0, refused = 0;
  for (int i = 0; i < count; i += 32) {
    std::vector<std::unique_ptr<sse_conn>> batch;
    for (int j = i; j < std::min(count, i + 32); ++j)
      batch.push_back(std::make_unique<sse_conn>(http, "/v1/watch"));
    for (auto& s : batch) {
      auto ok = s->read_until(
          [](const std::string& e, const std::string&) { return e == "hello"; },
          std::chrono::steady_clock::now() + 5s);
      ok ? ++open : ++refused;
      streams.push_back(std::move(s));
    }
  }
  std::this_thread::sleep_for(1s);
  long rss1 = proc_field(pid, "VmRSS:"), threads1 = proc_field(pid, "Threads:");
  std::vector<double> livez;
  for (int i = 0; i < 20; ++i)
    livez.push_back(livez_ms(http));
  streams.clear();
  // The node notices a client gone when a write fails: within two
  // keepalives (5 s each).
  if (after_close)
    std::this_thread::sleep_for(11s);
  long rss2 = proc_field(pid, "VmRSS:"), threads2 = proc_field(pid, "Threads:");
  run(bin + " cluster down" + d);
  fs::remove_all(dir);
  std::cout << std::fixed << std::setprecision(1) << "one node, " << open
            << " open watch streams (" << refused << " not opened): RSS " << rss0 / 1024.0
            << " MiB idle, " << rss1 / 1024.0 << " MiB open ("
            << (open ? static_cast<double>(rss1 - rss0) / open : 0.0)
            << " KiB per stream)";
  if (after_close)
    std::cout << ", " << rss2 / 1024.0 << " MiB 11 s after closing them";
  std::cout << "; threads " << threads0 << " idle, " << threads1 << " open";
  if (after_close)
    std::cout << ", " << threads2 << " after closing";
  std::cout << "; GET /livez meanwhile: median " << std::setprecision(3)
            << conclave::bench::median(livez) << " ms\n";
}

} // namespace

int main(int argc, char** argv) {
  int rounds = 10, streams = 1000;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      rounds = 2;
      streams = 50;
      quick = true;
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::stoi(argv[++i]);
    } else if (a == "--streams" && i + 1 < argc) {
      streams = std::stoi(argv[++i]);
    } else {
      std::cerr << "conclave: error: watch_bench: unknown argument " << a
                << " (--rounds N, --streams N, --quick)\n";
      return 2;
    }
  }
  // Room for the streams' sockets here and, inherited, in the nodes.
  rlimit l{};
  if (::getrlimit(RLIMIT_NOFILE, &l) == 0) {
    l.rlim_cur = l.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &l);
  }
  std::string bin = CONCLAVE_BIN;
  bench_latency(bin, rounds);
  bench_memory(bin, streams, !quick);
  return 0;
}
