// conclave: the front. A one-shot `conclave kv get|put|delete` spends most of
// its time before main when the executable links CAF and OpenSSL as shared
// libraries (the dynamic loader resolves thousands of their symbols), so the
// `conclave` users run is this small program: OpenSSL linked in statically,
// no actor system. It serves get, put and delete of a --dir cluster over the
// members' HTTPS API (cli/kv_fast.hpp) and runs the full binary,
// conclave-core beside it, for everything else, with the same arguments,
// environment and process id (exec):
//
// - another command, a command line it cannot parse, --help: at once;
// - a kv operation its fast path does not serve (other subcommands and
//   flags, no HTTPS address, no TLS): at once, with the deadline;
// - no member answered over HTTPS before the deadline: with the write's
//   session id and the deadline (CONCLAVE_KV_HANDOFF), so the full binary's
//   cluster links finish the same operation within the same --timeout-ms and
//   a write sent twice is applied once.
//
// See docs/design/node.md ("Where a one-shot kv put spends its time").
#include "runtime/cli/command.hpp"
#include "runtime/cli/kv_fast.hpp"
#include "runtime/cli/kv_flags.hpp"
#include "runtime/cli/stage_trace.hpp"
#include "runtime/cluster/access.hpp"
#include "runtime/node/peer_address.hpp"

#include <openssl/ssl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

using namespace conclave::cli;

/// The full binary: conclave-core in this executable's directory.
std::string core_path() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string self = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string{};
  auto slash = self.rfind('/');
  return (slash == std::string::npos ? std::string{"."} : self.substr(0, slash))
         + "/conclave-core";
}

/// Replaces this process with the full binary, the same arguments.
[[noreturn]] void run_core(char** argv) {
  auto path = core_path();
  ::execv(path.c_str(), argv);
  std::fprintf(stderr, "conclave: error: cannot run %s: %s\n", path.c_str(),
               std::strerror(errno));
  std::fflush(stderr);
  std::_Exit(exit_failure);
}

} // namespace

int main(int argc, char** argv) {
  stages().mark("main");
  // Only this program hands an operation over; a value from outside is not
  // one of its handoffs.
  ::unsetenv(kv_handoff_variable);
  if (argc < 2 || std::strcmp(argv[1], "kv") != 0)
    run_core(argv);
  // The full binary's registry and kv definitions: the same parse, the same
  // CONCLAVE_KV_* variables.
  kv_options o;
  command_registry reg{"conclave", ""};
  define_kv_flags(reg.add("kv", kv_description, nullptr), o);
  if (!reg.parses(argc, argv))
    run_core(argv); // help, or an error the full binary words
  if (!o.get->parsed() && !o.put->parsed() && !o.del->parsed())
    run_core(argv);
  stages().mark("parsed");
  print_stages = o.trace_stages;
  if (conclave::cluster::settle_access(o.access))
    run_core(argv); // the full binary reports the problem
  auto members = conclave::node::parse_peers(o.access.peers);
  if (!members)
    run_core(argv);
  o.deadline = kv_clock::now() + std::chrono::milliseconds{o.timeout_ms};
  // This process talks TLS only to the members, with the cluster's CA, the
  // protocol floor and security level that make_context sets: the system's
  // OpenSSL configuration file is not read (0.6 ms of every run).
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
  if (auto status = run_over_http(o, members.value()))
    exit_now(*status);
  std::fflush(nullptr);
  if (::setenv(kv_handoff_variable, kv_handoff_text(o).c_str(), 1) != 0)
    exit_now(
        fail(0, "cannot hand the operation over: " + std::string{std::strerror(errno)}));
  run_core(argv);
}
