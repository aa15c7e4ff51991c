// What the identity proofs of the handshake cost (docs/design/node.md, "Security
// model"): the CPU time of one proof and one check (in process, medians), and
// the time from a node's "listening on" to "link to node 2 up" in its log when
// it dials a node already listening (TLS connect, TLS handshake, challenge and
// hello), for this build and, with --baseline BIN, another conclave binary
// (e.g. one without identity proofs), rounds interleaved. Prints figures; asserts
// nothing.
//
//   identity_bench [--rounds 20] [--baseline PATH] [--quick]
#include "runtime/node/peer_identity.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/test_certificates.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace conclave::node;
using conclave::bench::median;
using clock_type = std::chrono::steady_clock;

namespace {

double micros_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

/// Starts `argv` with stdout and stderr to `log`; its pid.
pid_t start(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

void stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

std::string read(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Seconds of the day of the log line that contains `what` (ISO time first).
std::optional<double> stamp_of(const std::string& log, const std::string& what) {
  auto at = log.find(what);
  if (at == std::string::npos)
    return std::nullopt;
  auto line = log.rfind('\n', at);
  line = line == std::string::npos ? 0 : line + 1;
  // 2026-11-23T02:41:07.123456Z
  auto t = log.substr(line + 11, 15);
  return std::stod(t.substr(0, 2)) * 3600 + std::stod(t.substr(3, 2)) * 60
         + std::stod(t.substr(6));
}

/// One link-up of node 1 to node 2 with `bin`: milliseconds, nullopt on failure.
std::optional<double> link_up_ms(const std::string& bin,
                                 const conclave::test::test_certificates& c,
                                 const std::string& dir) {
  auto p1 = std::to_string(conclave::testing::free_port());
  auto p2 = std::to_string(conclave::testing::free_port());
  auto peers = "1@127.0.0.1:" + p1 + ",2@127.0.0.1:" + p2;
  auto args = [&](int id, const std::string& port) {
    return std::vector<std::string>{bin,          "node",
                                    "--id",       std::to_string(id),
                                    "--listen",   "127.0.0.1:" + port,
                                    "--peers",    peers,
                                    "--tls-ca",   c.ca(),
                                    "--tls-cert", c.cert(static_cast<uint64_t>(id)),
                                    "--tls-key",  c.key(static_cast<uint64_t>(id))};
  };
  auto log1 = dir + "/node-1.log";
  auto log2 = dir + "/node-2.log";
  ::unlink(log1.c_str()); // never read the previous round's lines
  ::unlink(log2.c_str());
  auto n2 = start(args(2, p2), log2);
  auto deadline = clock_type::now() + std::chrono::seconds(5);
  while (read(log2).find("listening on") == std::string::npos
         && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto n1 = start(args(1, p1), log1);
  std::optional<double> ms;
  while (clock_type::now() < deadline) {
    auto text = read(log1);
    auto up = stamp_of(text, "link to node 2 up");
    if (up) {
      auto listening = stamp_of(text, "listening on");
      if (listening)
        ms = (*up - *listening) * 1000;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop(n1);
  stop(n2);
  return ms;
}

} // namespace

int main(int argc, char** argv) {
  int rounds = 20;
  std::string baseline;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      rounds = 2;
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::stoi(argv[++i]);
    else if (a == "--baseline" && i + 1 < argc)
      baseline = argv[++i];
    else {
      std::cerr << "usage: identity_bench [--rounds N] [--baseline BIN] [--quick]\n";
      return 2;
    }
  }
  conclave::test::test_certificates certs{{1, 2}};
  auto auth = peer_authenticator::load(certs.ca(), certs.cert(2), certs.key(2)).value();

  // CPU: one proof and one check (chain, name, signature) of a handshake side.
  std::vector<double> prove_us, verify_us;
  for (int i = 0; i < rounds * 10; ++i) {
    proof_statement s{proof_role::dialing, "conclave",   2,       1,
                      make_nonce(),        make_nonce(), "node/1"};
    auto t0 = clock_type::now();
    auto p = auth->self.prove(s);
    prove_us.push_back(micros_since(t0));
    t0 = clock_type::now();
    auto r = auth->verifier.verify(p, s);
    verify_us.push_back(micros_since(t0));
    if (r != identity_refusal::none) {
      std::cerr << "identity_bench: a valid proof was refused: " << to_string(r) << '\n';
      return 1;
    }
  }
  std::cout << "proof (sign, EC P-256):            median " << median(prove_us)
            << " us over " << prove_us.size() << '\n'
            << "check (chain + name + signature):  median " << median(verify_us)
            << " us\n"
            << "per handshake, both sides: 2 proofs + 2 checks = "
            << 2 * (median(prove_us) + median(verify_us)) / 1000 << " ms of CPU\n";

  // Link-up over loopback TLS, this build and the baseline interleaved.
  std::vector<double> ours, theirs;
  int failed = 0;
  for (int i = 0; i < rounds; ++i) {
    if (auto ms = link_up_ms(CONCLAVE_BIN, certs, certs.file("")))
      ours.push_back(*ms);
    else
      ++failed;
    if (!baseline.empty()) {
      if (auto ms = link_up_ms(baseline, certs, certs.file("")))
        theirs.push_back(*ms);
      else
        ++failed;
    }
  }
  auto list = [](const std::vector<double>& v) {
    std::string s;
    for (auto x : v)
      s += " " + std::to_string(x);
    return s;
  };
  std::cout << "rounds, this build:" << list(ours) << "\n";
  if (!baseline.empty())
    std::cout << "rounds, baseline:  " << list(theirs) << "\n";
  auto least = [](const std::vector<double>& v) {
    return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
  };
  std::cout << "link-up (listening -> link up), this build: median " << median(ours)
            << " ms, min " << least(ours) << " ms over " << ours.size() << " rounds\n";
  if (!baseline.empty())
    std::cout << "link-up, baseline " << baseline << ": median " << median(theirs)
              << " ms, min " << least(theirs) << " ms over " << theirs.size()
              << " rounds; difference " << median(ours) - median(theirs) << " ms\n";
  if (failed > 0)
    std::cout << failed << " round(s) never linked within 5 s\n";
  return 0;
}
