// conclave kv get|put|delete|list|enqueue|dequeue|incr: a client of a running
// cluster's replicated store, for scripts and operators. See docs/design/node.md
// ("conclave kv").
//
// It connects to the members' fronts (front_directory.hpp) and runs the
// operation through the client library (actors/replication/client.hpp),
// which finds the primary: a secondary's not_primary hint is followed, a
// syncing primary is asked again, and a write whose answer was lost is
// retried with its session id and sequence number, so the store applies it
// once (actors/replication/session_table.hpp). --at reads one member's
// replica directly. Everything is bounded by --timeout-ms.
//
// The fast path: one TLS handshake per member costs more than the operation,
// so kv dials the member it expects to be the primary alone first (the one
// that last answered, from a cache file, primary_cache.hpp; else the leader
// the --dir status files name) and the others only when needed. --dial-all
// dials every member at once instead. Over TLS it offers the session ticket
// its last full handshake with that member got (node/tls_reuse.hpp), so the
// handshake exchanges no certificates.
//
// Faster still, get, put and delete of a --dir cluster over TLS go to the
// members' HTTPS API first (kv_http.hpp): no actor system, no BASP. A write
// carries a session id there, and the CAF path it falls back to reuses it, so
// a write sent twice is applied once.
#include "runtime/cli/access_flags.hpp"
#include "runtime/cli/commands.hpp"
#include "runtime/cli/kv_fast.hpp"
#include "runtime/cli/kv_flags.hpp"
#include "runtime/cli/stage_trace.hpp"

#include "actors/replication/client.hpp"
#include "actors/replication/interactive.hpp"
#include "actors/replication/lease_state.hpp"
#include "runtime/cluster/client_connect.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/cluster/front_directory.hpp"
#include "runtime/cluster/primary_cache.hpp"
#include "runtime/cluster/store_access.hpp"
#include "runtime/node/node_config.hpp"
#include "runtime/node/tls_error_queue.hpp"
#include "runtime/node/tls_session_files.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>
#include <openssl/ssl.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

namespace conclave::cli {

namespace {

namespace rp = conclave::replication;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

std::optional<std::string> settle_access(kv_options& o) {
  return cluster::settle_access(o.access);
}

int print_read(const kv_options& o, const rp::read_result& r, uint64_t node_id) {
  if (o.json) {
    std::cout << nlohmann::json{{"node", node_id},
                                {"found", r.found},
                                {"value", r.found ? nlohmann::json(r.value)
                                                  : nlohmann::json(nullptr)},
                                {"applied_lsn", r.applied.value},
                                {"behind", r.behind},
                                {"role", std::string{rp::to_string(r.replica_role)}}}
                     .dump()
              << '\n';
    return r.found ? exit_ok : exit_failure;
  }
  if (!r.found) {
    std::cerr << "conclave: key not found\n";
    return exit_failure;
  }
  std::cout << r.value << '\n';
  return exit_ok;
}

int print_commit(const kv_options& o, const rp::txn_result& r, uint64_t node_id) {
  if (o.dequeue->parsed()) {
    bool taken = !r.outputs.empty() && r.outputs.back().found;
    if (o.json)
      std::cout << nlohmann::json{{"node", node_id},
                                  {"lsn", r.at.value},
                                  {"found", taken},
                                  {"value", taken ? nlohmann::json(r.outputs.back().value)
                                                  : nlohmann::json(nullptr)}}
                       .dump()
                << '\n';
    else if (taken)
      std::cout << r.outputs.back().value << '\n';
    if (!taken && !o.json)
      std::cerr << "conclave: queue empty\n";
    return taken ? exit_ok : exit_failure;
  }
  if (o.json)
    std::cout << nlohmann::json{{"node", node_id}, {"lsn", r.at.value}}.dump() << '\n';
  else
    std::cout << "ok lsn " << r.at.value << '\n';
  return exit_ok;
}

int print_list(const kv_options& o, const rp::list_result& r, uint64_t node_id) {
  if (o.json) {
    auto items = nlohmann::json::array();
    for (auto& i : r.items)
      items.push_back({{"key", i.key}, {"value", i.value}});
    std::cout << nlohmann::json{{"node", node_id},
                                {"items", items},
                                {"more", r.more},
                                {"applied_lsn", r.applied.value},
                                {"behind", r.behind},
                                {"role", std::string{rp::to_string(r.replica_role)}}}
                     .dump()
              << '\n';
  } else {
    for (auto& i : r.items)
      std::cout << i.key << '\t' << i.value << '\n';
    if (r.more)
      std::cerr << "conclave: more keys follow (raise --limit)\n";
  }
  return exit_ok;
}

/// Answers that end the command with an error (not retried).
std::optional<std::string> final_error(rp::errc e) {
  switch (e) {
  case rp::errc::bad_request:
  case rp::errc::too_large:
  case rp::errc::condition_failed:
  case rp::errc::unknown_collection:
  case rp::errc::wrong_kind:
    return std::string{rp::to_string(e)};
  case rp::errc::sessions_full:
    return std::string{"sessions_full: the store's session table is full of clients "
                       "active in the last minute; nothing was written, retry later"};
  case rp::errc::stale_token:
    return std::string{"stale_token: the --fence lease is no longer held with that "
                       "token; nothing was written"};
  default:
    return std::nullopt;
  }
}

/// The request of a write subcommand.
rp::txn_request write_request(const kv_options& o) {
  rp::txn_request req;
  rp::txn_op op;
  op.collection = o.collection;
  op.key = o.key;
  op.value = o.value;
  op.kind = o.del->parsed()       ? rp::op_kind::remove
            : o.enqueue->parsed() ? rp::op_kind::enqueue
            : o.dequeue->parsed() ? rp::op_kind::dequeue
                                  : rp::op_kind::put;
  if (!o.fence.empty())
    req.ops.push_back(
        rp::txn_op{o.fence_name, {}, o.fence_token, rp::op_kind::expect_lease});
  req.ops.push_back(std::move(op));
  req.mode = o.weak ? rp::commit_mode::weak : rp::commit_mode::strong;
  return req;
}

/// Prints the failure of an answer that is not ok: the store's refusals by
/// name, an unknown outcome, or no answer in time.
int fail_with(const kv_options& o, rp::errc code, uint64_t node,
              const cluster::front_directory& dir) {
  if (auto err = final_error(code))
    return fail(node, *err);
  // What the last attempt ran into, then the last connection error.
  std::string seen;
  auto attempt = client_problem().get();
  if (!attempt.empty())
    seen = "last attempt: " + attempt;
  if (auto conn = dir.last_error(); !conn.empty())
    seen += (seen.empty() ? "" : "; ") + std::string{"last connection error: "} + conn;
  if (seen.empty())
    seen = "no primary answered";
  if (code == rp::errc::outcome_unknown)
    return fail(
        0, "outcome unknown: no majority answered within " + std::to_string(o.timeout_ms)
               + " ms; the write may or may not have taken effect (" + seen + ")");
  std::string why = "no answer within " + std::to_string(o.timeout_ms) + " ms (";
  if (code != rp::errc::timeout)
    why += std::string{rp::to_string(code)} + "; ";
  return fail(0, why + seen + ")");
}

/// --at: one read or list at that member's replica, whatever its role.
int read_at(const kv_options& o, caf::actor_system& sys, cluster::front_directory& dir,
            clock_type::time_point deadline) {
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max<clock_type::duration>(deadline - clock_type::now(), 1ms));
  caf::actor front = dir.wait_for(o.at, wait);
  if (!front)
    return fail(o.at, "not reachable within " + std::to_string(o.timeout_ms) + " ms ("
                          + dir.last_error() + ")");
  auto left = std::max<clock_type::duration>(deadline - clock_type::now(), 1ms);
  caf::scoped_actor self{sys};
  int status = exit_failure;
  auto answer = [&](auto& res, auto print) {
    if (res.code == rp::errc::ok) {
      status = print(o, res, o.at);
      return;
    }
    // A primary without its lease does not answer its reads (not_primary).
    status = res.code == rp::errc::not_primary ? fail(o.at, "is not an acting primary")
                                               : fail_with(o, res.code, o.at, dir);
  };
  auto on_error = [&](caf::error& e) { status = fail(o.at, sys.render(e)); };
  if (o.get->parsed())
    self->request(front, left, rp::read_request{o.collection, o.key})
        .receive([&](rp::read_result& res) { answer(res, print_read); }, on_error);
  else
    self->request(front, left, rp::list_request{o.collection, o.key, {}, o.limit})
        .receive([&](rp::list_result& res) { answer(res, print_list); }, on_error);
  return status;
}

/// incr: read the integer, add --by, write it back, in one interactive
/// transaction (actors/replication/interactive.hpp), run again on a conflict
/// until the deadline.
int run_incr(const kv_options& o, rp::kv_client& client, cluster::front_directory& dir,
             clock_type::time_point deadline,
             const std::function<void(rp::errc, uint64_t)>& remember) {
  std::string bad;
  bool late = false;
  int64_t result = 0;
  auto r = rp::run_transaction(
      client,
      [&](rp::interactive_txn& t) {
        if (clock_type::now() >= deadline) {
          late = true;
          return false;
        }
        auto v = t.get(o.collection, o.key);
        if (v.code != rp::errc::ok)
          return true; // commit() answers the read's code
        int64_t current = 0;
        if (v.found) {
          auto* end = v.value.data() + v.value.size();
          auto [ptr, ec] = std::from_chars(v.value.data(), end, current);
          if (ec != std::errc{} || ptr != end || v.value.empty()) {
            bad = "key " + o.key + " holds " + std::to_string(v.value.size())
                  + " bytes that are not a decimal integer";
            return false;
          }
        }
        if (__builtin_add_overflow(current, o.by, &result)) {
          bad = "key " + o.key + ": " + std::to_string(current) + " + "
                + std::to_string(o.by) + " overflows a 64-bit integer";
          return false;
        }
        t.put(o.collection, o.key, std::to_string(result));
        return true;
      },
      rp::run_options{1000});
  remember(r.result.code, r.result.primary.value);
  if (!bad.empty())
    return fail(0, bad);
  if (late)
    return fail_with(o, rp::errc::timeout, 0, dir);
  if (r.result.code == rp::errc::condition_failed)
    return fail(0, "still conflicting after " + std::to_string(r.attempts) + " attempts");
  if (r.result.code != rp::errc::ok)
    return fail_with(o, r.result.code, r.result.primary.value, dir);
  if (o.json)
    std::cout << nlohmann::json{{"key", o.key},
                                {"value", result},
                                {"lsn", r.result.at.value},
                                {"attempts", r.attempts},
                                {"node", r.result.primary.value}}
                     .dump()
              << '\n';
  else
    std::cout << result << '\n';
  return exit_ok;
}

int run_connected(kv_options& o, caf::actor_system& sys,
                  const std::map<uint64_t, node::address>& members);

int run_kv(kv_options& o) {
  stages().mark("parsed");
  print_stages = o.trace_stages;
  if (auto err = settle_access(o))
    return bad_input(*err);
  auto members = node::parse_peers(o.access.peers);
  if (!members)
    return bad_input("--peers: " + members.error());
  if (o.at != 0 && members.value().count(o.at) == 0)
    return bad_input("--at: node " + std::to_string(o.at) + " is not in --peers");
  bool reading = o.get->parsed() || o.list->parsed();
  if (!o.fence.empty()) {
    auto eq = o.fence.rfind('=');
    if (eq == std::string::npos || eq == 0)
      return bad_input("--fence: expected NAME=TOKEN, got '" + o.fence + "'");
    o.fence_name = o.fence.substr(0, eq);
    o.fence_token = o.fence.substr(eq + 1);
    if (!rp::parse_token(o.fence_token))
      return bad_input("--fence: the token must be a positive integer, got '"
                       + o.fence_token + "'");
    if (reading || o.incr->parsed())
      return bad_input("--fence: only for put, delete, enqueue and dequeue");
    if (o.weak)
      return bad_input("--fence: not with --weak (the lease is checked when the write "
                       "is applied)");
  }
  if (o.at != 0 && !reading)
    return bad_input("--at: only for get and list (writes go to the primary)");
  o.deadline = clock_type::now() + std::chrono::milliseconds{o.timeout_ms};
  // Started by the front (runtime/front/), which tried the HTTPS path: its
  // write's session and its deadline go on here.
  if (const char* handoff = std::getenv(kv_handoff_variable)) {
    std::string text = handoff;
    ::unsetenv(kv_handoff_variable);
    if (!read_kv_handoff(text, o))
      return bad_input(std::string{kv_handoff_variable}
                       + ": not what the front hands over: '" + text + "'");
    // The front used the whole time: nothing is tried. Its write may have
    // reached a member (the front does not say), so a write's outcome is
    // unknown; a read simply had no answer.
    if (clock_type::now() >= o.deadline) {
      auto within = std::to_string(o.timeout_ms) + " ms";
      if (o.get->parsed())
        exit_now(
            fail(0, "no answer within " + within + " (no member answered over HTTPS)"));
      exit_now(fail(0, "outcome unknown: no answer within " + within
                           + "; the write may or may not have taken effect (no member "
                             "answered over HTTPS)"));
    }
  } else if (auto status = run_over_http(o, members.value(), [](ssl_ctx_st* ctx) {
               // This process links the node's TLS read guard, which checks
               // every TLS read as CAF's BASP: these sessions carry HTTP.
               node::exempt_from_basp_checks(ctx);
             })) {
    exit_now(*status);
  }
  // OpenSSL's set-up and the files' parsing overlap the actor system's
  // start (client_connect.hpp); a dial that comes first waits for them.
  cluster::tls_warm_up warm{o.access.tls_ca, o.access.tls_cert, o.access.tls_key};
  // Resumed TLS sessions: no certificates sent, parsed or verified.
  node::keep_tls_sessions(cache_dir_of(o), o.access.tls_ca, o.access.tls_cert);
  caf::actor_system_config cfg;
  cluster::configure_client(cfg, o.access.tls_ca, o.access.tls_cert, o.access.tls_key);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  stages().mark("system");
  exit_now(run_connected(o, sys, members.value()));
}

/// Remembers the member that answered as the primary. Only answers of a
/// primary count: ok, or a refusal of the request itself (a timeout or an
/// unknown outcome names no one reliably).
void remember_primary(const std::string& cache_file, rp::errc code, uint64_t primary) {
  bool answered = code == rp::errc::ok || final_error(code).has_value();
  if (answered)
    remember_answering_primary(cache_file, primary);
}

/// The operation, bounded by --timeout-ms from here.
int run_connected(kv_options& o, caf::actor_system& sys,
                  const std::map<uint64_t, node::address>& members) {
  auto timeout = std::chrono::milliseconds{o.timeout_ms};
  auto deadline = o.deadline;
  auto cache_file = o.at != 0 ? std::string{} : cache_file_of(o);
  cluster::front_directory_options dopts;
  dopts.cluster = o.access.cluster;
  dopts.members = members;
  dopts.step_timeout = std::min(timeout, std::chrono::milliseconds{1000});
  dopts.first = first_to_dial(o, cache_file, members);
  dopts.probe_first = true; // a member cut off by the network holds no other dial
  cluster::front_directory dir{sys, dopts};
  if (o.at != 0)
    return read_at(o, sys, dir, deadline);
  // The client starts as soon as the primary a gate named is connected, or
  // every member answered or failed (at most 200 ms: a frozen member answers
  // nothing), asks that primary first and otherwise the connected members,
  // and follows their answers (actors/replication/client.hpp); members still
  // connecting join as they answer, and a member the client asks for that
  // was not dialed yet (dopts.first) is dialed then.
  dir.wait_ready(std::min(timeout, std::chrono::milliseconds{200}));
  stages().mark("ready");
  rp::client_options copts;
  for (auto& m : dopts.members)
    copts.members.push_back(rp::node_id{m.first});
  copts.lookup = [&dir](rp::node_id id) { return dir.lookup(id.value); };
  copts.primary = rp::node_id{dir.primary_hint()};
  copts.on_problem = [](const std::string& what) { client_problem().set(what); };
  // The HTTPS path's session: a write it may have sent is answered once.
  copts.session_id = o.session_id;
  auto left = std::chrono::duration_cast<caf::timespan>(
      std::max<clock_type::duration>(deadline - clock_type::now(), 1ms));
  copts.deadline = left;
  copts.attempt_timeout = std::min<caf::timespan>(left, std::chrono::seconds(1));
  rp::kv_client client{sys, copts};
  if (o.get->parsed() || o.list->parsed()) {
    auto answer = [&](auto& res, auto print) {
      remember_primary(cache_file, res.code, res.primary.value);
      if (res.code == rp::errc::ok)
        return print(o, res, res.primary.value);
      return fail_with(o, res.code, res.primary.value, dir);
    };
    if (o.get->parsed()) {
      auto r = client.get(o.collection, o.key);
      stages().mark("answered");
      return answer(r, print_read);
    }
    auto r = client.list(o.collection, o.key, o.limit);
    stages().mark("answered");
    return answer(r, print_list);
  }
  if (o.incr->parsed())
    return run_incr(o, client, dir, deadline, [&](rp::errc code, uint64_t primary) {
      remember_primary(cache_file, code, primary);
    });
  // Retried after a lost answer until the timeout; the store answers a
  // retry of an applied write with its first outcome.
  auto r = client.transact(write_request(o));
  stages().mark("answered");
  remember_primary(cache_file, r.code, r.primary.value);
  if (r.code == rp::errc::ok)
    return print_commit(o, r, r.primary.value);
  return fail_with(o, r.code, r.primary.value, dir);
}

} // namespace

void add_kv_command(command_registry& reg) {
  auto o = std::make_shared<kv_options>();
  auto* kv = reg.add("kv", "Read and write a running cluster's replicated store",
                     [o] { return run_kv(*o); });
  define_kv_flags(kv, *o);
}

} // namespace conclave::cli
