// See kv_fast.hpp.
#include "runtime/cli/kv_fast.hpp"

#include "runtime/cli/command.hpp"
#include "runtime/cli/kv_http.hpp"
#include "runtime/cli/stage_trace.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/primary_cache.hpp"
#include "runtime/node/tls_session_files.hpp"

#include <openssl/ssl.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

namespace conclave::cli {

using namespace std::chrono_literals;
using clock_type = kv_clock;

bool print_stages = false;

int fail(uint64_t node, const std::string& why) {
  std::cerr << "conclave: error: ";
  if (node != 0)
    std::cerr << "node " << node << ": ";
  std::cerr << why << '\n';
  return exit_failure;
}

/// Ends the process with `status` once what it printed is out, without
/// CAF's orderly shutdown of the actor system: that shutdown waits for every
/// connection to close gracefully, and CAF 0.17.6 cannot close one whose TLS
/// handshake a frozen member never answers (it waits, spinning a core, until
/// the member resumes). Nothing is lost by skipping it: the client keeps no
/// state, its answer is printed and flushed here, and the kernel closes its
/// sockets (the members see a client's link drop, as after kill -9).
[[noreturn]] void exit_now(int status) {
  if (print_stages) {
    stages().mark("exit");
    stages().print();
  }
  std::cout.flush();
  std::cerr.flush();
  if (std::fflush(nullptr) != 0 || !std::cout)
    status = status == exit_ok ? exit_failure : status;
  std::_Exit(status);
}

/// Where kv keeps its primary hint and TLS sessions ("" for nowhere).
std::string cache_dir_of(const kv_options& o) {
  if (o.dial_all || o.cache_dir == "none")
    return {};
  return o.cache_dir.empty() ? cluster::default_cache_dir() : o.cache_dir;
}

/// The primary cache file of this cluster ("" for none).
std::string cache_file_of(const kv_options& o) {
  auto dir = cache_dir_of(o);
  return dir.empty() ? std::string{}
                     : cluster::primary_cache_file(dir, o.access.cluster, o.access.peers);
}

uint64_t first_to_dial(const kv_options& o, const std::string& cache_file,
                       const std::map<uint64_t, node::address>& members) {
  if (o.dial_all)
    return 0;
  if (o.at != 0)
    return o.at;
  auto id = cluster::read_primary_cache(cache_file);
  if (members.count(id) != 0)
    return id;
  if (!o.access.dir.empty())
    id = cluster::leader_named_in(o.access.dir);
  return members.count(id) != 0 ? id : 0;
}

void remember_answering_primary(const std::string& cache_file, uint64_t primary) {
  // Also when the status files named it: the next run then reads one small
  // file instead of every node's status.
  if (primary != 0 && !cache_file.empty()
      && cluster::read_primary_cache(cache_file) != primary)
    cluster::write_primary_cache(cache_file, primary);
}

/// get, put and delete over the members' HTTPS API (kv_http.hpp), the
/// expected primary first, then the others; nothing when this path does not
/// apply (no HTTPS address known, another subcommand or flag) or no member
/// answered it in time: the CAF path then runs with the time left, and a
/// write with the same session id.
std::optional<int> run_over_http(kv_options& o,
                                 const std::map<uint64_t, node::address>& members,
                                 void (*on_context)(ssl_ctx_st*)) {
  bool simple = o.get->parsed() || o.put->parsed() || o.del->parsed();
  if (o.no_http || o.dial_all || !simple || o.at != 0 || !o.fence.empty() || o.weak
      || o.access.tls_ca.empty() || o.access.http.empty() || (o.json && o.get->parsed()))
    return std::nullopt;
  namespace kh = kv_http;
  kh::request r;
  r.collection = o.collection;
  r.key = o.key;
  if (!o.get->parsed()) {
    r.what = o.put->parsed() ? kh::request::kind::put : kh::request::kind::remove;
    r.value = o.value;
    o.session_id = kh::random_session_id();
    r.session = o.session_id;
    r.seq = 1; // the client library's first sequence number
  }
  std::string error;
  auto* ctx =
      kh::make_context(o.access.tls_ca, o.access.tls_cert, o.access.tls_key, error);
  if (ctx == nullptr)
    return std::nullopt; // the CAF path reports the files' problem
  stages().mark("context");
  if (on_context != nullptr)
    on_context(ctx);
  node::keep_tls_sessions(cache_dir_of(o), o.access.tls_ca, o.access.tls_cert);
  auto cache_file = cache_file_of(o);
  auto first = first_to_dial(o, cache_file, members);
  std::vector<uint64_t> order;
  if (o.access.http.count(first) != 0)
    order.push_back(first);
  for (auto& [id, addr] : o.access.http)
    if (id != first && members.count(id) != 0)
      order.push_back(id);
  bool maybe_sent = false;
  for (auto id : order) {
    auto now = clock_type::now();
    if (now >= o.deadline)
      break;
    // A stopped member accepts the connection but never answers the
    // handshake: the next member is asked after 250 ms.
    auto& addr = o.access.http.at(id);
    auto x = kh::call(ctx, addr, kh::request_text(r, addr), now + 250ms,
                      std::min(o.deadline, now + 1000ms), [] { stages().mark("ready"); });
    if (x.what != kh::exchange::kind::answered) {
      maybe_sent = maybe_sent || x.what == kh::exchange::kind::unknown;
      client_problem().set("node " + std::to_string(id) + " (HTTPS): " + x.error);
      continue;
    }
    auto v = kh::judge(r, x.answer, o.json);
    if (v.what == kh::verdict::kind::retry) {
      client_problem().set("node " + std::to_string(id) + " (HTTPS): " + v.problem);
      continue;
    }
    stages().mark("answered");
    remember_answering_primary(cache_file, v.primary);
    if (v.what == kh::verdict::kind::not_found) {
      std::cerr << "conclave: key not found\n";
      return exit_failure;
    }
    std::cout << v.output << '\n';
    return exit_ok;
  }
  SSL_CTX_free(ctx);
  if (clock_type::now() < o.deadline)
    return std::nullopt;
  auto seen = client_problem().get();
  std::string within =
      std::to_string(o.timeout_ms) + " ms ("
      + (seen.empty() ? std::string{"no member was asked"} : "last attempt: " + seen)
      + ")";
  if (maybe_sent)
    return fail(0, "outcome unknown: no answer within " + within
                       + "; the write may or may not have taken effect");
  return fail(0, "no answer within " + within);
}

std::string kv_handoff_text(const kv_options& o) {
  auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(o.deadline.time_since_epoch())
          .count();
  return o.session_id + "," + std::to_string(ns);
}

bool read_kv_handoff(const std::string& text, kv_options& o) {
  auto comma = text.find(',');
  if (comma == std::string::npos || comma > 64)
    return false;
  auto session = text.substr(0, comma);
  for (char c : session)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  int64_t ns = 0;
  auto* begin = text.data() + comma + 1;
  auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, ns);
  if (ec != std::errc{} || ptr != end || begin == end || ns <= 0)
    return false;
  o.session_id = session;
  o.deadline = clock_type::time_point{std::chrono::nanoseconds{ns}};
  return true;
}

} // namespace conclave::cli
