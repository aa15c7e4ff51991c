// The HTTP side of http_bench, as a process of its own: C keep-alive HTTPS
// clients with a client certificate put 256-byte values to /v1/kv/KEY for S
// seconds; prints one JSON line with puts/s, p50/p99 and the failures. The
// clients connect from 127.0.0.10, .11, ... (eight per address), as clients
// on several hosts would.
//
// It links no conclave library on purpose: the node's TLS read guard
// (runtime/node/tls_error_queue.hpp) wraps SSL_read in every process that
// links the node and would take these clients' HTTP bytes for BASP.
//
//   http_load --addr HOST:PORT --tls DIR --clients C --seconds S --prefix P
#include "tests/bench/http/closed_loop.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>

int main(int argc, char** argv) {
  // A connection the node closes (over its limits) must fail one put, not
  // end the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::string addr, tls, prefix = "bench/http";
  unsigned clients = 32;
  double seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--addr")
      addr = v;
    else if (a == "--tls")
      tls = v;
    else if (a == "--clients")
      clients = static_cast<unsigned>(std::stoul(v));
    else if (a == "--seconds")
      seconds = std::stod(v);
    else if (a == "--prefix")
      prefix = v;
    else {
      std::cerr << "http_load: unknown argument " << a << '\n';
      return 2;
    }
  }
  auto colon = addr.rfind(':');
  if (addr.empty() || tls.empty() || colon == std::string::npos || clients == 0) {
    std::cerr
        << "usage: http_load --addr HOST:PORT --tls DIR [--clients C] [--seconds S] "
           "[--prefix P]\n";
    return 2;
  }
  auto host = addr.substr(0, colon);
  int port = std::stoi(addr.substr(colon + 1));
  std::vector<std::unique_ptr<httplib::SSLClient>> cs;
  for (unsigned c = 0; c < clients; ++c) {
    auto cl = std::make_unique<httplib::SSLClient>(host, port, tls + "/client.pem",
                                                   tls + "/client.key");
    cl->enable_server_certificate_verification(false);
    cl->set_keep_alive(true);
    cl->set_tcp_nodelay(true);
    cl->set_connection_timeout(5);
    // Eight clients per source address (127.0.0.10, .11, ...): a node serves
    // at most 16 connections from one address by default, and 32 clients
    // stand for an application's servers, not one process.
    auto source = "127.0.0." + std::to_string(10 + c / 8);
    cl->set_socket_options([source](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      ::inet_pton(AF_INET, source.c_str(), &sa.sin_addr);
      ::bind(sock, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    });
    cl->set_read_timeout(10);
    cs.push_back(std::move(cl));
  }
  std::string body = nlohmann::json{{"value", std::string(256, 'v')}}.dump();
  std::mutex mu;
  std::string first_failure;
  auto r = conclave::bench::closed_loop(clients, seconds, [&](unsigned c, uint64_t i) {
    auto path = "/v1/kv/" + prefix + "/" + std::to_string(c) + "/" + std::to_string(i);
    auto res = cs[c]->Put(path.c_str(), body, "application/json");
    if (res && res->status == 200)
      return true;
    std::lock_guard<std::mutex> lk{mu};
    if (first_failure.empty())
      first_failure = res ? "HTTP " + std::to_string(res->status) + " " + res->body
                          : "no answer (" + httplib::to_string(res.error()) + ")";
    return false;
  });
  std::cout << nlohmann::json{{"puts_per_s", r.puts_per_s},
                              {"p50_ms", r.p50_ms},
                              {"p99_ms", r.p99_ms},
                              {"failed", r.failed},
                              {"first_failure", first_failure}}
                   .dump()
            << '\n';
  return 0;
}
