#include "runtime/sim/run_verdicts.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace conclave::sim {

namespace {

constexpr size_t max_failures = 20;
constexpr size_t max_complaints = 5;

} // namespace

std::string plural(uint64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

run_verdicts::run_verdicts(std::string replay_prefix)
    : prefix_(std::move(replay_prefix)) {}

void run_verdicts::add(uint64_t seed, const std::string& faults,
                       const std::vector<complaint>& what, bool liveness_failed,
                       bool judged) {
  ++runs_;
  if (!judged)
    ++unjudged_;
  for (auto& c : what)
    if (c.safety)
      ++safety_;
  if (liveness_failed)
    ++liveness_;
  if (what.empty())
    return;
  if (failures_.size() == max_failures) {
    ++failures_left_out_;
    return;
  }
  failure f;
  f.seed = seed;
  f.faults = faults;
  for (auto& c : what) {
    if (f.what.size() == max_complaints) {
      ++f.more;
      continue;
    }
    f.what.push_back(c.checker + ": " + c.what);
  }
  failures_.push_back(std::move(f));
}

void run_verdicts::print_failures(std::ostream& out, const char* why_unjudged) const {
  if (unjudged_ > 0)
    out << "liveness not judged in " << plural(unjudged_, "run") << " (" << why_unjudged
        << ")\n";
  for (auto& f : failures_) {
    out << "FAILED seed " << f.seed << " (faults "
        << (f.faults.empty() ? "none" : f.faults) << "):\n";
    for (auto& w : f.what)
      out << "  " << w << '\n';
    if (f.more > 0)
      out << "  (" << f.more << " more)\n";
    out << "  replay: " << replay(f.seed) << '\n';
  }
  if (failures_left_out_ > 0)
    out << "(" << plural(failures_left_out_, "more failing run") << " not listed)\n";
}

std::string run_verdicts::verdict() const {
  std::ostringstream o;
  o << (safety_ + liveness_ == 0 ? "OK: " : "FAILED: ")
    << plural(safety_, "safety violation") << ", "
    << plural(liveness_, "liveness failure") << " in " << plural(runs_, "run");
  return o.str();
}

nlohmann::json run_verdicts::failures_json() const {
  auto list = nlohmann::json::array();
  for (auto& f : failures_)
    list.push_back({{"seed", f.seed},
                    {"faults", f.faults},
                    {"what", f.what},
                    {"replay", replay(f.seed)}});
  return list;
}

nlohmann::json run_verdicts::envelope(const char* workload, uint64_t seed,
                                      const std::string& faults) const {
  return result_envelope(workload, seed, faults, verdict(),
                         {runs_, safety_, liveness_, unjudged_}, failures_json());
}

nlohmann::json result_envelope(const char* workload, uint64_t seed,
                               const std::string& faults, const std::string& verdict,
                               const result_counts& counts, nlohmann::json failures) {
  nlohmann::json doc;
  doc["workload"] = workload;
  doc["seed"] = seed;
  doc["runs"] = counts.runs;
  doc["faults"] = faults;
  doc["verdict"] = verdict;
  doc["safety_violations"] = counts.safety_violations;
  doc["liveness_failures"] = counts.liveness_failures;
  doc["liveness_not_judged"] = counts.liveness_not_judged;
  doc["failures"] = std::move(failures);
  return doc;
}

std::string run_verdicts::replay(uint64_t seed) const {
  return prefix_ + " --runs 1 --seed " + std::to_string(seed);
}

} // namespace conclave::sim
