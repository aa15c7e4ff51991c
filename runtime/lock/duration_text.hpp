// Durations as `conclave lock` takes and prints them: "10s", "500ms", "2m",
// "1.5s", "250us", "100ns"; a plain number is seconds (as for sleep(1) and
// flock -w).
//
// runtime/sim/fault_plan.hpp has a parse_duration for the fault language, but
// it lives in the simulator component (CAF, election actors), requires a unit,
// has no minutes and goes through a double; this one is exact to the
// nanosecond and keeps the lock runner free of CAF.
#pragma once

#include <boost/outcome.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace conclave::lock {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

/// "10s", "500ms", "2m", "1.5s", "250us", "100ns", "3" (seconds) -> duration.
/// Refuses negative, empty, unknown units, values finer than 1ns and values
/// that do not fit 64-bit nanoseconds, with one line naming the text.
outcome::result<std::chrono::nanoseconds, std::string>
parse_duration(std::string_view text);

/// Exact text that parse_duration reads back, in the largest unit not above
/// the value: 10s, 7.8s, 200ms, 1.5us, 3.333333333s, 1ns, 0ns.
std::string format_duration(std::chrono::nanoseconds d);

} // namespace conclave::lock
