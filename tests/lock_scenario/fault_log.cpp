#include "tests/lock_scenario/fault_log.hpp"

#include <algorithm>
#include <sstream>

namespace conclave::lock_scenario {

std::vector<fault> read_faults(std::istream& in) {
  std::vector<fault> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream is(line);
    fault f;
    if (!(is >> f.t_ns >> f.kind))
      continue;
    std::string word;
    while (is >> word)
      if (word == "token" && is >> f.token)
        f.has_token = true;
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(),
            [](const fault& a, const fault& b) { return a.t_ns < b.t_ns; });
  return out;
}

std::map<std::string, size_t> overlaps_by_fault(const history_report& r,
                                                const std::vector<fault>& faults,
                                                int64_t window_ns) {
  std::map<std::string, size_t> counts;
  for (auto& f : faults)
    counts.emplace(f.kind, 0);
  counts.emplace("none", 0);
  for (auto& v : r.violations) {
    if (v.broken != rule::overlap)
      continue;
    const fault* cause = nullptr;
    for (auto& f : faults)
      if (f.has_token && f.token == v.earlier && f.t_ns <= v.later_start_ns)
        cause = &f; // the last client fault on the earlier holder
    if (cause == nullptr)
      for (auto& f : faults)
        if (f.t_ns <= v.later_start_ns && v.later_start_ns - f.t_ns <= window_ns)
          cause = &f; // the last fault shortly before the later start
    ++counts[cause ? cause->kind : "none"];
  }
  return counts;
}

} // namespace conclave::lock_scenario
