#include "runtime/sim/jobs_checkers.hpp"

#include "protocols/workflow/explain.hpp"
#include "protocols/workflow/store_layout.hpp"

#include <algorithm>
#include <set>
#include <sstream>

namespace conclave::sim {

namespace {

using namespace conclave::workflow;

bool is_undo(const job_event& e) {
  return e.detail == "compensation";
}

std::string ms_text(duration d) {
  std::ostringstream o;
  o << static_cast<double>(d.count()) / 1e6 << "ms";
  return o.str();
}

std::string step_name(const job_id& j, step_index s, bool undo) {
  return j.value + " step " + std::to_string(s.value) + (undo ? " (compensation)" : "");
}

class final_within_bound final : public jobs_checker {
public:
  const char* name() const override { return "final_within_bound"; }
  bool safety() const override { return false; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    if (!obs.judge_liveness)
      return;
    auto limit = obs.heal + obs.bound;
    for (auto& j : obs.jobs) {
      if (!j.view) {
        out.push_back(j.id.value + " could not be read");
        continue;
      }
      auto state = j.view->job.state;
      if (!is_final(state)) {
        out.push_back(j.id.value + " is still " + to_string(state) + " at "
                      + ms_text(limit) + " (heal " + ms_text(obs.heal) + " + bound "
                      + ms_text(obs.bound)
                      + "): " + to_string(explain(*j.view, obs.now), obs.now));
        continue;
      }
      auto at = j.view->job.updated - obs.origin;
      if (at > limit)
        out.push_back(j.id.value + " became " + to_string(state) + " only at "
                      + ms_text(at) + ", after heal + bound " + ms_text(limit));
    }
  }
};

class one_completion_per_step final : public jobs_checker {
public:
  const char* name() const override { return "one_completion_per_step"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    for (auto& j : obs.jobs) {
      std::map<std::pair<uint32_t, bool>, std::vector<uint32_t>> attempts;
      for (auto& e : j.events)
        if (e.kind == event_kind::step_completed)
          attempts[{e.step.value, is_undo(e)}].push_back(e.attempt.value);
      for (auto& [k, list] : attempts) {
        if (list.size() < 2)
          continue;
        std::string which;
        for (auto a : list)
          which += (which.empty() ? "" : ", ") + std::to_string(a);
        out.push_back(step_name(j.id, step_index{k.first}, k.second)
                      + " recorded completed " + std::to_string(list.size())
                      + " times (attempts " + which + ")");
      }
    }
  }
};

class no_stale_completion final : public jobs_checker {
public:
  const char* name() const override { return "no_stale_completion"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    for (auto& j : obs.jobs) {
      std::map<std::pair<uint32_t, bool>, uint32_t> last_started;
      for (auto& e : j.events) {
        auto k = std::make_pair(e.step.value, is_undo(e));
        if (e.kind == event_kind::step_started)
          last_started[k] = e.attempt.value;
        else if (e.kind == event_kind::step_completed
                 && last_started[k] != e.attempt.value)
          out.push_back(step_name(j.id, e.step, k.second)
                        + " recorded completed by attempt "
                        + std::to_string(e.attempt.value) + " while attempt "
                        + std::to_string(last_started[k]) + " was the current one");
      }
    }
  }
};

/// A recovery (a `retrying` event: a deadline, a dead agent or scheduler, or
/// an agent's transient failure) must end the attempt it names, and that
/// attempt must be the step's current one: a recovery that lands on a newer
/// attempt, or ends one attempt twice, is a write past the attempt fence.
/// Attempts grow per step across forward runs and compensations, so the step
/// index alone keys them.
class recovery_of_current_attempt final : public jobs_checker {
public:
  const char* name() const override { return "recovery_of_current_attempt"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    for (auto& j : obs.jobs) {
      std::map<uint32_t, uint32_t> last_started;
      std::set<std::pair<uint32_t, uint32_t>> recovered;
      for (auto& e : j.events) {
        if (e.kind == event_kind::step_started)
          last_started[e.step.value] = e.attempt.value;
        if (e.kind != event_kind::retrying)
          continue;
        auto current = last_started[e.step.value];
        auto name = step_name(j.id, e.step, false);
        if (current != e.attempt.value)
          out.push_back(name + " recovered for attempt " + std::to_string(e.attempt.value)
                        + " while attempt " + std::to_string(current)
                        + " was the current one (" + e.detail + ")");
        else if (!recovered.insert({e.step.value, e.attempt.value}).second)
          out.push_back(name + " recovered twice for attempt "
                        + std::to_string(e.attempt.value) + " (" + e.detail + ")");
      }
    }
  }
};

class reverse_compensation final : public jobs_checker {
public:
  const char* name() const override { return "reverse_compensation"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    for (auto& j : obs.jobs) {
      std::vector<uint32_t> forward, undone;
      for (auto& e : j.events)
        if (e.kind == event_kind::step_completed)
          (is_undo(e) ? undone : forward).push_back(e.step.value);
      std::vector<uint32_t> expected;
      // Newest completion first; a step completed twice (another checker's
      // business) counts at its last completion.
      for (auto i = forward.rbegin(); i != forward.rend(); ++i)
        if (std::find(undone.begin(), undone.end(), *i) != undone.end()
            && std::find(expected.begin(), expected.end(), *i) == expected.end())
          expected.push_back(*i);
      if (expected == undone)
        continue;
      auto list = [](const std::vector<uint32_t>& v) {
        std::string s;
        for (auto x : v)
          s += (s.empty() ? "" : ",") + std::to_string(x);
        return s;
      };
      out.push_back(j.id.value + " compensated steps " + list(undone)
                    + " after completing " + list(forward) + " (expected "
                    + list(expected) + ")");
    }
  }
};

class one_effect_per_key final : public jobs_checker {
public:
  const char* name() const override { return "one_effect_per_key"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    for (auto& [key, n] : obs.effects)
      if (n > 1)
        out.push_back(key + " took effect " + std::to_string(n) + " times");
    for (auto& j : obs.jobs)
      for (auto& e : j.events) {
        if (e.kind != event_kind::step_completed)
          continue;
        auto key = idempotency_key(j.id, e.step, is_undo(e));
        auto i = obs.effects.find(key);
        if (i == obs.effects.end() || i->second < 1)
          out.push_back(step_name(j.id, e.step, is_undo(e)) + " recorded completed but "
                        + key + " never took effect");
      }
  }
};

class one_dispatch_per_attempt final : public jobs_checker {
public:
  const char* name() const override { return "one_dispatch_per_attempt"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    for (auto& [what, n] : obs.dispatches)
      if (n > 1)
        out.push_back(what + " dispatched " + std::to_string(n) + " times");
  }
};

/// `list` by state must answer each state exactly: every job read at the
/// end under the state its document holds, once, and under no other (the
/// index keeps one "active" class for pending, processing and compensating,
/// so list filters that class by the documents).
class list_by_state final : public jobs_checker {
public:
  const char* name() const override { return "list_by_state"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    if (!obs.listed)
      return;
    std::map<std::string, step_state> state_of;
    std::set<std::string> unread; // jobs of the run whose document was not read
    for (auto& j : obs.jobs)
      if (j.view)
        state_of[j.id.value] = j.view->job.state;
      else
        unread.insert(j.id.value);
    for (uint8_t s = 0; s < step_state_count; ++s) {
      auto st = static_cast<step_state>(s);
      std::map<std::string, int> listed;
      if (auto i = obs.listed->find(s); i != obs.listed->end())
        for (auto& id : i->second)
          ++listed[id.value];
      for (auto& [id, n] : listed) {
        auto k = state_of.find(id);
        if (n > 1)
          out.push_back(id + " listed " + std::to_string(n) + " times as "
                        + to_string(st));
        if (unread.count(id))
          continue;
        if (k == state_of.end())
          out.push_back(id + " listed as " + std::string{to_string(st)}
                        + " but not a job of the run");
        else if (k->second != st)
          out.push_back(id + " listed as " + std::string{to_string(st)} + " but is "
                        + to_string(k->second));
      }
      for (auto& [id, js] : state_of)
        if (js == st && !listed.count(id))
          out.push_back(id + " is " + std::string{to_string(st)}
                        + " but not listed as such");
    }
  }
};

/// The index rows must be exactly those a fresh write of every job's final
/// document would make: a stale row of the shared "active" state class is
/// filtered out of every list, a stale ready or due row only costs polls and
/// scans, so only the rows themselves show such a leak.
class indexes_in_step final : public jobs_checker {
public:
  const char* name() const override { return "indexes_in_step"; }
  void check(const jobs_observation& obs, std::vector<std::string>& out) const override {
    if (!obs.index_rows)
      return;
    std::map<std::string, std::set<std::string>> want;
    for (auto& j : obs.jobs) {
      if (!j.view)
        return; // a job not read: nothing to compare with
      auto copy = *j.view;
      copy.events.clear();
      for (auto& w : layout::job_writes(nullptr, copy, effects{}))
        if (w.collection != layout::jobs && w.collection != layout::events)
          want[w.collection].insert(w.key);
    }
    for (const char* c : {layout::state, layout::ready, layout::due}) {
      std::set<std::string> have;
      if (auto i = obs.index_rows->find(c); i != obs.index_rows->end())
        have.insert(i->second.begin(), i->second.end());
      auto& w = want[c];
      size_t stale = 0, missing = 0;
      for (auto& k : have)
        stale += !w.count(k);
      for (auto& k : w)
        missing += !have.count(k);
      if (stale + missing > 0)
        out.push_back(std::string{c} + ": " + std::to_string(stale) + " stale row(s), "
                      + std::to_string(missing) + " missing, of "
                      + std::to_string(w.size()) + " the documents imply");
    }
  }
};

} // namespace

std::vector<std::unique_ptr<jobs_checker>> standard_jobs_checkers() {
  std::vector<std::unique_ptr<jobs_checker>> v;
  v.push_back(std::make_unique<final_within_bound>());
  v.push_back(std::make_unique<one_completion_per_step>());
  v.push_back(std::make_unique<no_stale_completion>());
  v.push_back(std::make_unique<recovery_of_current_attempt>());
  v.push_back(std::make_unique<reverse_compensation>());
  v.push_back(std::make_unique<one_effect_per_key>());
  v.push_back(std::make_unique<one_dispatch_per_attempt>());
  v.push_back(std::make_unique<list_by_state>());
  v.push_back(std::make_unique<indexes_in_step>());
  return v;
}

std::vector<jobs_violation>
run_checkers(const std::vector<std::unique_ptr<jobs_checker>>& checkers,
             const jobs_observation& obs) {
  std::vector<jobs_violation> all;
  for (auto& c : checkers) {
    std::vector<std::string> found;
    c->check(obs, found);
    for (auto& what : found)
      all.push_back(jobs_violation{c->name(), std::move(what), c->safety()});
  }
  return all;
}

} // namespace conclave::sim
