// An in-memory network of pure election cores for protocol tests: no actors, no
// sockets, no sleeping. Time is virtual and advances only to the next event (a
// message delivery after a fixed latency, or a core's deadline). Members can be
// crashed (their peers optionally get "peer down", as a dropped connection gives),
// restarted with the same id, cut off by partitions, and messages can be dropped by
// a predicate. Every sent message is counted by type. A test may call a core
// directly (node(i).request_election(net.now())); its outputs go out with the
// next step.
#pragma once

#include "protocols/election/core_factory.hpp"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace conclave::testing {

namespace el = conclave::election;

class election_network {
public:
  using clock_ms = std::chrono::milliseconds;

  election_network(size_t n, el::election_config cfg,
                   el::duration latency = std::chrono::milliseconds(1))
      : cfg_(cfg), latency_(latency) {
    for (uint64_t i = 1; i <= n; ++i)
      ids_.push_back(el::node_id{i});
    for (auto id : ids_)
      nodes_[id] = make(id);
  }

  // -- driving ----------------------------------------------------------------

  void start_all() {
    for (auto id : ids_)
      start(id);
  }

  void start(el::node_id id) {
    nodes_[id]->start(now_, ++starts_);
    flush(id);
  }

  /// Processes events until `pred` holds or virtual time passes `limit` from now.
  bool run_until(const std::function<bool()>& pred, el::duration limit) {
    auto end = now_ + limit;
    while (!pred()) {
      if (!step(end))
        return pred();
    }
    return true;
  }

  /// Processes every event up to now + d.
  void run_for(el::duration d) {
    auto end = now_ + d;
    while (step(end)) {
    }
    now_ = end;
  }

  // -- faults -----------------------------------------------------------------

  /// Crashes `id`; with notify, every live peer gets peer_down (connection drop).
  void crash(el::node_id id, bool notify = true) {
    crashed_.insert(id);
    if (!notify)
      return;
    for (auto p : ids_) {
      if (p != id && !crashed_.count(p)) {
        nodes_[p]->peer_down(id, now_);
        flush(p);
      }
    }
  }

  /// Tells only `to` that `id` is down (others notice later, if at all).
  void notify_down(el::node_id to, el::node_id id) {
    nodes_[to]->peer_down(id, now_);
    flush(to);
  }

  /// Brings `id` back with a fresh core (a restarted process).
  void restart(el::node_id id) {
    crashed_.erase(id);
    nodes_[id] = make(id);
    start(id);
  }

  /// Members in different groups cannot talk; unlisted members are alone.
  void partition(const std::vector<std::vector<el::node_id>>& groups) {
    group_of_.clear();
    int g = 0;
    for (auto& grp : groups) {
      for (auto id : grp)
        group_of_[id] = g;
      ++g;
    }
    partitioned_ = true;
  }

  void heal() { partitioned_ = false; }

  /// Drops every sent message for which `f` returns true.
  void set_drop(std::function<bool(el::node_id, el::node_id, const el::message&)> f) {
    drop_ = std::move(f);
  }

  // -- observing ----------------------------------------------------------------

  el::candidate_core& node(el::node_id id) { return *nodes_[id]; }
  el::candidate_core& node(uint64_t id) { return *nodes_[el::node_id{id}]; }
  bool alive(el::node_id id) const { return crashed_.count(id) == 0; }
  el::timestamp now() const { return now_; }
  const std::vector<el::node_id>& ids() const { return ids_; }

  /// The one leader every live member agrees on (is_leader and acting at the
  /// leader, followed by all others), or no_node.
  el::node_id agreed_leader() const {
    el::node_id leader = el::no_node;
    for (auto id : ids_) {
      if (crashed_.count(id))
        continue;
      auto& c = *nodes_.at(id);
      if (c.leader() == el::no_node)
        return el::no_node;
      if (leader == el::no_node)
        leader = c.leader();
      else if (c.leader() != leader)
        return el::no_node;
    }
    if (leader == el::no_node || crashed_.count(leader))
      return el::no_node;
    auto& l = *nodes_.at(leader);
    return l.is_leader() && l.acting() ? leader : el::no_node;
  }

  /// Live members that currently believe they lead.
  std::vector<el::node_id> leaders() const {
    std::vector<el::node_id> result;
    for (auto id : ids_)
      if (!crashed_.count(id) && nodes_.at(id)->is_leader())
        result.push_back(id);
    return result;
  }

  /// Messages sent since the last reset_counts(), by type index.
  const std::array<uint64_t, el::message_type_count>& sent() const { return sent_; }
  uint64_t sent(size_t type_index) const { return sent_[type_index]; }
  /// Every message except heartbeats and their acks.
  uint64_t election_messages() const {
    uint64_t sum = 0;
    for (size_t i = 0; i < sent_.size(); ++i)
      if (i != index_of<el::heartbeat_msg>() && i != index_of<el::heartbeat_ack_msg>())
        sum += sent_[i];
    return sum;
  }
  void reset_counts() { sent_.fill(0); }

  /// Every event a member reported, in order.
  const std::vector<el::election_event>& events(el::node_id id) { return log_[id]; }

  template <class T>
  static constexpr size_t index_of() {
    return el::message_index<T>;
  }

private:
  struct delivery {
    el::node_id to;
    el::message msg;
  };

  std::unique_ptr<el::candidate_core> make(el::node_id id) {
    std::vector<el::node_id> peers;
    for (auto p : ids_)
      if (p != id)
        peers.push_back(p);
    return el::make_core(id, peers, cfg_);
  }

  bool blocked(el::node_id a, el::node_id b) const {
    if (!partitioned_)
      return false;
    auto ga = group_of_.find(a);
    auto gb = group_of_.find(b);
    return ga == group_of_.end() || gb == group_of_.end() || ga->second != gb->second;
  }

  void flush(el::node_id id) {
    auto& c = *nodes_[id];
    for (auto& o : c.outbox()) {
      ++sent_[o.msg.index()];
      if (drop_ && drop_(id, o.to, o.msg))
        continue;
      queue_.emplace(std::make_pair(now_ + latency_, seq_++),
                     delivery{o.to, std::move(o.msg)});
    }
    c.outbox().clear();
    auto& log = log_[id];
    log.insert(log.end(), c.events().begin(), c.events().end());
    c.events().clear();
  }

  /// Runs the earliest event not later than `end`. False if there is none.
  bool step(el::timestamp end) {
    std::optional<el::timestamp> next_timer;
    el::node_id timer_owner = el::no_node;
    for (auto id : ids_) {
      if (crashed_.count(id)) {
        nodes_[id]->outbox().clear();
        continue;
      }
      flush(id); // outputs of calls the test made on a core directly
      if (auto d = nodes_[id]->next_deadline(); d && (!next_timer || *d < *next_timer)) {
        next_timer = d;
        timer_owner = id;
      }
    }
    bool have_msg = !queue_.empty() && queue_.begin()->first.first <= end;
    bool have_timer = next_timer && *next_timer <= end;
    if (!have_msg && !have_timer)
      return false;
    if (have_msg && (!have_timer || queue_.begin()->first.first <= *next_timer)) {
      auto it = queue_.begin();
      now_ = std::max(now_, it->first.first);
      auto d = std::move(it->second);
      queue_.erase(it);
      auto from = el::sender(d.msg);
      if (crashed_.count(d.to) || blocked(from, d.to))
        return true;
      nodes_[d.to]->handle(d.msg, now_);
      flush(d.to);
    } else {
      now_ = std::max(now_, *next_timer);
      nodes_[timer_owner]->tick(now_);
      flush(timer_owner);
    }
    return true;
  }

  el::election_config cfg_;
  el::duration latency_;
  el::timestamp now_{0};
  uint64_t seq_ = 0;
  uint64_t starts_ = 0; ///< incarnations grow with every (re)start
  std::vector<el::node_id> ids_;
  std::map<el::node_id, std::unique_ptr<el::candidate_core>> nodes_;
  std::set<el::node_id> crashed_;
  std::map<el::node_id, int> group_of_;
  bool partitioned_ = false;
  std::function<bool(el::node_id, el::node_id, const el::message&)> drop_;
  std::map<std::pair<el::timestamp, uint64_t>, delivery> queue_;
  std::array<uint64_t, el::message_type_count> sent_{};
  std::map<el::node_id, std::vector<el::election_event>> log_;
};

} // namespace conclave::testing
