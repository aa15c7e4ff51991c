#include "actors/replication/client.hpp"

#include "actors/replication/session_table.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <map>
#include <random>
#include <set>
#include <variant>

namespace conclave::replication {

bool idempotent(const txn_request& req) {
  for (auto& op : req.ops)
    if (op.kind == op_kind::enqueue || op.kind == op_kind::dequeue)
      return false;
  return true;
}

bool session_eligible(const txn_request& req) {
  for (auto& op : req.ops)
    if (op.kind == op_kind::lease_acquire || op.kind == op_kind::lease_renew
        || op.kind == op_kind::lease_release || op.kind == op_kind::lease_expire
        || op.kind == op_kind::session)
      return false;
  return true;
}

namespace {

/// 16 random bytes in hex.
std::string random_session_id() {
  std::random_device rd;
  std::string out;
  static constexpr char digits[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    auto x = rd();
    for (int j = 0; j < 8; ++j) {
      out.push_back(digits[x & 0xF]);
      x >>= 4;
    }
  }
  return out;
}

using time_point = caf::actor_clock::time_point;

template <class Request>
struct answer_of;
template <>
struct answer_of<txn_request> {
  using type = txn_result;
};
template <>
struct answer_of<read_request> {
  using type = read_result;
};
template <>
struct answer_of<list_request> {
  using type = list_result;
};
template <class Request>
using answer_t = typename answer_of<Request>::type;

/// One request of a caller, across its attempts.
template <class Request>
struct pending {
  Request req;
  caf::typed_response_promise<answer_t<Request>> promise;
  time_point deadline;
  caf::timespan backoff{0};
  /// Immediate redirects since the last backoff.
  size_t redirects = 0;
  /// The member asked by the attempt in flight, and that host's address
  /// (its down_msg ends the attempt at once).
  node_id target;
  caf::actor_addr host;
  /// Numbers the attempts: an answer or error of an earlier attempt, which
  /// a host's down_msg already ended, is ignored.
  uint64_t attempt = 0;
  /// A transaction: an earlier attempt ended without an answer that settles
  /// it (primary_changed, no answer, the host went down with it in flight),
  /// so it may have committed.
  bool uncertain = false;
  /// A transaction with a session op (ops[0]) and its sequence number: its
  /// retries are answered by the store's session table.
  uint64_t seq = 0;
  time_point first_sent{};
};

using any_pending =
    std::variant<pending<txn_request>, pending<read_request>, pending<list_request>>;

struct client_state {
  client_options opts;
  std::map<uint64_t, any_pending> ops;
  uint64_t next_id = 1;
  /// The primary last heard of (no_node: ask the members in turn).
  node_id primary = no_node;
  size_t probe = 0;
  /// Hosts monitored (one monitor per host, however many requests).
  std::set<caf::actor_addr> monitored;
  std::minstd_rand rng;
  /// Sessions: this client's id, the next sequence number, and the numbers
  /// in flight (the lowest is sent as "still waited for").
  std::string session_id;
  uint64_t next_seq = 1;
  std::set<uint64_t> in_flight;
  static inline const char* name = "conclave.replication_client";
};

using client_impl = caf::stateful_actor<client_state>*;

template <class Request>
void attempt(client_impl self, uint64_t id);

/// The answer given when the deadline passes.
template <class Answer>
Answer timed_out(const client_state& st) {
  Answer a;
  a.code = errc::timeout;
  a.primary = st.primary;
  return a;
}

/// The answer when the deadline passes: a transaction an attempt of which
/// may have committed (uncertain) is outcome_unknown, anything else timeout.
template <class Request>
answer_t<Request> at_deadline(const client_state& st, const pending<Request>& p) {
  auto a = timed_out<answer_t<Request>>(st);
  if constexpr (std::is_same_v<Request, txn_request>)
    if (p.uncertain)
      a.code = errc::outcome_unknown;
  return a;
}

template <class Request>
pending<Request>* find(client_impl self, uint64_t id) {
  auto i = self->state.ops.find(id);
  if (i == self->state.ops.end())
    return nullptr;
  return std::get_if<pending<Request>>(&i->second);
}

/// True while attempt n of request id is the one in flight.
template <class Request>
bool current(client_impl self, uint64_t id, uint64_t n) {
  auto* p = find<Request>(self, id);
  return p && p->attempt == n && p->host;
}

template <class Request>
void finish(client_impl self, uint64_t id, answer_t<Request> a) {
  if (auto* p = find<Request>(self, id)) {
    if constexpr (std::is_same_v<Request, txn_request>)
      if (p->seq != 0)
        self->state.in_flight.erase(p->seq);
    p->promise.deliver(std::move(a));
    self->state.ops.erase(id);
  }
}

/// May this transaction be sent again after an attempt that may have
/// committed? Sessioned ones within the window (the store answers the
/// retry), else idempotent ones.
bool retryable(client_impl self, const pending<txn_request>& p) {
  if (p.seq != 0)
    return self->clock().now() - p.first_sent < session_retry_window;
  return idempotent(p.req);
}

/// Tries again after the backoff, or answers timeout if the deadline would
/// pass first.
template <class Request>
void retry_later(client_impl self, uint64_t id) {
  auto& st = self->state;
  auto* p = find<Request>(self, id);
  if (!p)
    return;
  p->redirects = 0;
  p->backoff = p->backoff.count() == 0 ? st.opts.backoff_first
                                       : std::min(p->backoff * 2, st.opts.backoff_max);
  // Equal jitter: half fixed, half random.
  auto half = p->backoff.count() / 2;
  std::uniform_int_distribution<int64_t> dist(0, half > 0 ? half : 0);
  caf::timespan wait{half + dist(st.rng)};
  if (self->clock().now() + wait >= p->deadline) {
    finish<Request>(self, id, at_deadline(st, *p));
    return;
  }
  self->delayed_send(self, wait, replication_atoms::retry_atom_v, id);
}

/// Follows a hint to the primary: at once while the redirects in a row stay
/// below the number of members (stale hints cannot loop), else with backoff.
template <class Request>
void redirect(client_impl self, uint64_t id, node_id asked, node_id hint) {
  auto& st = self->state;
  auto* p = find<Request>(self, id);
  if (!p)
    return;
  if (hint != no_node && hint != asked) {
    st.primary = hint;
    if (++p->redirects <= st.opts.members.size()) {
      attempt<Request>(self, id);
      return;
    }
  } else if (st.primary == asked) {
    st.primary = no_node;
  }
  retry_later<Request>(self, id);
}

/// Tells the caller's on_problem hook what an attempt ran into.
void problem(const client_state& st, node_id asked, const std::string& what) {
  if (st.opts.on_problem)
    st.opts.on_problem("node " + std::to_string(asked.value) + ": " + what);
}

std::string naming(node_id hint) {
  return hint == no_node ? std::string{", names no primary"}
                         : ", names node " + std::to_string(hint.value);
}

/// The attempt got no answer (timeout, dead host): forget that primary.
void lost(client_state& st, node_id asked) {
  if (st.primary == asked)
    st.primary = no_node;
}

void on_answer(client_impl self, uint64_t id, node_id asked, txn_result r) {
  auto& st = self->state;
  auto* p = find<txn_request>(self, id);
  if (!p)
    return;
  if (r.code == errc::not_primary || r.code == errc::syncing
      || r.code == errc::primary_changed)
    problem(st, asked, std::string{to_string(r.code)} + naming(r.primary));
  switch (r.code) {
  case errc::not_primary:
    redirect<txn_request>(self, id, asked, r.primary);
    return;
  case errc::syncing:
    st.primary = asked;
    retry_later<txn_request>(self, id);
    return;
  case errc::primary_changed:
    lost(st, asked);
    if (r.primary != no_node && r.primary != asked)
      st.primary = r.primary;
    if (!retryable(self, *p)) {
      finish<txn_request>(self, id,
                          txn_result{errc::outcome_unknown, r.at, st.primary, {}});
      return;
    }
    p->uncertain = true;
    retry_later<txn_request>(self, id);
    return;
  default:
    if (r.code == errc::ok)
      st.primary = asked;
    // A failed condition after an attempt that may have committed: the
    // earlier attempt's own write may be what fails it (a compare-and-set
    // that committed, then ran again). Nobody can tell: unknown.
    // (A sessioned one is answered from the store's session table instead:
    // the condition is checked only once.)
    if (r.code == errc::condition_failed && p->uncertain && p->seq == 0)
      r.code = errc::outcome_unknown;
    // The session op's own output is not the caller's.
    if (p->seq != 0 && !r.outputs.empty())
      r.outputs.erase(r.outputs.begin());
    finish<txn_request>(self, id, std::move(r));
  }
}

template <class Answer>
void on_read_answer(client_impl self, uint64_t id, node_id asked, Answer r) {
  using Request =
      std::conditional_t<std::is_same_v<Answer, read_result>, read_request, list_request>;
  auto& st = self->state;
  if (r.code == errc::ok && r.replica_role == role::syncing) {
    st.primary = asked;
    retry_later<Request>(self, id);
    return;
  }
  // A secondary's answer, or a node's refusal to answer as a primary that
  // lost its lease (runtime/node/replica_front.hpp): ask the primary.
  if ((r.code == errc::ok && r.replica_role != role::primary)
      || r.code == errc::not_primary) {
    problem(st, asked, "not the acting primary" + naming(r.primary));
    redirect<Request>(self, id, asked, r.primary);
    return;
  }
  if (r.code == errc::ok)
    st.primary = asked;
  finish<Request>(self, id, std::move(r));
}

template <class Request>
void on_error(client_impl self, uint64_t id, node_id asked, const caf::error& err) {
  auto& st = self->state;
  problem(st, asked, self->system().render(err));
  lost(st, asked);
  // CAF answers request_receiver_down only for a request the host never
  // handled (sent to a dead actor, or left in its mailbox when it stopped,
  // or a remote node found no such actor): safe to retry whatever it is.
  bool never_handled = err == caf::sec::request_receiver_down;
  if constexpr (std::is_same_v<Request, txn_request>) {
    if (never_handled) {
      retry_later<Request>(self, id);
      return;
    }
    auto* p = find<txn_request>(self, id);
    if (p && !retryable(self, *p)) {
      finish<txn_request>(self, id, txn_result{errc::outcome_unknown, {}, no_node, {}});
      return;
    }
    if (p)
      p->uncertain = true;
  }
  retry_later<Request>(self, id);
}

template <class Request>
void attempt(client_impl self, uint64_t id) {
  auto& st = self->state;
  auto* p = find<Request>(self, id);
  if (!p)
    return;
  auto now = self->clock().now();
  if (now >= p->deadline) {
    finish<Request>(self, id, at_deadline(st, *p));
    return;
  }
  // A sessioned transaction that may have committed is not sent again past
  // the window: the store may no longer know its session.
  if constexpr (std::is_same_v<Request, txn_request>)
    if (p->seq != 0 && p->uncertain && !retryable(self, *p)) {
      finish<Request>(self, id, txn_result{errc::outcome_unknown, {}, st.primary, {}});
      return;
    }
  node_id target = st.primary;
  caf::actor host;
  if (target != no_node) {
    host = st.opts.lookup ? st.opts.lookup(target) : caf::actor{};
    if (!host) {
      problem(st, target, "the primary last named, not connected");
      lost(st, target);
    }
  }
  // No primary known, or it cannot be reached now: the next member in turn
  // that can (one that is not connected would only cost a backoff).
  for (size_t i = 0; !host && i < st.opts.members.size(); ++i) {
    target = st.opts.members[st.probe % st.opts.members.size()];
    ++st.probe;
    host = st.opts.lookup ? st.opts.lookup(target) : caf::actor{};
  }
  p->target = target;
  if (!host) {
    if (st.opts.on_problem)
      st.opts.on_problem("no member connected");
    retry_later<Request>(self, id);
    return;
  }
  p->host = host.address();
  auto n = ++p->attempt;
  auto wait = std::min<caf::timespan>(st.opts.attempt_timeout, p->deadline - now);
  self->request(host, wait, p->req)
      .then(
          [self, id, target, n](answer_t<Request>& r) {
            if (!current<Request>(self, id, n))
              return;
            find<Request>(self, id)->host = nullptr;
            if constexpr (std::is_same_v<Request, txn_request>)
              on_answer(self, id, target, std::move(r));
            else
              on_read_answer(self, id, target, std::move(r));
          },
          [self, id, target, n](caf::error& err) {
            if (!current<Request>(self, id, n))
              return;
            find<Request>(self, id)->host = nullptr;
            on_error<Request>(self, id, target, err);
          });
  // A host whose actor or connection dies answers nothing: its down_msg
  // ends the attempts in flight there at once instead of attempt_timeout
  // later (a killed primary's node drops its link within milliseconds).
  // Monitored after the request is sent: a host that is already dead then
  // bounces the request (request_receiver_down: never handled, retried)
  // before its down_msg arrives.
  if (st.monitored.insert(host.address()).second)
    self->monitor(host);
}

template <class Request>
caf::result<answer_t<Request>> start(client_impl self, Request req) {
  auto& st = self->state;
  if (st.opts.members.empty()) {
    answer_t<Request> a;
    a.code = errc::bad_request;
    return a;
  }
  auto id = st.next_id++;
  pending<Request> p;
  p.req = std::move(req);
  p.promise = self->make_response_promise<answer_t<Request>>();
  p.deadline = self->clock().now() + st.opts.deadline;
  if constexpr (std::is_same_v<Request, txn_request>) {
    if (st.opts.sessions && !p.req.ops.empty() && session_eligible(p.req)) {
      p.seq = st.next_seq++;
      st.in_flight.insert(p.seq);
      p.first_sent = self->clock().now();
      session_call c;
      c.client = st.session_id;
      c.seq = p.seq;
      c.waiting_from = *st.in_flight.begin();
      p.req.ops.insert(p.req.ops.begin(), make_session_op(c));
    }
  }
  auto rp = p.promise;
  st.ops.emplace(id, std::move(p));
  attempt<Request>(self, id);
  return rp;
}

caf::behavior make_client(client_impl self, client_options opts) {
  self->state.opts = std::move(opts);
  self->state.primary = self->state.opts.primary;
  self->state.rng.seed(static_cast<std::minstd_rand::result_type>(self->state.opts.seed));
  self->state.session_id =
      self->state.opts.session_id.empty()
          ? random_session_id()
          : self->state.opts.session_id.substr(0, max_client_id_bytes);
  self->set_default_handler(caf::drop);
  self->set_down_handler([self](const caf::down_msg& dm) {
    auto& st = self->state;
    st.monitored.erase(dm.source);
    // The attempts in flight at that host end now, as if unanswered.
    std::vector<uint64_t> ended;
    for (auto& [id, op] : st.ops)
      std::visit(
          [&, id = id](auto& p) {
            if (p.host && p.host == dm.source) {
              p.host = nullptr;
              ended.push_back(id);
            }
          },
          op);
    for (auto id : ended) {
      auto i = st.ops.find(id);
      if (i == st.ops.end())
        continue;
      std::visit(
          [&](auto& p) {
            using P = std::decay_t<decltype(p)>;
            on_error<decltype(P::req)>(self, id, p.target, dm.reason);
          },
          i->second);
    }
  });
  return {
      [self](txn_request& req) { return start(self, std::move(req)); },
      [self](read_request& req) { return start(self, std::move(req)); },
      [self](list_request& req) { return start(self, std::move(req)); },
      [self](replication_atoms::retry_atom, uint64_t id) {
        auto i = self->state.ops.find(id);
        if (i == self->state.ops.end())
          return;
        std::visit(
            [&](auto& p) {
              using P = std::decay_t<decltype(p)>;
              attempt<decltype(P::req)>(self, id);
            },
            i->second);
      },
  };
}

} // namespace

caf::actor spawn_client(caf::actor_system& sys, client_options opts) {
  return sys.spawn(make_client, std::move(opts));
}

// -- kv_client -------------------------------------------------------------------

kv_client::kv_client(caf::actor_system& sys, client_options opts)
    : sys_(sys), opts_(opts), client_(spawn_client(sys, std::move(opts))) {}

kv_client::~kv_client() {
  caf::anon_send_exit(client_, caf::exit_reason::user_shutdown);
}

template <class Result, class Request>
Result kv_client::ask(const Request& req) {
  Result out;
  out.code = errc::timeout;
  caf::scoped_actor self{sys_};
  // The client actor answers timeout at the deadline; the margin covers its
  // mailbox and scheduling, never an attempt in flight.
  self->request(client_, opts_.deadline + margin, req)
      .receive([&](Result& r) { out = std::move(r); }, [](caf::error&) {});
  return out;
}

read_result kv_client::get(const std::string& collection, const std::string& key) {
  return ask<read_result>(read_request{collection, key});
}

list_result kv_client::list(const std::string& collection, const std::string& prefix,
                            uint32_t limit, const std::string& start_after) {
  return ask<list_result>(list_request{collection, prefix, start_after, limit});
}

txn_result kv_client::put(const std::string& collection, const std::string& key,
                          const std::string& value, commit_mode mode) {
  return transact(txn_request{{txn_op{collection, key, value, op_kind::put}}, mode});
}

txn_result kv_client::remove(const std::string& collection, const std::string& key) {
  return transact(txn_request{{txn_op{collection, key, {}, op_kind::remove}}, {}});
}

txn_result kv_client::enqueue(const std::string& queue, const std::string& value) {
  return transact(txn_request{{txn_op{queue, {}, value, op_kind::enqueue}}, {}});
}

txn_result kv_client::dequeue(const std::string& queue) {
  return transact(txn_request{{txn_op{queue, {}, {}, op_kind::dequeue}}, {}});
}

txn_result kv_client::compare_and_set(const std::string& collection,
                                      const std::string& key,
                                      const std::optional<std::string>& expected,
                                      const std::optional<std::string>& desired) {
  txn_request req;
  if (expected)
    req.ops.push_back(txn_op{collection, key, *expected, op_kind::expect_value});
  else
    req.ops.push_back(txn_op{collection, key, {}, op_kind::expect_absent});
  if (desired)
    req.ops.push_back(txn_op{collection, key, *desired, op_kind::put});
  else
    req.ops.push_back(txn_op{collection, key, {}, op_kind::remove});
  return transact(req);
}

txn_result kv_client::transact(const txn_request& req) {
  return ask<txn_result>(req);
}

} // namespace conclave::replication
