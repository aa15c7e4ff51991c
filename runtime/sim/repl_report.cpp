#include "runtime/sim/repl_report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace conclave::sim {

namespace {

double ms(duration d) {
  return static_cast<double>(d.count()) / 1e6;
}

} // namespace

repl_summary::repl_summary(std::string replay_prefix)
    : verdicts_(std::move(replay_prefix)) {}

void repl_summary::add(const repl_run_report& r) {
  faults_ += r.faults;
  writes_ += r.writes;
  strong_ += r.strong_acked;
  weak_ += r.weak_acked;
  lost_ += r.lost;
  syncs_ += r.syncs;
  failovers_ += r.failovers();
  samples_ += r.samples;
  discarded_ += r.samples_discarded;
  acting_reads_ += r.acting_reads;
  history_ops_ += r.history_ops;
  history_unanswered_ += r.history_unanswered;
  history_undecided_ += r.history_undecided;
  messages_ += r.messages;
  messages_lost_ += r.messages_lost;
  duplicated_ += r.duplicated;
  unsynced_lost_ += r.unsynced_lost;
  disks_.add(r.disks, r.seed);
  checkpoints_ += r.checkpoints;
  installs_ += r.installs;
  sync_durations_.insert(sync_durations_.end(), r.sync_durations.begin(),
                         r.sync_durations.end());
  if (r.recovery) {
    ++recovered_runs_;
    recovery_max_ = std::max(recovery_max_, *r.recovery);
  }
  verdicts_.add(r.seed, r.fault_list, run_verdicts::complaints_of(r.violations),
                r.liveness_failed(), r.liveness_judged);
}

double repl_summary::sync_ms(double p) const {
  if (sync_durations_.empty())
    return 0;
  auto v = sync_durations_;
  auto i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return ms(v[i]);
}

void repl_summary::print(std::ostream& out) const {
  out << std::fixed << std::setprecision(1);
  out << "writes: " << writes_ << " issued, commits acked " << strong_ << " strong + "
      << weak_ << " weak, lost " << lost_ << " (must be 0)\n";
  out << "failovers: " << failovers_ << " (sync phases " << syncs_ << ": median "
      << sync_ms(50) << " ms, p99 " << sync_ms(99) << " ms, max " << sync_ms(100)
      << " ms); first strong commit after heal: at most " << ms(recovery_max_) << " ms ("
      << recovered_runs_ << " of " << plural(verdicts_.runs(), "run") << ")\n";
  out << "runs: " << plural(faults_, "fault") << ", messages " << messages_ << " (lost "
      << messages_lost_ << ", duplicated " << duplicated_
      << "), unsynced records lost in crashes " << unsynced_lost_ << ", replica samples "
      << samples_ << " (" << acting_reads_ << " on the acting primary, " << discarded_
      << " discarded: status changed while read)\n";
  out << "linearizability: " << history_ops_
      << " operations of the history clients checked (" << history_unanswered_
      << " without an answer), " << history_undecided_
      << " keys or queues undecided within the step budget\n";
  out << "checkpoints: " << checkpoints_ << " written, " << installs_
      << " streamed to a replica and installed\n";
  disks_.print(out);
  verdicts_.print_failures(out, "no majority up with its log at the end");
  out << verdict() << '\n';
}

std::string repl_summary::verdict() const {
  return verdicts_.verdict();
}

std::string repl_summary::to_json(uint64_t seed, const std::string& faults) const {
  auto doc = verdicts_.envelope("replication", seed, faults);
  doc["faults_applied"] = faults_;
  doc["writes"] = writes_;
  doc["commits_acked"] = {{"strong", strong_}, {"weak", weak_}};
  doc["commits_lost"] = lost_;
  doc["failovers"] = failovers_;
  doc["sync_phases"] = {{"count", syncs_},
                        {"median_ms", sync_ms(50)},
                        {"p99_ms", sync_ms(99)},
                        {"max_ms", sync_ms(100)}};
  doc["first_commit_after_heal_max_ms"] = ms(recovery_max_);
  doc["messages"] = {
      {"total", messages_}, {"lost", messages_lost_}, {"duplicated", duplicated_}};
  doc["unsynced_records_lost_in_crashes"] = unsynced_lost_;
  doc["checkpoints"] = {{"written", checkpoints_}, {"installed", installs_}};
  doc["disks"] = disks_.to_json();
  doc["samples"] = {{"taken", samples_},
                    {"on_acting_primary", acting_reads_},
                    {"discarded", discarded_}};
  doc["history"] = {{"operations", history_ops_},
                    {"unanswered", history_unanswered_},
                    {"undecided", history_undecided_}};
  return doc.dump();
}

} // namespace conclave::sim
