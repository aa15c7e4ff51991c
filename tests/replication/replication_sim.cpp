#include "tests/replication/replication_sim.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

namespace conclave::replication::sim {

namespace {

using election::to_string;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using store::to_string;

/// A checkpoint streamed from one host to another (send_snapshot effect):
/// the applied records through `at`.
struct snapshot_msg {
  node_id from;
  term t;
  lsn at;
  term at_term;
  std::vector<entry> state;
};

using net_msg = std::variant<message, snapshot_msg>;

std::string payload_of(uint64_t txn) {
  return "t" + std::to_string(txn);
}

/// One replica's host: the core, its disk and its applied state.
struct node {
  node_id id;
  bool up = true;
  uint32_t incarnation = 1;
  std::unique_ptr<replica_core> core;
  // disk: durable promised term, checkpoint (base + applied through base),
  // log records after base (synced through `synced`, the rest lost in a crash)
  term persisted;
  lsn base;
  term base_term;
  std::vector<entry> disk;
  lsn synced;
  bool sync_pending = false;
  // state machine: applied[i] is the record at lsn i + 1
  std::vector<entry> applied;
  /// Frozen (SIGSTOP) until then: inputs wait, the disk goes on.
  timestamp paused_until{0};
  /// The amnesia mark is on the disk: the log was lost and not yet rebuilt.
  bool marked = false;
  // timer
  uint64_t timer_gen = 0;
  std::optional<timestamp> timer_at;

  lsn disk_last() const { return lsn{base.value + disk.size()}; }
};

class world {
public:
  explicit world(const sim_options& o)
      : opts_(o), rng_(o.seed * 0x9E3779B97F4A7C15ull + 7) {
    result_.seed = o.seed;
    for (uint64_t i = 1; i <= o.replicas; ++i)
      ids_.push_back(node_id{i});
    nodes_.resize(o.replicas);
    for (size_t i = 0; i < o.replicas; ++i) {
      nodes_[i].id = ids_[i];
      nodes_[i].core = std::make_unique<replica_core>(ids_[i], ids_, opts_.core);
    }
    group_.assign(o.replicas, 0);
  }

  sim_result run() {
    auto heal_at = timestamp{0} + opts_.faults_for;
    end_ = heal_at + opts_.heal_for;
    quiet_from_ = end_ - milliseconds(100);
    plan_faults(heal_at);
    at(timestamp{0}, [this] { oracle(); });
    at(heal_at, [this] { heal(); });
    at(timestamp{0} + microseconds(500), [this] { client(); });
    while (!queue_.empty() && result_.violations.size() < 5) {
      std::pop_heap(queue_.begin(), queue_.end(), later);
      auto ev = std::move(queue_.back());
      queue_.pop_back();
      if (ev.at > end_)
        break;
      now_ = ev.at;
      ev.fn();
      if (++result_.events > 500'000) {
        violation("event budget exceeded (livelock?)");
        break;
      }
    }
    now_ = end_;
    if (result_.violations.empty())
      check_end();
    return result_;
  }

private:
  // -- events -------------------------------------------------------------------

  struct event {
    timestamp at;
    uint64_t seq;
    std::function<void()> fn;
  };
  static bool later(const event& a, const event& b) {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
  void at(timestamp t, std::function<void()> fn) {
    queue_.push_back(event{t, ++seq_, std::move(fn)});
    std::push_heap(queue_.begin(), queue_.end(), later);
  }
  duration uniform(duration lo, duration hi) {
    std::uniform_int_distribution<int64_t> d(lo.count(), hi.count());
    return duration{d(rng_)};
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool faulty() const { return now_ < timestamp{0} + opts_.faults_for; }

  node& at_node(node_id id) { return nodes_[id.value - 1]; }

  void trace(const std::string& s) {
    if (opts_.trace)
      std::printf("%10.3f ms  %s\n",
                  std::chrono::duration<double, std::milli>(now_).count(), s.c_str());
  }

  void violation(const std::string& s) {
    std::ostringstream os;
    os << "t=" << std::chrono::duration_cast<microseconds>(now_).count() << "us: " << s;
    result_.violations.push_back(os.str());
  }

  // -- network ------------------------------------------------------------------

  bool blocked(node_id a, node_id b) const {
    return group_[a.value - 1] != group_[b.value - 1];
  }

  void send(node_id from, node_id to, net_msg m) {
    ++result_.messages;
    if (blocked(from, to))
      return;
    int copies = 1;
    if (faulty()) {
      if (chance(opts_.loss))
        return;
      if (chance(opts_.dup))
        copies = 2;
    }
    for (int i = 0; i < copies; ++i) {
      auto delay = uniform(opts_.delay_min, opts_.delay_max);
      at(now_ + delay, [this, from, to, m] { deliver(from, to, m); });
    }
  }

  void deliver(node_id from, node_id to, const net_msg& m) {
    auto& n = at_node(to);
    if (!n.up || blocked(from, to))
      return;
    if (now_ < n.paused_until) {
      // A frozen process reads its socket when it resumes.
      at(n.paused_until + microseconds(100),
         [this, from, to, m] { deliver(from, to, m); });
      return;
    }
    if (auto* msg = std::get_if<message>(&m)) {
      n.core->handle(*msg, now_);
    } else {
      auto& s = std::get<snapshot_msg>(m);
      bool took = n.core->snapshot_offered(s.from, s.t, s.at, s.at_term, now_);
      trace("node " + to_string(n.id) + (took ? " takes" : " refuses") + " snapshot at "
            + to_string(s.at) + " from " + to_string(s.from));
      if (took) {
        for (auto& e : s.state)
          check_applied(n, e);
        n.applied = s.state;
        n.base = s.at;
        n.base_term = s.at_term;
        n.disk.clear();
        n.synced = s.at;
      }
    }
    settle(n);
  }

  // -- hosts --------------------------------------------------------------------

  /// Executes the core's effects in order, then sends its messages, then arms
  /// its timer.
  void settle(node& n) {
    auto& c = *n.core;
    while (!c.effects().empty() || !c.outbox().empty()) {
      auto effects = std::move(c.effects());
      c.effects().clear();
      for (auto& e : effects)
        execute(n, e);
      auto out = std::move(c.outbox());
      c.outbox().clear();
      for (auto& o : out)
        send(n.id, o.to, net_msg{std::move(o.msg)});
    }
    arm_timer(n);
  }

  void execute(node& n, const effect& e) {
    if (auto* p = std::get_if<persist_term>(&e)) {
      n.persisted = p->t;
    } else if (auto* a = std::get_if<append_records>(&e)) {
      for (auto& r : a->entries) {
        if (r.at.value != n.disk_last().value + 1) {
          violation("host: append out of order on node " + to_string(n.id));
          return;
        }
        n.disk.push_back(r);
      }
      schedule_sync(n);
    } else if (auto* t = std::get_if<truncate_after>(&e)) {
      if (t->after < n.base) {
        violation("host: truncation below the checkpoint on node " + to_string(n.id));
        return;
      }
      if (t->after < n.disk_last())
        n.disk.resize(t->after.value - n.base.value);
      n.synced = std::min(n.synced, t->after);
    } else if (auto* ap = std::get_if<apply_through>(&e)) {
      for (auto k = n.applied.size() + 1; k <= ap->through.value; ++k) {
        if (k <= n.base.value || k > n.disk_last().value) {
          violation("host: apply of a record the log does not hold on node "
                    + to_string(n.id));
          return;
        }
        const auto& r = n.disk[k - n.base.value - 1];
        check_applied(n, r);
        n.applied.push_back(r);
      }
    } else if (auto* c = std::get_if<commit_acked>(&e)) {
      on_ack(n, *c);
    } else if (std::get_if<txn_failed>(&e)) {
      ++result_.failed;
    } else if (auto* s = std::get_if<send_snapshot>(&e)) {
      ++result_.snapshots;
      trace("node " + to_string(n.id) + " sends snapshot at " + to_string(s->at) + " to "
            + to_string(s->to));
      if (s->at.value > n.applied.size()) {
        violation("host: snapshot beyond the applied state on node " + to_string(n.id));
        return;
      }
      snapshot_msg m{n.id, n.core->promised(), s->at, s->at_term,
                     std::vector<entry>(n.applied.begin(),
                                        n.applied.begin()
                                            + static_cast<std::ptrdiff_t>(s->at.value))};
      send(n.id, s->to, net_msg{std::move(m)});
    } else if (auto* f = std::get_if<sync_finished>(&e)) {
      ++result_.syncs_finished;
      trace("node " + to_string(n.id) + " serves term " + to_string(f->t) + " chosen "
            + to_string(f->chosen));
      check_primary_log(n, "after its sync phase");
    }
  }

  void schedule_sync(node& n) {
    if (n.sync_pending)
      return;
    n.sync_pending = true;
    auto id = n.id;
    auto inc = n.incarnation;
    at(now_ + uniform(microseconds(200), milliseconds(2)),
       [this, id, inc] { synced(id, inc); });
  }

  /// The disk finished a sync; a frozen process learns it when it resumes.
  void synced(node_id id, uint32_t inc) {
    auto& m = at_node(id);
    if (!m.up || m.incarnation != inc)
      return;
    if (now_ < m.paused_until) {
      at(m.paused_until, [this, id, inc] { synced(id, inc); });
      return;
    }
    m.sync_pending = false;
    m.synced = m.disk_last();
    m.core->log_durable(m.synced, now_);
    settle(m);
  }

  void arm_timer(node& n) {
    auto d = n.core->next_deadline();
    if (!d) {
      n.timer_at.reset();
      return;
    }
    if (n.timer_at && *n.timer_at == *d)
      return;
    n.timer_at = d;
    auto gen = ++n.timer_gen;
    auto id = n.id;
    at(std::max(*d, now_ + microseconds(1)), [this, id, gen] {
      auto& m = at_node(id);
      if (!m.up || m.timer_gen != gen)
        return;
      if (now_ < m.paused_until) {
        // Fires when the process resumes.
        m.timer_at = m.paused_until;
        at(m.paused_until, [this, id, gen] {
          auto& k = at_node(id);
          if (!k.up || k.timer_gen != gen)
            return;
          k.timer_at.reset();
          k.core->tick(now_);
          settle(k);
        });
        return;
      }
      m.timer_at.reset();
      m.core->tick(now_);
      settle(m);
    });
  }

  // -- faults -------------------------------------------------------------------

  void crash(node& n) {
    if (!n.up)
      return;
    ++result_.crashes;
    trace("crash node " + to_string(n.id));
    n.up = false;
    n.paused_until = timestamp{0};
    // The host removes the mark once the core is rebuilt (durably).
    n.marked = n.core && n.core->amnesiac();
    n.core.reset();
    n.disk.resize(n.synced.value - n.base.value); // the unsynced tail is lost
    n.applied.resize(n.base.value);               // the state is the checkpoint
    // Damage on a minority only: with a majority amnesiac no replica set can
    // know its committed records (they wait for an operator, documented).
    size_t marked = 0;
    for (auto& o : nodes_)
      marked += (o.core ? o.core->amnesiac() : o.marked) ? 1 : 0;
    if (opts_.amnesia > 0 && !n.marked && marked + 1 <= (nodes_.size() - 1) / 2
        && chance(opts_.amnesia)) {
      // The log and the checkpoint are damaged and moved aside: nothing but
      // the promised term is left.
      ++result_.amnesias;
      trace("node " + to_string(n.id) + " loses its log");
      n.disk.clear();
      n.applied.clear();
      n.base = lsn{};
      n.base_term = term{};
      n.synced = lsn{};
      n.marked = true;
    }
    n.sync_pending = false;
    n.timer_at.reset();
    ++n.timer_gen;
  }

  void restart(node& n) {
    if (n.up)
      return;
    trace("restart node " + to_string(n.id));
    n.up = true;
    ++n.incarnation;
    recovered_state st{n.persisted, n.base, n.base_term, n.disk,
                       n.marked && !opts_.amnesia_unmarked};
    n.core = std::make_unique<replica_core>(n.id, ids_, opts_.core, std::move(st));
    settle(n);
  }

  void checkpoint(node& n) {
    if (!n.up || now_ < n.paused_until)
      return;
    auto c = n.core->commit_lsn();
    if (c <= n.base)
      return;
    n.core->checkpointed(c);
    auto nb = n.core->log().base();
    n.disk.erase(n.disk.begin(),
                 n.disk.begin() + static_cast<std::ptrdiff_t>(nb.value - n.base.value));
    n.base = nb;
    n.base_term = n.core->log().base_term();
    n.synced = std::max(n.synced, nb);
  }

  void plan_faults(timestamp heal_at) {
    for (auto t = timestamp{0} + uniform(milliseconds(10), milliseconds(60)); t < heal_at;
         t += uniform(milliseconds(20), milliseconds(80))) {
      at(t, [this, heal_at] {
        auto& n = nodes_[pick(nodes_.size())];
        if (!n.up)
          return;
        crash(n);
        auto back = now_ + uniform(milliseconds(5), milliseconds(60));
        auto id = n.id;
        if (back < heal_at)
          at(back, [this, id] { restart(at_node(id)); });
      });
    }
    for (auto t = timestamp{0} + uniform(milliseconds(10), milliseconds(80)); t < heal_at;
         t += uniform(milliseconds(30), milliseconds(100))) {
      at(t, [this, heal_at] {
        std::vector<int> g(nodes_.size());
        for (auto& x : g)
          x = static_cast<int>(pick(2));
        group_ = g;
        trace("partition");
        auto until =
            std::min(now_ + uniform(milliseconds(10), milliseconds(60)), heal_at);
        at(until, [this, g] {
          if (group_ == g)
            group_.assign(nodes_.size(), 0);
        });
      });
    }
    for (auto t = timestamp{0} + uniform(milliseconds(20), milliseconds(120));
         t < heal_at; t += uniform(milliseconds(40), milliseconds(120))) {
      at(t, [this, heal_at] {
        auto& n = nodes_[pick(nodes_.size())];
        if (!n.up)
          return;
        n.paused_until =
            std::min(now_ + uniform(milliseconds(5), milliseconds(80)), heal_at);
        trace("pause node " + to_string(n.id));
      });
    }
    for (auto t = timestamp{0} + uniform(milliseconds(5), milliseconds(40)); t < end_;
         t += uniform(milliseconds(20), milliseconds(60)))
      at(t, [this] { checkpoint(nodes_[pick(nodes_.size())]); });
  }

  void heal() {
    trace("heal");
    group_.assign(nodes_.size(), 0);
    for (auto& n : nodes_)
      restart(n);
  }

  // -- oracle: the election ------------------------------------------------------

  /// The up nodes that can all reach each other and form a majority, if any.
  std::vector<node_id> connected_majority() const {
    std::map<int, std::vector<node_id>> by_group;
    for (auto& n : nodes_)
      if (n.up && now_ >= n.paused_until)
        by_group[group_[n.id.value - 1]].push_back(n.id);
    for (auto& [g, members] : by_group)
      if (members.size() >= nodes_.size() / 2 + 1)
        return members;
    return {};
  }

  void oracle() {
    bool primary_ok = false;
    if (primary_ != no_node) {
      auto& p = at_node(primary_);
      auto maj = connected_majority();
      primary_ok = p.up && now_ >= p.paused_until
                   && p.core->current_role() != role::secondary
                   && std::find(maj.begin(), maj.end(), primary_) != maj.end();
    }
    if (!primary_ok || (faulty() && chance(opts_.change_primary)))
      elect();
    at(now_ + uniform(milliseconds(10), milliseconds(40)), [this] { oracle(); });
  }

  void elect() {
    auto maj = connected_majority();
    if (maj.empty())
      return;
    auto id = maj[pick(maj.size())];
    auto& n = at_node(id);
    term t{++epoch_, id, n.incarnation};
    if (!n.core->become_primary(t, now_))
      return;
    ++result_.primaries;
    trace("elect node " + to_string(id) + " term " + to_string(t));
    if (primary_ != no_node && primary_ != id) {
      auto& old = at_node(primary_);
      // The old leader's lease runs out now, or it never hears (partitioned
      // or frozen): then only the term fences it.
      if (old.up && now_ >= old.paused_until && chance(0.5)) {
        old.core->step_down(now_);
        settle(old);
      }
    }
    primary_ = id;
    settle(n);
  }

  // -- clients ----------------------------------------------------------------------

  void client() {
    if (now_ < quiet_from_) {
      if (primary_ != no_node) {
        auto& p = at_node(primary_);
        if (p.up && now_ >= p.paused_until && p.core->serving()) {
          auto batch = 1 + pick(3);
          for (size_t i = 0; i < batch; ++i) {
            auto txn = ++txns_;
            auto mode = opts_.weak_acks_counted_as_strong || chance(0.1)
                            ? commit_mode::weak
                            : commit_mode::strong;
            p.core->propose(txn_ref{txn}, payload_of(txn), mode, now_);
          }
          p.core->flush(now_);
          settle(p);
          check_window(p);
        }
      }
      at(now_ + uniform(microseconds(500), milliseconds(3)), [this] { client(); });
    }
  }

  // -- checkers -----------------------------------------------------------------------

  static bool same(const entry& a, const entry& b) {
    return a.at == b.at && a.t == b.t && a.kind == b.kind && a.payload == b.payload;
  }

  /// Agreement: one record per lsn among everything any replica applied.
  /// Also notes the lowest term under which the record was known committed
  /// (the applier's promised term bounds it from above).
  void check_applied(const node& n, const entry& e) {
    auto under = n.core ? n.core->promised() : term{};
    auto [it, fresh] = applied_.emplace(e.at.value, committed{e, under});
    if (!fresh && !same(it->second.e, e))
      violation("agreement: node " + to_string(n.id) + " applied " + describe(e)
                + " where " + describe(it->second.e) + " was applied before");
    if (!fresh && under < it->second.under)
      it->second.under = under;
  }

  void on_ack(const node& n, const commit_acked& c) {
    bool strong = c.mode == commit_mode::strong || opts_.weak_acks_counted_as_strong;
    if (!strong)
      return;
    ++result_.acked;
    if (now_ >= timestamp{0} + opts_.faults_for)
      ++result_.acked_after_heal;
    acked_[c.txn.value] = acked{c.at.value, n.core->promised()};
    if (!holds(n, c.at, payload_of(c.txn.value)))
      violation("ack: node " + to_string(n.id) + " acknowledged txn "
                + std::to_string(c.txn.value) + " at lsn " + to_string(c.at)
                + " but holds another record there");
  }

  /// Flow control: what a secondary has in flight stays within its window
  /// (plus the one batch that may cross it).
  void check_window(const node& p) {
    auto bound = opts_.core.max_inflight_bytes + opts_.core.max_batch_bytes;
    for (auto& l : p.core->lag())
      if (l.inflight_bytes > bound)
        violation("flow control: " + std::to_string(l.inflight_bytes)
                  + " bytes in flight to node " + to_string(l.peer));
  }

  /// Whether node n's checkpointed state or log has `payload` at `at`.
  static bool holds(const node& n, lsn at, const std::string& payload) {
    auto* e = record_at(n, at);
    return e != nullptr && e->payload == payload;
  }

  /// Whether node n's checkpointed state or log has exactly `r` at its lsn.
  static bool holds(const node& n, const entry& r) {
    auto* e = record_at(n, r.at);
    return e != nullptr && same(*e, r);
  }

  static const entry* record_at(const node& n, lsn at) {
    if (at <= n.base)
      return at.value <= n.applied.size() ? &n.applied[at.value - 1] : nullptr;
    const auto& log = n.core->log();
    return at <= log.last() ? &log.at(at) : nullptr;
  }

  /// Durability: a primary of term T holds every record acknowledged or
  /// applied as committed under a lower term. (A primary of a lower term that
  /// finishes its sync late is deposed already: it can commit nothing.)
  void check_primary_log(const node& n, const std::string& when) {
    const auto& t = n.core->promised();
    for (auto& [txn, a] : acked_)
      if (a.under < t && !holds(n, lsn{a.at}, payload_of(txn)))
        violation("durability: acknowledged txn " + std::to_string(txn) + " (lsn "
                  + std::to_string(a.at) + ", term " + to_string(a.under)
                  + ") is missing from primary " + to_string(n.id) + " of term "
                  + to_string(t) + " " + when);
    for (auto& [at, c] : applied_)
      if (c.under < t && !holds(n, c.e))
        violation("durability: applied " + describe(c.e) + " is missing from primary "
                  + to_string(n.id) + " of term " + to_string(t) + " " + when);
  }

  void check_end() {
    if (primary_ == no_node) {
      violation("liveness: no primary after the faults healed");
      return;
    }
    auto& p = at_node(primary_);
    if (!p.core->serving()) {
      violation("liveness: primary " + to_string(p.id) + " does not serve at the end");
      return;
    }
    check_primary_log(p, "at the end");
    for (auto& [txn, a] : acked_)
      if (!holds(p, lsn{a.at}, payload_of(txn)))
        violation("durability: acknowledged txn " + std::to_string(txn)
                  + " is missing from the final primary");
    if (result_.acked_after_heal == 0 && !opts_.weak_acks_counted_as_strong)
      violation("liveness: no strong commit acknowledged after the faults healed");
    if (p.core->commit_lsn() != p.core->log().last())
      violation("liveness: primary committed through " + to_string(p.core->commit_lsn())
                + " of " + to_string(p.core->log().last()));
    auto lag = p.core->lag();
    for (auto& n : nodes_) {
      if (n.applied.size() == p.core->commit_lsn().value)
        continue;
      std::string state = " (its log " + to_string(n.core->log().base()) + ".."
                          + to_string(n.core->log().last()) + ", durable "
                          + to_string(n.core->durable_lsn()) + ", role "
                          + std::string(replication::to_string(n.core->current_role()));
      for (auto& l : lag)
        if (l.peer == n.id)
          state += "; primary sees it " + std::to_string(l.records) + " records behind, "
                   + std::to_string(l.inflight_bytes) + " bytes in flight"
                   + (l.snapshot_pending ? ", snapshot pending" : "");
      violation("liveness: node " + to_string(n.id) + " applied "
                + std::to_string(n.applied.size()) + " records, the primary committed "
                + to_string(p.core->commit_lsn()) + state + ")");
    }
  }

  static std::string describe(const entry& e) {
    return "lsn " + to_string(e.at) + " term " + to_string(e.t) + " "
           + (e.kind == entry_kind::new_primary ? std::string("new_primary") : e.payload);
  }

  sim_options opts_;
  std::mt19937_64 rng_;
  sim_result result_;
  std::vector<node_id> ids_;
  std::vector<node> nodes_;
  std::vector<int> group_;
  std::vector<event> queue_;
  uint64_t seq_ = 0;
  timestamp now_{0};
  timestamp end_{0};
  timestamp quiet_from_{0};
  node_id primary_ = no_node;
  uint64_t epoch_ = 0;
  uint64_t txns_ = 0;
  struct committed {
    entry e;
    term under;
  };
  struct acked {
    uint64_t at;
    term under;
  };
  std::map<uint64_t, committed> applied_; ///< lsn -> the record applied there
  std::map<uint64_t, acked> acked_;       ///< txn -> strong acknowledgement
};

} // namespace

std::string sim_result::summary() const {
  std::ostringstream os;
  os << "seed " << seed << ": acked " << acked << " (" << acked_after_heal
     << " after heal), failed " << failed << ", primaries " << primaries << ", syncs "
     << syncs_finished << ", crashes " << crashes << " (amnesiac " << amnesias << ")"
     << ", snapshots " << snapshots << ", messages " << messages << ", events " << events;
  for (size_t i = 0; i < violations.size() && i < 5; ++i)
    os << "\n  " << violations[i];
  if (violations.size() > 5)
    os << "\n  ... and " << violations.size() - 5 << " more";
  return os.str();
}

sim_result run_schedule(const sim_options& opts) {
  world w{opts};
  return w.run();
}

} // namespace conclave::replication::sim
