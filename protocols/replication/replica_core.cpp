#include "protocols/replication/replica_core.hpp"

#include <algorithm>

namespace conclave::replication {

// -- names ---------------------------------------------------------------------

std::string_view to_string(entry_kind k) {
  switch (k) {
  case entry_kind::transaction:
    return "transaction";
  case entry_kind::new_primary:
    return "new_primary";
  }
  return "unknown";
}

std::string_view to_string(role r) {
  switch (r) {
  case role::secondary:
    return "secondary";
  case role::syncing:
    return "syncing";
  case role::primary:
    return "primary";
  }
  return "unknown";
}

std::string_view to_string(errc e) {
  switch (e) {
  case errc::ok:
    return "ok";
  case errc::not_primary:
    return "not_primary";
  case errc::syncing:
    return "syncing";
  case errc::primary_changed:
    return "primary_changed";
  case errc::bad_request:
    return "bad_request";
  case errc::too_large:
    return "too_large";
  case errc::condition_failed:
    return "condition_failed";
  case errc::unknown_collection:
    return "unknown_collection";
  case errc::wrong_kind:
    return "wrong_kind";
  case errc::timeout:
    return "timeout";
  case errc::outcome_unknown:
    return "outcome_unknown";
  case errc::lease_busy:
    return "lease_busy";
  case errc::stale_token:
    return "stale_token";
  case errc::sessions_full:
    return "sessions_full";
  }
  return "unknown";
}

std::string_view to_string(drop_reason r) {
  switch (r) {
  case drop_reason::non_member:
    return "non_member";
  case drop_reason::stale_term:
    return "stale_term";
  case drop_reason::lsn_gap:
    return "lsn_gap";
  case drop_reason::unexpected:
    return "unexpected";
  case drop_reason::no_match:
    return "no_match";
  case drop_reason::count_:
    break;
  }
  return "unknown";
}

// -- construction ----------------------------------------------------------------

replica_core::peer_state replica_core::fresh_peer(node_id id) {
  peer_state p;
  p.id = id;
  return p;
}

replica_core::replica_core(node_id self, std::vector<node_id> members, replica_config cfg,
                           recovered_state recovered)
    : self_(self), members_(std::move(members)), cfg_(cfg), promised_(recovered.promised),
      log_(recovered.base, recovered.base_term, std::move(recovered.entries)) {
  std::sort(members_.begin(), members_.end());
  members_.erase(std::unique(members_.begin(), members_.end()), members_.end());
  if (!std::binary_search(members_.begin(), members_.end(), self_))
    members_.insert(std::lower_bound(members_.begin(), members_.end(), self_), self_);
  for (auto m : members_)
    if (m != self_)
      peers_.push_back(fresh_peer(m));
  durable_ = log_.last();
  commit_ = log_.base();
  amnesiac_ = recovered.amnesiac;
}

// -- inputs ----------------------------------------------------------------------

bool replica_core::become_primary(const term& t, timestamp now) {
  if (t.leader != self_)
    return false;
  if (t == promised_ && role_ != role::secondary)
    return true;
  if (t <= promised_)
    return false;
  if (role_ != role::secondary) {
    ++stats_.step_downs;
    fail_pending();
  }
  promised_ = t;
  effects_.push_back(persist_term{t});
  match_hi_ = lsn{};
  role_ = role::syncing;
  start_sync(now);
  return true;
}

void replica_core::step_down(timestamp now) {
  if (role_ == role::secondary)
    return;
  ++stats_.step_downs;
  fail_pending();
  become_secondary(now);
}

void replica_core::handle(const message& m, timestamp now) {
  ++stats_.received[m.index()];
  auto from = sender(m);
  if (from == self_ || peer(from) == nullptr) {
    drop(drop_reason::non_member);
    return;
  }
  const auto& t = term_of(m);
  if (t < promised_) {
    drop(drop_reason::stale_term);
    bool request = std::holds_alternative<sync_request>(m)
                   || std::holds_alternative<fetch_request>(m)
                   || std::holds_alternative<append>(m);
    if (request)
      send(from, stale_term{self_, promised_});
    return;
  }
  if (promised_ < t)
    observe_higher(t, now);
  if (std::holds_alternative<stale_term>(m))
    return;
  switch (role_) {
  case role::secondary:
    step_secondary(m, now);
    break;
  case role::syncing:
    step_syncing(m, now);
    break;
  case role::primary:
    step_primary(m, now);
    break;
  }
  check_healed();
}

std::variant<lsn, errc> replica_core::propose(txn_ref txn, std::string payload,
                                              commit_mode mode, timestamp) {
  if (role_ == role::secondary)
    return errc::not_primary;
  if (!serving())
    return errc::syncing;
  entry e{lsn{log_.last().value + 1}, promised_, entry_kind::transaction,
          std::move(payload)};
  auto at = e.at;
  std::vector<entry> es;
  es.push_back(std::move(e));
  append_local(std::move(es));
  pending_[at.value] = pending_txn{txn, mode};
  return at;
}

void replica_core::flush(timestamp now) {
  if (role_ != role::primary)
    return;
  for (auto& p : peers_)
    replicate(p, now);
  update_commit(now);
}

void replica_core::log_durable(lsn through, timestamp now) {
  if (through > log_.last())
    through = log_.last();
  if (through <= durable_)
    return;
  durable_ = through;
  check_healed();
  if (role_ == role::secondary) {
    send_ack(now);
  } else if (role_ == role::primary) {
    ack_weak();
    update_commit(now);
  }
}

bool replica_core::snapshot_offered(node_id from, const term& t, lsn at,
                                    const term& at_term, timestamp now) {
  if (peer(from) == nullptr) {
    drop(drop_reason::non_member);
    return false;
  }
  if (t < promised_) {
    drop(drop_reason::stale_term);
    return false;
  }
  if (promised_ < t)
    observe_higher(t, now);
  // If our log holds (at, at_term), it holds the checkpoint's records (log
  // matching): keep the log, which may hold durable records after `at` that
  // count towards commits, and apply through `at` from it. Otherwise none of
  // our records from `at` on is committed (a committed one would match the
  // checkpoint's prefix), so replacing the log loses no commit.
  bool have = log_.matches(at, at_term);
  if (role_ == role::syncing && chosen_ready_ && from == fetch_source_) {
    if (at < fetch_next_ || at <= commit_ || at > chosen_) {
      drop(drop_reason::unexpected);
      return false;
    }
    if (have) {
      advance_commit(at);
    } else {
      log_.reset(at, at_term);
      durable_ = at;
      commit_ = at;
    }
    fetch_next_ = lsn{at.value + 1};
    fetch_timeouts_ = 0;
    sync_retry_at_ = now + cfg_.sync_retry;
    if (at == chosen_)
      finish_sync(now);
    else
      request_fetch(now);
    return !have;
  }
  if (role_ == role::secondary && from == promised_.leader) {
    if (at <= commit_) {
      // Our committed prefix already covers it, and committed records match
      // every later primary's log.
      match_hi_ = std::max(match_hi_, commit_);
      send_ack(now);
      return false;
    }
    if (have) {
      match_hi_ = std::max(match_hi_, at);
      primary_commit_ = std::max(primary_commit_, at);
      advance_commit(at);
      send_ack(now);
      return false;
    }
    log_.reset(at, at_term);
    durable_ = at;
    commit_ = at;
    match_hi_ = at;
    primary_commit_ = std::max(primary_commit_, at);
    send_ack(now);
    check_healed();
    return true;
  }
  drop(drop_reason::unexpected);
  return false;
}

void replica_core::checkpointed(lsn through) {
  if (through > commit_)
    through = commit_;
  log_.compact_through(through);
  if (durable_ < log_.base())
    durable_ = log_.base();
}

void replica_core::tick(timestamp now) {
  if (role_ == role::syncing) {
    if (now < sync_retry_at_)
      return;
    sync_retry_at_ = now + cfg_.sync_retry;
    if (chosen_ready_) {
      if (++fetch_timeouts_ < 3) {
        request_fetch(now);
        return;
      }
      // The source does not answer: collect again (a majority without it, or
      // its reply once it is back).
      if (auto* p = peer(fetch_source_))
        p->replied = false;
      chosen_ready_ = false;
      fetch_source_ = no_node;
    }
    for (auto& p : peers_)
      if (!p.replied)
        send(p.id, sync_request{self_, promised_});
    maybe_choose(now);
    return;
  }
  if (role_ != role::primary)
    return;
  for (auto& p : peers_) {
    if (p.next.value > p.matched.value + 1
        && now >= p.last_progress + cfg_.retransmit_timeout) {
      p.next = lsn{p.matched.value + 1};
      p.last_progress = now;
    }
    replicate(p, now);
  }
}

std::optional<timestamp> replica_core::next_deadline() const {
  if (role_ == role::syncing)
    return sync_retry_at_;
  if (role_ != role::primary)
    return std::nullopt;
  std::optional<timestamp> out;
  auto consider = [&](timestamp t) {
    if (!out || t < *out)
      out = t;
  };
  for (auto& p : peers_) {
    if (p.snapshot_pending) {
      consider(p.snapshot_deadline);
      continue;
    }
    consider(p.last_sent + cfg_.heartbeat_interval);
    if (p.next.value > p.matched.value + 1)
      consider(p.last_progress + cfg_.retransmit_timeout);
  }
  return out;
}

std::vector<peer_lag> replica_core::lag() const {
  std::vector<peer_lag> out;
  if (role_ != role::primary)
    return out;
  for (auto& p : peers_) {
    peer_lag l;
    l.peer = p.id;
    auto durable = std::min(p.durable, log_.last());
    l.records = log_.last().value - durable.value;
    l.bytes = log_.bytes_between(durable, log_.last());
    l.inflight_bytes = log_.bytes_between(p.matched, lsn{p.next.value - 1});
    l.behind_since = p.behind_since;
    l.snapshot_pending = p.snapshot_pending;
    out.push_back(l);
  }
  return out;
}

// -- shared ----------------------------------------------------------------------

void replica_core::observe_higher(const term& t, timestamp now) {
  promised_ = t;
  heal_target_ = lsn{}; // a new primary: its log is the one to hold
  effects_.push_back(persist_term{t});
  match_hi_ = lsn{};
  if (role_ != role::secondary) {
    ++stats_.step_downs;
    fail_pending();
    become_secondary(now);
  }
}

void replica_core::become_secondary(timestamp) {
  role_ = role::secondary;
  serving_ = false;
  chosen_ready_ = false;
  fetch_source_ = no_node;
  for (auto& p : peers_)
    p = fresh_peer(p.id);
}

void replica_core::send(node_id to, message m) {
  ++stats_.sent[m.index()];
  outbox_.push_back(outgoing{to, std::move(m)});
}

replica_core::peer_state* replica_core::peer(node_id id) {
  for (auto& p : peers_)
    if (p.id == id)
      return &p;
  return nullptr;
}

void replica_core::append_local(std::vector<entry> entries) {
  if (entries.empty())
    return;
  for (auto& e : entries)
    log_.append(e);
  effects_.push_back(append_records{std::move(entries)});
}

void replica_core::truncate_local(lsn after) {
  if (after < log_.base())
    after = log_.base();
  if (after >= log_.last())
    return;
  stats_.records_truncated += log_.last().value - after.value;
  log_.truncate_after(after);
  if (durable_ > after)
    durable_ = after;
  effects_.push_back(truncate_after{after});
}

void replica_core::advance_commit(lsn to) {
  if (to > log_.last())
    to = log_.last();
  if (to <= commit_)
    return;
  commit_ = to;
  effects_.push_back(apply_through{to});
}

bool replica_core::well_formed(lsn prev, const term& prev_term,
                               const std::vector<entry>& es, const term& t) const {
  if (t < prev_term)
    return false;
  const term* before = &prev_term;
  for (size_t i = 0; i < es.size(); ++i) {
    const auto& e = es[i];
    if (e.at.value != prev.value + 1 + i)
      return false;
    if (e.t < *before || t < e.t)
      return false;
    if (e.kind != entry_kind::transaction && e.kind != entry_kind::new_primary)
      return false;
    before = &e.t;
  }
  return true;
}

void replica_core::on_fetch_request(const fetch_request& m, timestamp) {
  if (m.from != m.t.leader) {
    drop(drop_reason::unexpected);
    return;
  }
  fetch_reply r;
  r.from = self_;
  r.t = promised_;
  if (m.first <= log_.base()) {
    // The records before `first` are in our checkpoint only.
    r.prev = log_.base();
    r.prev_term = log_.base_term();
    r.snapshot = true;
    ++stats_.snapshots_sent;
    effects_.push_back(send_snapshot{m.from, log_.base(), log_.base_term()});
    send(m.from, std::move(r));
    return;
  }
  r.prev = lsn{m.first.value - 1};
  auto pt = log_.term_at(r.prev);
  if (!pt) {
    // We no longer hold what we reported: the requester collects again.
    send(m.from, std::move(r));
    return;
  }
  r.prev_term = *pt;
  auto upto = std::min(m.upto, log_.last());
  uint64_t bytes = 0;
  for (auto at = m.first; at <= upto; at.value++) {
    const auto& e = log_.at(at);
    if (!r.entries.empty()
        && bytes + entry_bytes(e)
               > std::max(cfg_.max_inflight_bytes, cfg_.max_batch_bytes))
      break;
    bytes += entry_bytes(e);
    r.entries.push_back(e);
  }
  stats_.records_shipped += r.entries.size();
  stats_.bytes_shipped += bytes;
  send(m.from, std::move(r));
}

// -- secondary -------------------------------------------------------------------

void replica_core::step_secondary(const message& m, timestamp now) {
  if (auto* req = std::get_if<sync_request>(&m)) {
    if (req->from != req->t.leader) {
      drop(drop_reason::unexpected);
      return;
    }
    if (amnesiac_) {
      // Our log may lack records we acknowledged: it must not be counted as
      // one of the majority a new primary chooses from (the term is promised
      // all the same: observe_higher ran).
      ++stats_.syncs_withheld;
      return;
    }
    send(req->from, sync_reply{self_, promised_, durable_, *log_.term_at(durable_),
                               log_.base(), commit_});
  } else if (auto* f = std::get_if<fetch_request>(&m)) {
    on_fetch_request(*f, now);
  } else if (auto* a = std::get_if<append>(&m)) {
    on_append(*a, now);
  } else {
    drop(drop_reason::unexpected);
  }
}

void replica_core::on_append(const append& m, timestamp now) {
  if (m.from != m.t.leader) {
    drop(drop_reason::unexpected);
    return;
  }
  if (!well_formed(m.prev, m.prev_term, m.entries, m.t)) {
    drop(drop_reason::lsn_gap);
    return;
  }
  primary_commit_ = std::max(primary_commit_, m.commit);
  if (amnesiac_)
    heal_target_ = std::max(heal_target_, m.last);
  lsn upto{m.prev.value + m.entries.size()};
  size_t skip = 0;
  if (m.prev < log_.base()) {
    // Records through the base are in our checkpoint: committed, so equal to
    // the primary's.
    skip = std::min<size_t>(m.entries.size(), log_.base().value - m.prev.value);
  } else if (!log_.matches(m.prev, m.prev_term)) {
    drop(drop_reason::no_match);
    auto hint = m.prev > log_.last() ? log_.last() : commit_;
    send(m.from, append_reply{self_, promised_, false, match_hi_,
                              std::min(durable_, match_hi_), hint});
    return;
  }
  // Skip what we hold already; from the first conflict on, the primary's
  // records replace ours.
  size_t i = skip;
  while (i < m.entries.size() && log_.matches(m.entries[i].at, m.entries[i].t))
    ++i;
  bool appended = i < m.entries.size();
  if (appended) {
    auto at = m.entries[i].at;
    if (at <= commit_) {
      // Never happens while the protocol holds: a committed record is in the
      // log of every later primary.
      drop(drop_reason::unexpected);
      return;
    }
    truncate_local(lsn{at.value - 1});
    append_local(std::vector<entry>(m.entries.begin() + static_cast<std::ptrdiff_t>(i),
                                    m.entries.end()));
  }
  match_hi_ = std::max(match_hi_, upto);
  advance_commit(std::min(primary_commit_, match_hi_));
  // Records just appended are acknowledged once the host reports them durable
  // (log_durable): the primary needs that answer to commit, and an answer now
  // would only say "matched, not durable yet" (one message per batch less each
  // way). A heartbeat, or records held already, are answered at once.
  if (!appended)
    send_ack(now);
}

void replica_core::send_ack(timestamp) {
  auto primary = promised_.leader;
  if (role_ != role::secondary || primary == no_node || primary == self_
      || match_hi_ == lsn{})
    return;
  send(
      primary,
      append_reply{self_, promised_, true, match_hi_, std::min(durable_, match_hi_), {}});
}

// -- sync phase ------------------------------------------------------------------

void replica_core::step_syncing(const message& m, timestamp now) {
  if (auto* r = std::get_if<sync_reply>(&m)) {
    auto* p = peer(r->from);
    if (r->last < r->base || r->commit > r->last) {
      drop(drop_reason::lsn_gap);
      return;
    }
    p->replied = true;
    p->last = r->last;
    p->last_term = r->last_term;
    if (!chosen_ready_)
      maybe_choose(now);
  } else if (auto* f = std::get_if<fetch_reply>(&m)) {
    on_fetch_reply(*f, now);
  } else {
    drop(drop_reason::unexpected);
  }
}

void replica_core::start_sync(timestamp now) {
  ++stats_.syncs_started;
  sync_started_ = now;
  serving_ = false;
  chosen_ready_ = false;
  fetch_source_ = no_node;
  fetch_timeouts_ = 0;
  for (auto& p : peers_)
    p = fresh_peer(p.id);
  if (cfg_.unsafe_skip_sync) {
    chosen_ = log_.last();
    chosen_term_ = log_.last_term();
    finish_sync(now);
    return;
  }
  for (auto& p : peers_)
    send(p.id, sync_request{self_, promised_});
  sync_retry_at_ = now + cfg_.sync_retry;
  maybe_choose(now);
}

void replica_core::maybe_choose(timestamp now) {
  // An amnesiac primary's own log does not count (see amnesiac()): a majority
  // of the others must answer.
  size_t replies = amnesiac_ ? 0 : 1;
  for (auto& p : peers_)
    replies += p.replied ? 1 : 0;
  if (replies < majority())
    return;
  // The most advanced durable log of the majority: highest last term, then
  // highest lsn; ourselves on a tie (nothing to fetch).
  node_id best = amnesiac_ ? no_node : self_;
  lsn best_last = amnesiac_ ? lsn{} : durable_;
  term best_term = amnesiac_ ? term{} : *log_.term_at(durable_);
  for (auto& p : peers_) {
    if (!p.replied)
      continue;
    if (best == no_node || best_term < p.last_term
        || (best_term == p.last_term && best_last < p.last)) {
      best = p.id;
      best_last = p.last;
      best_term = p.last_term;
    }
  }
  chosen_ready_ = true;
  chosen_ = best_last;
  chosen_term_ = best_term;
  if (log_.matches(chosen_, chosen_term_)) {
    // Log matching: we hold the chosen log through chosen_.
    truncate_local(chosen_);
    finish_sync(now);
    return;
  }
  fetch_source_ = best;
  fetch_next_ = lsn{commit_.value + 1};
  fetch_timeouts_ = 0;
  request_fetch(now);
}

void replica_core::request_fetch(timestamp now) {
  send(fetch_source_, fetch_request{self_, promised_, fetch_next_, chosen_});
  sync_retry_at_ = now + cfg_.sync_retry;
}

void replica_core::on_fetch_reply(const fetch_reply& m, timestamp now) {
  if (!chosen_ready_ || m.from != fetch_source_) {
    drop(drop_reason::unexpected);
    return;
  }
  if (m.snapshot) {
    // Its host streams the checkpoint; snapshot_offered() continues.
    fetch_timeouts_ = 0;
    sync_retry_at_ = now + cfg_.snapshot_retry;
    return;
  }
  if (m.prev.value + 1 != fetch_next_.value) {
    drop(drop_reason::unexpected); // a duplicate or a reply to an older request
    return;
  }
  if (!well_formed(m.prev, m.prev_term, m.entries, promised_)) {
    drop(drop_reason::lsn_gap);
    return;
  }
  if (m.entries.empty() || !log_.matches(m.prev, m.prev_term)) {
    // The source no longer holds what it reported (or our committed prefix
    // does not match it, which the protocol rules out): collect again.
    drop(drop_reason::unexpected);
    if (auto* p = peer(fetch_source_))
      p->replied = false;
    chosen_ready_ = false;
    fetch_source_ = no_node;
    send(m.from, sync_request{self_, promised_});
    return;
  }
  size_t i = 0;
  while (i < m.entries.size() && log_.matches(m.entries[i].at, m.entries[i].t))
    ++i;
  if (i < m.entries.size()) {
    truncate_local(lsn{m.entries[i].at.value - 1});
    append_local(std::vector<entry>(m.entries.begin() + static_cast<std::ptrdiff_t>(i),
                                    m.entries.end()));
  }
  fetch_next_ = lsn{m.entries.back().at.value + 1};
  fetch_timeouts_ = 0;
  if (fetch_next_ > chosen_) {
    truncate_local(chosen_);
    finish_sync(now);
  } else {
    request_fetch(now);
  }
}

void replica_core::finish_sync(timestamp now) {
  entry np{lsn{log_.last().value + 1}, promised_, entry_kind::new_primary, {}};
  new_primary_at_ = np.at;
  std::vector<entry> es;
  es.push_back(std::move(np));
  append_local(std::move(es));
  role_ = role::primary;
  serving_ = cfg_.unsafe_skip_sync;
  for (auto& p : peers_) {
    p = fresh_peer(p.id);
    p.next = new_primary_at_;
    p.matched = lsn{new_primary_at_.value - 1};
    p.last_progress = now;
    p.behind_since = now;
    p.last_sent = now - cfg_.heartbeat_interval;
  }
  for (auto& p : peers_)
    replicate(p, now);
  update_commit(now);
}

// -- primary ---------------------------------------------------------------------

void replica_core::step_primary(const message& m, timestamp now) {
  if (auto* r = std::get_if<append_reply>(&m))
    on_append_reply(*r, now);
  else
    drop(drop_reason::unexpected);
}

void replica_core::on_append_reply(const append_reply& m, timestamp now) {
  auto& p = *peer(m.from);
  if (m.ok) {
    if (m.durable > m.matched || m.matched > log_.last()) {
      drop(drop_reason::lsn_gap);
      return;
    }
    if (m.matched > p.matched) {
      p.matched = m.matched;
      p.last_progress = now;
    }
    if (p.next <= m.matched)
      p.next = lsn{m.matched.value + 1};
    if (m.durable > p.durable)
      p.durable = m.durable;
    // Installed (if our checkpoint moved on since, replicate sends a newer one).
    if (p.snapshot_pending && m.matched >= p.snapshot_at)
      p.snapshot_pending = false;
    if (p.durable >= log_.last())
      p.behind_since = now;
    update_commit(now);
  } else {
    if (m.hint.value + 1 < p.next.value) {
      p.next = lsn{m.hint.value + 1};
      if (p.matched > m.hint)
        p.matched = m.hint;
      p.last_progress = now;
    }
  }
  replicate(p, now);
}

void replica_core::replicate(peer_state& p, timestamp now) {
  if (role_ != role::primary)
    return;
  if (p.snapshot_pending) {
    if (now < p.snapshot_deadline)
      return;
    p.snapshot_pending = false;
  }
  auto snapshot = [&] {
    effects_.push_back(send_snapshot{p.id, log_.base(), log_.base_term()});
    ++stats_.snapshots_sent;
    p.snapshot_pending = true;
    p.snapshot_at = log_.base();
    p.snapshot_deadline = now + cfg_.snapshot_retry;
    p.last_sent = now;
  };
  if (p.next > lsn{log_.last().value + 1})
    p.next = lsn{log_.last().value + 1};
  bool sent = false;
  while (
      p.next <= log_.last()
      && (log_.bytes_between(p.matched, lsn{p.next.value - 1}) < cfg_.max_inflight_bytes
          || cfg_.unsafe_ignore_window)) {
    if (p.next <= log_.base()) {
      snapshot();
      return;
    }
    append a{self_, promised_, lsn{p.next.value - 1}, {}, {}, commit_, log_.last()};
    a.prev_term = *log_.term_at(a.prev);
    uint64_t bytes = 0;
    for (auto at = p.next; at <= log_.last(); at.value++) {
      const auto& e = log_.at(at);
      if (!a.entries.empty()
          && (bytes + entry_bytes(e) > cfg_.max_batch_bytes
              || a.entries.size() >= cfg_.max_batch_records))
        break;
      bytes += entry_bytes(e);
      stats_.largest_record_bytes = std::max(stats_.largest_record_bytes, entry_bytes(e));
      a.entries.push_back(e);
    }
    stats_.records_shipped += a.entries.size();
    stats_.bytes_shipped += bytes;
    p.next = lsn{a.entries.back().at.value + 1};
    p.last_sent = now;
    send(p.id, std::move(a));
    sent = true;
    stats_.peak_inflight_bytes = std::max(
        stats_.peak_inflight_bytes, log_.bytes_between(p.matched, lsn{p.next.value - 1}));
  }
  if (!sent && now >= p.last_sent + cfg_.heartbeat_interval) {
    if (p.next <= log_.base()) {
      snapshot();
      return;
    }
    append a{self_, promised_, lsn{p.next.value - 1}, {}, {}, commit_, log_.last()};
    a.prev_term = *log_.term_at(a.prev);
    p.last_sent = now;
    send(p.id, std::move(a));
  }
}

void replica_core::update_commit(timestamp now) {
  if (role_ != role::primary)
    return;
  std::vector<lsn> durable;
  durable.push_back(std::min(durable_, log_.last()));
  for (auto& p : peers_)
    durable.push_back(std::min(p.durable, log_.last()));
  std::sort(durable.begin(), durable.end(), [](lsn a, lsn b) { return b < a; });
  // A majority including the primary itself.
  auto k = std::min(durable[majority() - 1], durable_);
  if (k < new_primary_at_ || k <= commit_)
    return;
  advance_commit(k);
  while (!pending_.empty() && pending_.begin()->first <= commit_.value) {
    auto& [at, txn] = *pending_.begin();
    if (!txn.acked) {
      effects_.push_back(commit_acked{txn.txn, lsn{at}, txn.mode});
      ++stats_.commits_acked;
    }
    pending_.erase(pending_.begin());
  }
  if (!serving_ && commit_ >= new_primary_at_) {
    serving_ = true;
    ++stats_.syncs_finished;
    effects_.push_back(
        sync_finished{promised_, chosen_, new_primary_at_, now - sync_started_});
    check_healed();
  }
}

void replica_core::ack_weak() {
  for (auto& [at, txn] : pending_) {
    if (at > durable_.value)
      break;
    if (txn.mode == commit_mode::weak && !txn.acked) {
      txn.acked = true;
      effects_.push_back(commit_acked{txn.txn, lsn{at}, commit_mode::weak});
      ++stats_.commits_acked;
    }
  }
}

void replica_core::check_healed() {
  if (!amnesiac_)
    return;
  if (role_ == role::primary) {
    // Its new_primary record is committed: its log is the chosen one.
    if (serving_)
      amnesiac_ = false;
    return;
  }
  if (role_ != role::secondary || promised_.leader == no_node || promised_.leader == self_
      || heal_target_ == lsn{})
    return;
  // Durably matching the current primary's log through the last record it
  // had when it sent an append we received after the restart: every record
  // we acknowledged before losing the log, if committed, is in that
  // primary's log at or below that point (see the header, "Amnesia").
  if (std::min(match_hi_, durable_) >= heal_target_)
    amnesiac_ = false;
}

void replica_core::fail_pending() {
  auto hint = promised_.leader == self_ ? no_node : promised_.leader;
  for (auto& [at, txn] : pending_) {
    if (txn.acked)
      continue;
    effects_.push_back(txn_failed{txn.txn, errc::primary_changed, hint});
    ++stats_.txns_failed;
  }
  pending_.clear();
}

} // namespace conclave::replication
