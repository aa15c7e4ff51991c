// Strong puts to a 3-node TLS cluster on loopback three ways, side by side in
// one run: through the node's HTTP API (PUT /v1/kv/KEY, C keep-alive HTTPS
// clients with the client certificate, against the leader's --http; run by
// the http_load program), through
// the C++ client library (C threads, each with its own kv_client over one
// connection to every member: what `conclave kv` runs in its process), and
// as `conclave kv put` processes (C workers, each starting one process after
// the other: the one-shot CLI a script uses).
//
// Each case runs C clients in a closed loop for S seconds, a new key per put
// with a 256-byte value; R rounds, the order of the cases rotating by round.
// Per case it prints puts/s and the p50 and p99 latency of each round, then
// the medians over the rounds. Nothing about speed is asserted: the exit
// status is 1 only if something did not work (the cluster did not come up, no
// put succeeded).
//
//   http_bench [--conclave BIN] [--clients C] [--seconds S] [--rounds R]
//              [--quick]
#include "actors/replication/client.hpp"
#include "actors/replication/type_ids.hpp"
#include "runtime/cluster/store_access.hpp"
#include "tests/bench/http/closed_loop.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/process_tools.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace rp = conclave::replication;
using conclave::bench::closed_loop;
using conclave::bench::result;
using json = nlohmann::json;

struct options {
  std::string bin = CONCLAVE_BIN;
  unsigned clients = 32;
  double seconds = 3;
  unsigned rounds = 3;
};

const std::string value(256, 'v');

/// The first failed HTTP put of the run, printed with the figures.
std::mutex first_failure_mu;
std::string first_failure;

std::string key_of(const char* kind, unsigned round, unsigned client, uint64_t i) {
  return std::string{"bench/"} + kind + "/" + std::to_string(round) + "/"
         + std::to_string(client) + "/" + std::to_string(i);
}

/// The HTTP case in an http_load process (see there why not in this one).
result run_http(const options& o, const fs::path& tls, const std::string& addr,
                unsigned round) {
  std::ostringstream cmd;
  cmd << HTTP_LOAD_BIN << " --addr " << addr << " --tls " << tls.string() << " --clients "
      << o.clients << " --seconds " << o.seconds << " --prefix bench/http/" << round;
  auto out = conclave::testing::run_command(cmd.str());
  auto j = json::parse(out.out, nullptr, false);
  result r;
  if (out.status != 0 || j.is_discarded()) {
    std::lock_guard<std::mutex> lk{first_failure_mu};
    if (first_failure.empty())
      first_failure = "http_load failed: " + out.out;
    return r;
  }
  r.puts_per_s = j["puts_per_s"];
  r.p50_ms = j["p50_ms"];
  r.p99_ms = j["p99_ms"];
  r.failed = j["failed"];
  std::lock_guard<std::mutex> lk{first_failure_mu};
  if (first_failure.empty())
    first_failure = j["first_failure"].get<std::string>();
  return r;
}

result run_cpp(const options& o, conclave::cluster::store_connection& conn,
               unsigned round) {
  std::vector<std::unique_ptr<rp::kv_client>> cs;
  for (unsigned c = 0; c < o.clients; ++c) {
    auto opts = conn.client_options();
    opts.deadline = std::chrono::seconds(5);
    cs.push_back(std::make_unique<rp::kv_client>(conn.system(), opts));
  }
  return closed_loop(o.clients, o.seconds, [&](unsigned c, uint64_t i) {
    return cs[c]->put("kv", key_of("cpp", round, c, i), value).code == rp::errc::ok;
  });
}

/// `conclave kv --dir DIR put KEY VALUE`, its output discarded: exit status 0.
bool cli_put(const options& o, const fs::path& dir, const std::string& key) {
  std::vector<std::string> args{o.bin, "kv", "--dir", dir.string(), "put", key, value};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, o.bin.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return false;
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

result run_cli(const options& o, const fs::path& dir, unsigned round) {
  return closed_loop(o.clients, o.seconds, [&](unsigned c, uint64_t i) {
    return cli_put(o, dir, key_of("cli", round, c, i));
  });
}

int usage(const std::string& why) {
  std::cerr << "http_bench: " << why
            << "\nusage: http_bench [--conclave BIN] [--clients C] [--seconds S] "
               "[--rounds R] [--quick]\n";
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string{}; };
    try {
      if (a == "--conclave")
        o.bin = next();
      else if (a == "--clients")
        o.clients = static_cast<unsigned>(std::stoul(next()));
      else if (a == "--seconds")
        o.seconds = std::stod(next());
      else if (a == "--rounds")
        o.rounds = static_cast<unsigned>(std::stoul(next()));
      else if (a == "--quick") {
        o.clients = 4;
        o.seconds = 0.5;
        o.rounds = 1;
      } else
        return usage("unknown argument " + a);
    } catch (const std::exception&) {
      return usage(a + ": expected a number");
    }
  }
  if (o.clients == 0 || o.rounds == 0 || !(o.seconds > 0))
    return usage("--clients, --seconds and --rounds must be positive");
  auto dir =
      fs::temp_directory_path() / ("conclave-http-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // kv's primary cache and TLS sessions stay in the run's directory.
  ::setenv("CONCLAVE_KV_CACHE_DIR", (dir / "kv-cache").c_str(), 1);
  auto down = [&] {
    conclave::testing::run_command(o.bin + " cluster down --dir " + dir.string()
                                   + " >/dev/null 2>&1");
    fs::remove_all(dir);
  };
  auto up = conclave::testing::run_command(o.bin + " cluster up --json --nodes 3 --dir "
                                           + dir.string() + " 2>&1");
  if (up.status != 0) {
    std::cerr << "http_bench: cluster up failed: " << up.out << '\n';
    down();
    return 1;
  }
  auto st = json::parse(conclave::testing::run_command(
                            o.bin + " cluster status --json --dir " + dir.string())
                            .out,
                        nullptr, false);
  std::string addr;
  if (!st.is_discarded())
    for (auto& n : st["nodes"])
      if (n["id"] == n["leader"] && n["http"].is_string())
        addr = n["http"].get<std::string>();
  if (addr.empty()) {
    std::cerr << "http_bench: no leader with an HTTP address in cluster status\n";
    down();
    return 1;
  }

  conclave::cluster::store_access access;
  access.dir = dir.string();
  std::map<uint64_t, conclave::node::address> members;
  if (auto e = conclave::cluster::settle_access(access)) {
    std::cerr << "http_bench: " << *e << '\n';
    down();
    return 1;
  }
  if (auto e = conclave::cluster::parse_members(access, members)) {
    std::cerr << "http_bench: " << *e << '\n';
    down();
    return 1;
  }
  int status = 0;
  {
    conclave::cluster::store_connection conn{access, members};
    conn.wait_ready(std::chrono::seconds(2));
    // Warm-up: the HTTP route's client and this process's client both reach
    // a serving primary before anything is timed.
    {
      options w = o;
      w.clients = 1;
      w.seconds = 0.5;
      run_http(w, dir / "tls", addr, 0);
      run_cpp(w, conn, 0);
    }
    const char* names[] = {"http", "c++ client", "kv put (CLI)"};
    std::vector<std::vector<result>> by_case(3);
    std::cout << "strong puts, 256-byte values, 3 nodes with TLS on loopback, "
              << o.clients << " clients, " << o.seconds << " s per case, " << o.rounds
              << " round(s)\n";
    std::cout << std::fixed << std::setprecision(1);
    for (unsigned r = 1; r <= o.rounds; ++r)
      for (unsigned k = 0; k < 3; ++k) {
        unsigned which = (k + r) % 3;
        result res = which == 0   ? run_http(o, dir / "tls", addr, r)
                     : which == 1 ? run_cpp(o, conn, r)
                                  : run_cli(o, dir, r);
        by_case[which].push_back(res);
        std::cout << "round " << r << "  " << std::left << std::setw(13) << names[which]
                  << std::right << std::setw(9) << res.puts_per_s << " puts/s  p50 "
                  << std::setw(7) << res.p50_ms << " ms  p99 " << std::setw(7)
                  << res.p99_ms << " ms  failed " << res.failed << '\n';
      }
    std::cout << "\nmedians over the rounds\n"
              << std::left << std::setw(14) << "case" << std::right << std::setw(10)
              << "puts/s" << std::setw(11) << "p50 ms" << std::setw(11) << "p99 ms"
              << '\n';
    bool any = false;
    for (unsigned k = 0; k < 3; ++k) {
      std::vector<double> tput, p50, p99;
      for (auto& res : by_case[k]) {
        tput.push_back(res.puts_per_s);
        p50.push_back(res.p50_ms);
        p99.push_back(res.p99_ms);
        any = any || res.puts_per_s > 0;
      }
      std::cout << std::left << std::setw(14) << names[k] << std::right << std::setw(10)
                << conclave::bench::median(tput) << std::setw(11)
                << conclave::bench::median(p50) << std::setw(11)
                << conclave::bench::median(p99) << '\n';
    }
    if (!first_failure.empty())
      std::cout << "first failed HTTP put: " << first_failure << '\n';
    if (!any)
      status = 1;
    std::cout.flush();
  }
  down();
  return status;
}
