// round_trip_watch: decides when a node warns that its measured round trips
// approach what its election settings tolerate (issue 12: "a node warns when
// measured round trips approach the envelope"). Pure: the node probe feeds it
// the core's smoothed round trip after every input and logs what it returns.
//
// One warning per excursion: it warns when election::round_trip_warning() first
// names the measured round trip, stays quiet while the round trip stays out of
// the envelope, and re-arms only once the round trip is back below 3/4 of the
// threshold (hysteresis: a round trip hovering at the threshold does not flood
// the log).
#pragma once

#include "protocols/election/config.hpp"

#include <optional>
#include <string>

namespace conclave::node {

class round_trip_watch {
public:
  explicit round_trip_watch(election::election_config cfg) : cfg_(std::move(cfg)) {}

  /// A new smoothed round trip (from `samples` measurements so far). Returns the
  /// warning to log, once per excursion; nothing otherwise or without samples.
  std::optional<std::string> observe(election::duration smoothed, uint64_t samples) {
    if (samples == 0)
      return std::nullopt;
    auto warning = election::round_trip_warning(cfg_, smoothed);
    if (!warning.empty()) {
      if (warned_)
        return std::nullopt;
      warned_ = true;
      ++warnings_;
      return warning;
    }
    // Back inside: re-arm once clearly inside (3/4 of the smallest rtt that warns).
    if (warned_ && election::round_trip_warning(cfg_, smoothed * 4 / 3).empty())
      warned_ = false;
    return std::nullopt;
  }

  /// Whether the last excursion is still going on.
  bool warned() const { return warned_; }
  uint64_t warnings() const { return warnings_; }

private:
  election::election_config cfg_;
  bool warned_ = false;
  uint64_t warnings_ = 0;
};

} // namespace conclave::node
