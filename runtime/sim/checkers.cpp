#include "runtime/sim/checkers.hpp"

#include <algorithm>

namespace conclave::sim {

namespace el = conclave::election;

namespace {

std::string us(timestamp t) {
  return std::to_string(t.count() / 1000) + "us";
}

std::string ms_text(duration d) {
  return std::to_string(d.count() / 1'000'000) + "ms";
}

} // namespace

void report_violation(run_report& r, timestamp now, const std::string& what) {
  ++r.safety_violations;
  if (r.violations.size() < 5)
    r.violations.push_back("t=" + us(now) + ": " + what);
}

// -- safety ---------------------------------------------------------------------------

void safety_checker::election_event(node_id id, const el::election_event& e,
                                    timestamp now) {
  switch (e.kind) {
  case el::event_kind::leader_changed: {
    auto& highest = highest_adopted_[id];
    if (e.t < highest)
      report_violation(r_, now,
                       "node " + el::to_string(id) + " adopted term " + el::to_string(e.t)
                           + " after " + el::to_string(highest));
    highest = std::max(highest, e.t);
    break;
  }
  case el::event_kind::acting_started: {
    auto key = std::make_tuple(e.t.epoch, e.t.leader.value, e.t.incarnation);
    auto who = std::make_pair(id, h_.sim().incarnation(id));
    auto [it, fresh] = acted_.emplace(key, who);
    if (!fresh && it->second != who)
      report_violation(r_, now, "two candidates acted in term " + el::to_string(e.t));
    if (std::find(acting_.begin(), acting_.end(), id) == acting_.end())
      acting_.push_back(id);
    break;
  }
  default:
    break;
  }
}

void safety_checker::crashed(node_id id, timestamp) {
  highest_adopted_.erase(id); // its next life remembers nothing
}

void safety_checker::after_event(timestamp now) {
  if (!h_.config().guard.enabled)
    return;
  size_t acting_now = 0;
  acting_.erase(std::remove_if(acting_.begin(), acting_.end(),
                               [&](node_id i) { return !h_.view(i).acting; }),
                acting_.end());
  for (auto i : acting_)
    acting_now += h_.effectively_acting(i);
  if (acting_now > 1) {
    std::string who;
    for (auto i : acting_)
      if (h_.effectively_acting(i))
        who += " " + el::to_string(i) + " (lease to " + us(h_.view(i).lease) + ")";
    report_violation(r_, now, "two candidates act at once under the quorum guard:" + who);
  }
}

// -- needless leader changes
// -------------------------------------------------------------

bool needless_change_checker::connected_to_majority(node_id id) const {
  auto& w = h_.sim();
  size_t reach = 0;
  for (auto other : w.ids())
    if (other == id
        || (h_.view(other).alive && !w.paused(other) && !w.blocked(id, other)
            && !w.blocked(other, id)))
      ++reach;
  return reach >= w.size() / 2 + 1;
}

void needless_change_checker::election_event(node_id id, const el::election_event& e,
                                             timestamp) {
  if (e.kind != el::event_kind::became_leader)
    return;
  auto& w = h_.sim();
  bool guard = h_.config().guard.enabled;
  for (auto other : w.ids()) {
    if (other == id)
      continue;
    auto& v = h_.view(other);
    bool healthy = v.alive && !w.paused(other) && v.is_leader
                   && (!guard || h_.effectively_acting(other));
    // A lower term is fenced off and can take nothing over: only a higher one
    // deposes the healthy leader.
    if (healthy && v.t < e.t && connected_to_majority(other)) {
      ++r_.needless_leader_changes;
      return;
    }
  }
}

// -- claimants --------------------------------------------------------------------------

void claimant_checker::election_event(node_id id, const el::election_event& e,
                                      timestamp) {
  if (e.kind == el::event_kind::acting_started
      && std::find(acting_.begin(), acting_.end(), id) == acting_.end())
    acting_.push_back(id);
}

void claimant_checker::paused(node_id, timestamp, timestamp until) {
  dirty_ = true;
  next_unpause_ = std::min(next_unpause_, until);
}

void claimant_checker::after_event(timestamp now) {
  acting_.erase(std::remove_if(acting_.begin(), acting_.end(),
                               [&](node_id i) { return !h_.view(i).acting; }),
                acting_.end());
  size_t acting_now = 0;
  for (auto i : acting_)
    acting_now += h_.effectively_acting(i);
  if (acting_now > 1 && !split_) {
    split_ = true;
    split_since_ = now;
  } else if (acting_now <= 1 && split_) {
    split_ = false;
    close_split(now);
  }
  if (now >= next_unpause_) {
    dirty_ = true;
    next_unpause_ = timestamp::max();
    for (auto id : h_.sim().ids())
      if (h_.sim().paused(id))
        next_unpause_ = std::min(next_unpause_, h_.sim().paused_until(id));
  }
  if (dirty_) {
    dirty_ = false;
    check_stale(now);
  }
}

void claimant_checker::check_stale(timestamp now) {
  auto& w = h_.sim();
  auto majority = w.size() / 2 + 1;
  for (auto id : w.ids()) {
    auto& v = h_.view(id);
    bool stale = false;
    if (v.alive && v.is_leader && !w.paused(id)) {
      size_t higher = 0;
      for (auto other : w.ids())
        if (h_.view(other).alive && v.t < h_.view(other).t)
          ++higher;
      stale = higher >= majority;
    }
    auto it = stale_since_.find(id);
    if (stale && it == stale_since_.end()) {
      stale_since_.emplace(id, now);
    } else if (!stale && it != stale_since_.end()) {
      close_stale(now - it->second);
      stale_since_.erase(it);
    }
  }
}

// A window that opens and closes at one instant (within one step's cascade of
// events) is not visible to anyone: only windows that last are counted.
void claimant_checker::close_split(timestamp now) {
  auto d = now - split_since_;
  if (d <= duration{0})
    return;
  ++r_.split_brain_windows;
  r_.split_brain_durations.push_back(d);
  r_.split_brain_time += d;
}

void claimant_checker::close_stale(duration d) {
  if (d <= duration{0})
    return;
  ++r_.stale_leader_windows;
  r_.stale_leader_durations.push_back(d);
}

void claimant_checker::finish(timestamp end) {
  if (split_) {
    split_ = false;
    close_split(end);
  }
  for (auto& [id, since] : stale_since_)
    close_stale(end - since);
  stale_since_.clear();
}

// -- leader tasks
// -------------------------------------------------------------------------

void task_checker::task_started(node_id id, timestamp) {
  ++r_.leader_task_starts;
  tasks_.push_back({id, std::nullopt, false});
}

void task_checker::task_stopped(node_id id, timestamp now) {
  auto it = std::find_if(tasks_.begin(), tasks_.end(),
                         [&](const running& t) { return t.id == id; });
  if (it == tasks_.end())
    return;
  if (it->overrun_since)
    r_.task_overrun_max = std::max(r_.task_overrun_max, now - *it->overrun_since);
  tasks_.erase(it);
}

void task_checker::after_event(timestamp now) {
  for (auto& t : tasks_) {
    auto& w = h_.sim();
    if (!w.alive(t.id) || w.paused(t.id) || h_.effectively_acting(t.id)) {
      // Frozen with its candidate, or legitimately running.
      if (h_.effectively_acting(t.id))
        t.overrun_since.reset();
      continue;
    }
    if (!t.overrun_since)
      t.overrun_since = now;
    auto overrun = now - *t.overrun_since;
    r_.task_overrun_max = std::max(r_.task_overrun_max, overrun);
    if (overrun > bound_ && !t.reported) {
      t.reported = true;
      report_violation(r_, now,
                       "the leader task of " + el::to_string(t.id) + " still runs "
                           + ms_text(overrun) + " after its leadership ended");
    }
  }
}

// -- liveness
// -------------------------------------------------------------------------------

liveness_checker::liveness_checker(election_host& h, run_report& r, timestamp heal,
                                   timestamp stable_from, duration bound)
    : h_(h), r_(r), heal_(heal), stable_from_(stable_from), bound_(bound) {
  r_.stable_from = stable_from;
}

void liveness_checker::election_event(node_id, const el::election_event& e,
                                      timestamp now) {
  if (e.kind != el::event_kind::election_started || now < stable_from_)
    return;
  ++r_.elections_after_stable;
  if (!first_election_after_stable_)
    first_election_after_stable_ = now;
}

void liveness_checker::after_event(timestamp now) {
  // The agreed leader held from last_ to now.
  if (agreed_ != el::no_node) {
    led_ += now - last_;
    if (now > heal_)
      led_after_heal_ += now - std::max(last_, heal_);
  }
  last_ = now;
  auto l = h_.agreed_leader();
  if (l == agreed_)
    return;
  if (l != el::no_node) {
    if (last_agreed_ != el::no_node && last_agreed_ != l)
      ++r_.leader_changes;
    last_agreed_ = l;
  }
  agreed_ = l;
  since_ = now;
}

void liveness_checker::finish(timestamp end) {
  after_event(end);
  auto total = end.count() > 0 ? static_cast<double>(end.count()) : 1.0;
  r_.leader_time_fraction = static_cast<double>(led_.count()) / total;
  auto after = end > heal_ ? static_cast<double>((end - heal_).count()) : 0.0;
  r_.leader_time_fraction_after_heal =
      after > 0 ? static_cast<double>(led_after_heal_.count()) / after : 1.0;
  if (agreed_ != el::no_node)
    r_.time_to_agreement_after_heal = since_ > heal_ ? since_ - heal_ : duration{0};
  auto& w = h_.sim();
  if (h_.live() == 0)
    return;
  if (h_.config().guard.enabled && h_.live() < w.size() / 2 + 1)
    return; // no majority: no leader may act, by design
  std::string why;
  if (agreed_ == el::no_node)
    why = "no single acting leader known to all live candidates at the end";
  else if (since_ > stable_from_)
    why = "the group agreed on a leader only " + ms_text(since_ - heal_)
          + " after the faults healed";
  if (r_.elections_after_stable > 0) {
    if (!why.empty())
      why += "; ";
    why += std::to_string(r_.elections_after_stable)
           + " election(s) started after the group should have settled (first at "
           + ms_text(*first_election_after_stable_) + ")";
  }
  if (why.empty())
    return;
  r_.liveness_ok = false;
  r_.violations.push_back(
      "liveness: " + why + " (faults healed at " + ms_text(heal_) + ", bound "
      + ms_text(bound_) + ", judged until " + ms_text(end) + ", leader "
      + std::to_string(static_cast<int>(100 * r_.leader_time_fraction_after_heal))
      + "% of the time after healing)");
}

// -- cost
// -------------------------------------------------------------------------------------

void cost_checker::open_startup(timestamp now) {
  step_base_ = sent_;
  open(now);
}

void cost_checker::open(timestamp now) {
  if (tail_)
    close_tail(step_base_);
  open_ = true;
  broke_ = false;
  startup_ = !ever_agreed_;
  start_ = now;
  base_ = step_base_; // the messages of the step that opened it count
}

void cost_checker::close_tail(const counts& upto) {
  auto& rec = r_.elections[*tail_];
  for (size_t t = 0; t < upto.size(); ++t) {
    if (el::is_heartbeat_type(t))
      continue;
    auto extra = upto[t] - tail_base_[t];
    rec.by_type[t] += extra;
    rec.messages += extra;
  }
  tail_.reset();
}

void cost_checker::election_event(node_id id, const el::election_event& e,
                                  timestamp now) {
  if (open_)
    return;
  if (e.kind == el::event_kind::election_started)
    open(now);
  // Suspicion of one's own leader starts the clock of an election; a leader
  // suspecting a silent follower does not.
  else if (e.kind == el::event_kind::peer_suspected && e.peer != el::no_node
           && h_.view(id).leader == e.peer && e.peer != id)
    open(now);
}

void cost_checker::after_event(timestamp now) {
  auto l = h_.agreed_leader();
  if (l == el::no_node) {
    broke_ = true;
    return;
  }
  ever_agreed_ = true;
  if (!open_)
    return;
  election_record r;
  r.startup = startup_;
  r.latency = now - start_;
  for (size_t t = 0; t < r.by_type.size(); ++t) {
    r.by_type[t] = sent_[t] - base_[t];
    if (!el::is_heartbeat_type(t))
      r.messages += r.by_type[t];
  }
  open_ = false;
  // An election that neither disturbed agreement nor sent anything (it was
  // called off at once) is no election.
  if (!broke_ && r.messages == 0)
    return;
  r_.elections.push_back(r);
  tail_ = r_.elections.size() - 1;
  tail_base_ = sent_;
}

void cost_checker::finish() {
  if (tail_)
    close_tail(sent_);
}

// -- timeline
// --------------------------------------------------------------------------------

void timeline_recorder::election_event(node_id id, const el::election_event& e,
                                       timestamp now) {
  if (e.kind == el::event_kind::heartbeat_rtt || e.kind == el::event_kind::peer_trusted)
    return;
  r_.timeline.push_back({now, id, std::string{el::to_string(e.kind)}, e.t});
}

void timeline_recorder::note(node_id id, timestamp now, const char* what) {
  r_.timeline.push_back({now, id, what, el::term{}});
}

} // namespace conclave::sim
