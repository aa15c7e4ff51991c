// The lock scenario's fault log (scripts/lock-scenario.sh writes one line per
// fault it caused: `T KIND [pid P] [token K] ...`, T in CLOCK_MONOTONIC ns, the
// probes' clock) and which fault each overlap followed.
//
// An overlap of holders a (earlier) and b (later) is put down to
//   - a client fault (client-kill, client-stop) that named token a: the lock
//     client of a was killed or stopped while a's command ran;
//   - otherwise the last fault of any kind before b started, if at most
//     `window_ns` before it (member faults act through lost leases and
//     elections, not on one token);
//   - otherwise "none": no fault of the scenario explains it.
// It is an account for reading the figures, not a proof of cause.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "tests/lock_scenario/lock_history.hpp"

namespace conclave::lock_scenario {

struct fault {
  int64_t t_ns = 0;
  std::string kind; // client-kill, client-stop, member-kill, member-stop
  bool has_token = false;
  uint64_t token = 0; // the holder whose client a client fault hit
};

/// Reads a fault log; lines that do not start with `T KIND` are skipped.
std::vector<fault> read_faults(std::istream& in);

/// Overlap violations of `r` counted by the fault they followed (kind, or
/// "none"); every kind of `faults` appears, with 0 if it explains none.
std::map<std::string, size_t> overlaps_by_fault(const history_report& r,
                                                const std::vector<fault>& faults,
                                                int64_t window_ns = 15'000'000'000);

} // namespace conclave::lock_scenario
