#include "runtime/sim/repl_checkers.hpp"

#include <algorithm>
#include <set>
#include <sstream>

namespace conclave::sim {

std::string key_name(size_t k) {
  return "k" + std::to_string(k + 1);
}

namespace {

using repl::commit_mode;
using repl::term;
using repl::timestamp;

std::string ms_text(timestamp t) {
  std::ostringstream o;
  o << static_cast<double>(t.count()) / 1e6 << "ms";
  return o.str();
}

/// Strong acknowledged writes in acknowledgement order.
std::vector<const repl_write*> strong_acks(const repl_observation& obs) {
  std::vector<const repl_write*> out;
  for (auto& w : obs.writes)
    if (w.mode == commit_mode::strong && w.acked)
      out.push_back(&w);
  std::stable_sort(out.begin(), out.end(), [](const repl_write* a, const repl_write* b) {
    return *a->acked < *b->acked;
  });
  return out;
}

std::string describe(const repl_sample& s) {
  return "replica " + election::to_string(s.node) + " ("
         + std::string{repl::to_string(s.replica_role)} + (s.serving ? ", serving" : "")
         + (s.acting ? ", acting" : "") + ", term " + election::to_string(s.promised)
         + ", applied " + std::to_string(s.applied.value) + ", log "
         + std::to_string(s.durable.value) + "/" + std::to_string(s.last.value)
         + (s.failed ? ", storage failed" : "") + ") at " + ms_text(s.at);
}

std::string describe(const repl_write& w) {
  return "write " + std::to_string(w.seq) + " of " + key_name(w.key) + " acked at "
         + ms_text(*w.acked) + " by replica " + election::to_string(w.acked_by)
         + " (term "
         + (w.acked_term ? election::to_string(*w.acked_term) : std::string{"unknown"})
         + ", lsn " + std::to_string(w.at.value) + ")";
}

/// Sweeps samples in time order against the strong acknowledgements before
/// them; `fold` sees each acknowledgement once, `test` each sample.
template <class Fold, class Test>
void sweep(const repl_observation& obs, Fold fold, Test test) {
  auto acks = strong_acks(obs);
  size_t next = 0;
  for (auto& s : obs.samples) {
    for (; next < acks.size() && *acks[next]->acked < s.at; ++next)
      fold(*acks[next]);
    test(s);
  }
}

class acked_commits_survive final : public repl_checker {
public:
  const char* name() const override { return "acked_commits_survive"; }
  void check(const repl_observation& obs,
             std::vector<repl_violation>& out) const override {
    // Per key: by acknowledging term, the latest write acknowledged in it.
    std::vector<std::map<term, const repl_write*>> known(obs.keys);
    std::set<uint64_t> reported;
    sweep(
        obs,
        [&](const repl_write& w) {
          if (w.key >= known.size() || !w.acked_term)
            return;
          auto& slot = known[w.key][*w.acked_term];
          if (!slot || slot->seq < w.seq)
            slot = &w;
        },
        [&](const repl_sample& s) {
          if (!s.serving)
            return;
          for (size_t k = 0; k < known.size() && k < s.values.size(); ++k) {
            const repl_write* need = nullptr;
            for (auto& [t, w] : known[k]) {
              if (s.promised < t)
                break;
              if (!need || need->seq < w->seq)
                need = w;
            }
            if (!need || s.values[k] >= need->seq || reported.count(need->seq))
              continue;
            reported.insert(need->seq);
            out.push_back({"",
                           describe(s) + " has " + key_name(k) + " = "
                               + std::to_string(s.values[k]) + ", but " + describe(*need),
                           true, need->seq});
          }
        });
  }
};

class acting_primary_reads final : public repl_checker {
public:
  const char* name() const override { return "acting_primary_reads"; }
  void check(const repl_observation& obs,
             std::vector<repl_violation>& out) const override {
    std::vector<const repl_write*> latest(obs.keys, nullptr);
    std::set<uint64_t> reported;
    sweep(
        obs,
        [&](const repl_write& w) {
          if (w.key < latest.size() && (!latest[w.key] || latest[w.key]->seq < w.seq))
            latest[w.key] = &w;
        },
        [&](const repl_sample& s) {
          if (!s.acting || !s.serving)
            return;
          for (size_t k = 0; k < latest.size() && k < s.values.size(); ++k) {
            auto need = latest[k];
            if (!need || s.values[k] >= need->seq || reported.count(need->seq))
              continue;
            reported.insert(need->seq);
            out.push_back({"",
                           "a read on the acting primary, " + describe(s) + ", saw "
                               + key_name(k) + " = " + std::to_string(s.values[k])
                               + ", but " + describe(*need),
                           true, need->seq});
          }
        });
  }
};

class committed_prefix_agrees final : public repl_checker {
public:
  const char* name() const override { return "committed_prefix_agrees"; }
  void check(const repl_observation& obs,
             std::vector<repl_violation>& out) const override {
    std::map<uint64_t, const repl_sample*> first;
    auto look = [&](const repl_sample& s) {
      auto [i, fresh] = first.emplace(s.applied.value, &s);
      if (fresh || i->second->values == s.values || i->second->node == s.node)
        return;
      auto show = [&](const repl_sample& x) {
        std::string v;
        for (size_t k = 0; k < x.values.size(); ++k)
          v += (k ? " " : "") + key_name(k) + "=" + std::to_string(x.values[k]);
        return describe(x) + " holds {" + v + "}";
      };
      out.push_back({"", show(*i->second) + " but " + show(s)});
    };
    for (auto& s : obs.samples)
      look(s);
    for (auto& s : obs.final_states)
      look(s);
  }
};

class commit_within_bound final : public repl_checker {
public:
  const char* name() const override { return "commit_within_bound"; }
  bool safety() const override { return false; }
  void check(const repl_observation& obs,
             std::vector<repl_violation>& out) const override {
    if (!obs.judge_liveness)
      return;
    auto limit = obs.heal + obs.bound;
    // A run that sends only weak writes (--weak-share 1) is judged on them:
    // otherwise it could never pass. replicas_converge still requires the
    // quorum to have replicated them by the end.
    bool any_strong = std::any_of(obs.writes.begin(), obs.writes.end(),
                                  [](auto& w) { return w.mode == commit_mode::strong; });
    auto wanted = any_strong ? commit_mode::strong : commit_mode::weak;
    for (auto& w : obs.writes)
      if (w.mode == wanted && w.acked && *w.acked >= obs.heal && *w.acked <= limit)
        return;
    out.push_back({"", std::string{"no "} + (any_strong ? "strong" : "weak")
                           + " write was acknowledged between heal at "
                           + ms_text(obs.heal) + " and heal + bound at "
                           + ms_text(limit)});
  }
};

class replicas_converge final : public repl_checker {
public:
  const char* name() const override { return "replicas_converge"; }
  bool safety() const override { return false; }
  void check(const repl_observation& obs,
             std::vector<repl_violation>& out) const override {
    if (!obs.judge_liveness || obs.final_states.empty())
      return;
    auto& a = obs.final_states.front();
    for (auto& b : obs.final_states)
      if (b.applied != a.applied || b.values != a.values)
        out.push_back({"", "after the quiet period " + describe(a) + " and " + describe(b)
                               + " differ"});
  }
};

class flow_control_holds final : public repl_checker {
public:
  const char* name() const override { return "flow_control_holds"; }
  void check(const repl_observation& obs,
             std::vector<repl_violation>& out) const override {
    if (obs.window_bytes == 0)
      return;
    // The peak only grows within a life: one complaint per replica, at the
    // first sample that shows it.
    std::set<uint64_t> told;
    auto look = [&](const repl_sample& s) {
      auto bound = obs.window_bytes + std::max(obs.batch_bytes, s.largest_record);
      if (s.peak_inflight <= bound || !told.insert(s.node.value).second)
        return;
      out.push_back({"", describe(s) + " had " + std::to_string(s.peak_inflight)
                             + " bytes in flight to one secondary, more than the "
                             + std::to_string(bound)
                             + " its window and one batch allow"});
    };
    for (auto& s : obs.samples)
      look(s);
    for (auto& s : obs.final_states)
      look(s);
  }
};

} // namespace

std::vector<std::unique_ptr<repl_checker>> standard_repl_checkers() {
  std::vector<std::unique_ptr<repl_checker>> out;
  out.push_back(std::make_unique<acked_commits_survive>());
  out.push_back(std::make_unique<acting_primary_reads>());
  out.push_back(std::make_unique<committed_prefix_agrees>());
  out.push_back(std::make_unique<commit_within_bound>());
  out.push_back(std::make_unique<replicas_converge>());
  out.push_back(std::make_unique<flow_control_holds>());
  return out;
}

std::vector<repl_violation>
run_repl_checkers(const std::vector<std::unique_ptr<repl_checker>>& checkers,
                  const repl_observation& obs, size_t max_per_checker) {
  return run_checkers(checkers, obs, max_per_checker);
}

} // namespace conclave::sim
