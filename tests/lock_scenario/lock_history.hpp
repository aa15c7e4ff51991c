// The checker of the lock scenario (scripts/lock-scenario.sh): reads the lines
// the probes (lock_probe_child.cpp) appended to one file and judges them as the
// history of one mutex with fencing tokens.
//
// Each token, with the pid of the process that ran with it (the line's fifth
// field, if any), is one holder; its interval is [its start line, its last
// line].
// The rules:
//   overlap      no two holders' intervals overlap (mutual exclusion, seen
//                from outside: the work of two holders never ran at once);
//   token order  in the order of their start lines, tokens strictly grow (a
//                token is granted once, and a later grant has a larger one);
//   stale token  no line of a token is later than the start of a larger token
//                (the work of an older grant did not go on once a newer grant
//                started: what a fenced resource would refuse).
// A line that does not parse, or a token's line before its start line, is
// malformed: the harness, not the lock, is at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace conclave::lock_scenario {

/// One token's run as the probe file shows it.
struct holder {
  uint64_t token = 0;
  int64_t start_ns = 0;
  int64_t last_ns = 0;
  bool ended = false; // an `end` line: the probe ran to its duration
  size_t lines = 0;
};

enum class rule { overlap, token_order, stale_token };

struct violation {
  rule broken = rule::overlap;
  uint64_t earlier = 0; // for overlap and token order: the holder that started first;
  uint64_t later = 0;   // for stale token: the smaller token, then the larger
  // overlap: how long the earlier holder ran past the later one's start (its
  // last line minus that start); stale token: how long the smaller token ran
  // past the larger one's start; token order: 0.
  int64_t amount_ns = 0;
  int64_t later_start_ns = 0; // the start of `later` (what a fault is matched to)
};

struct history_report {
  size_t lines = 0;
  std::vector<holder> holders; // in order of start
  std::vector<violation> violations;
  std::vector<std::string> malformed; // "line N: why"
  size_t count(rule r) const;
  int64_t max_overlap_ns() const; // the largest amount of any violation, 0 if none
};

/// Reads a probe file and applies the three rules.
history_report check_history(std::istream& in);

/// A human-readable account: the violations (up to `max_listed`), then one
/// line `summary holders=.. lines=.. violations=.. overlap=.. order=.. stale=..
/// max_overlap_ms=.. malformed=..`.
void print_report(const history_report& r, std::ostream& out, size_t max_listed = 20);

} // namespace conclave::lock_scenario
