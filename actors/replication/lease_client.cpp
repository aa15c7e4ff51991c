#include "actors/replication/lease_client.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include <unistd.h>

namespace conclave::replication {

using namespace std::chrono_literals;

lease_client::lease_client(caf::actor_system& sys, client_options base)
    : sys_(sys), base_(std::move(base)) {}

txn_result lease_client::run(const txn_request& req, std::chrono::milliseconds attempt,
                             std::chrono::milliseconds deadline) {
  auto o = base_;
  o.deadline = std::max<caf::timespan>(deadline, 1ms);
  o.attempt_timeout = std::clamp<caf::timespan>(attempt, 1ms, o.deadline);
  kv_client c{sys_, o};
  return c.transact(req);
}

lease_answer lease_client::acquire(const std::string& name, const std::string& holder,
                                   lease_params p, std::chrono::milliseconds wait) {
  lease_answer out;
  auto end = lease_clock::now() + wait;
  for (;;) {
    auto now = lease_clock::now();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - now);
    p.wait = std::clamp(left, 0ms, max_poll);
    txn_request req;
    req.ops.push_back(txn_op{name, holder, encode_params(p), op_kind::lease_acquire});
    // One attempt may wait at the primary for p.wait; a second attempt (the
    // first one's primary failed) gets the rest of one more second.
    auto r = run(req, p.wait + 1000ms, p.wait + 2000ms);
    out.code = r.code;
    if (r.code == errc::ok && !r.outputs.empty()) {
      auto t = parse_token(r.outputs[0].value);
      if (!t) {
        out.code = errc::bad_request;
        return out;
      }
      out.token = *t;
      out.safe_until = now + p.ttl;
      out.holders.reset();
      // A grant that waited at the primary counts only from this poll's send
      // time, which may leave little or nothing of the ttl: renew at once
      // (its send time is now) to start the holder's window afresh.
      if (lease_clock::now() - now > p.ttl / 4) {
        auto rr = renew(name, holder, *t, p.ttl,
                        std::max<std::chrono::milliseconds>(p.ttl / 2, 1ms));
        if (rr.code == errc::ok) {
          out.safe_until = rr.safe_until;
        } else if (rr.code == errc::stale_token) {
          if (lease_clock::now() >= end)
            return rr;
          continue; // expired meanwhile: ask again
        }
      }
      return out;
    }
    if (r.code == errc::lease_busy && !r.outputs.empty())
      out.holders = decode_lease(r.outputs[0].value);
    if (r.code == errc::bad_request || r.code == errc::too_large)
      return out;
    if (lease_clock::now() >= end)
      return out;
    // No primary, or busy long before this poll's wait ran out (the
    // primary's queue is full): do not spin.
    bool early = r.code == errc::lease_busy && lease_clock::now() - now < p.wait / 2;
    if (r.code != errc::lease_busy || early)
      std::this_thread::sleep_for(
          std::min<lease_clock::duration>(early ? 50ms : 20ms, end - lease_clock::now()));
  }
}

lease_answer lease_client::renew(const std::string& name, const std::string& holder,
                                 uint64_t token, std::chrono::milliseconds ttl,
                                 std::chrono::milliseconds budget) {
  lease_answer out;
  auto sent = lease_clock::now();
  txn_request req;
  req.ops.push_back(txn_op{name, holder, format_token(token), op_kind::lease_renew});
  auto r = run(req, std::max(budget / 3, 50ms), budget);
  out.code = r.code;
  if (r.code == errc::ok) {
    out.token = token;
    out.safe_until = sent + ttl;
  } else if (r.code == errc::stale_token && !r.outputs.empty()) {
    out.holders = decode_lease(r.outputs[0].value);
  }
  return out;
}

errc lease_client::release(const std::string& name, const std::string& holder,
                           uint64_t token, std::chrono::milliseconds budget) {
  txn_request req;
  req.ops.push_back(txn_op{name, holder, format_token(token), op_kind::lease_release});
  return run(req, std::max(budget / 3, 50ms), budget).code;
}

lease_answer lease_client::holders(const std::string& name,
                                   std::chrono::milliseconds budget) {
  auto o = base_;
  o.deadline = std::max<caf::timespan>(budget, 1ms);
  o.attempt_timeout = std::clamp<caf::timespan>(budget / 3, 50ms, o.deadline);
  kv_client c{sys_, o};
  auto r = c.get(lease_collection, name);
  lease_answer out;
  out.code = r.code;
  if (r.code != errc::ok)
    return out;
  out.holders = r.found ? decode_lease(r.value) : std::optional<lease>(lease{});
  if (!out.holders)
    out.code = errc::bad_request;
  return out;
}

std::string lease_client::make_holder_id() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0)
    host[0] = '\0';
  std::random_device rd;
  uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  return std::string(host) + "/" + std::to_string(getpid()) + "/" + std::to_string(r);
}

std::string lease_client::default_label(const std::string& user_label) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0)
    host[0] = '\0';
  auto out = std::string(host) + " pid " + std::to_string(getpid());
  if (!user_label.empty())
    out += " " + user_label;
  return out;
}

} // namespace conclave::replication
