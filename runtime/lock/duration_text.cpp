#include "runtime/lock/duration_text.hpp"

#include <cctype>
#include <cstdint>
#include <limits>

namespace conclave::lock {

namespace {

// Wide enough for 10^18 x 60 * 10^9 (__extension__: GCC's, outside ISO C++).
__extension__ typedef __int128 wide;

std::string quoted(std::string_view text) {
  return "'" + std::string{text} + "'";
}

} // namespace

outcome::result<std::chrono::nanoseconds, std::string>
parse_duration(std::string_view text) {
  auto expected = [&] {
    return "expected a duration like 10s, 500ms or 2m, got " + quoted(text);
  };
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
      ++i;
    return text.substr(start, i - start);
  };
  auto whole = digits();
  std::string_view frac;
  if (i < text.size() && text[i] == '.') {
    ++i;
    frac = digits();
    if (frac.empty())
      return expected();
  }
  if (whole.empty())
    return expected();
  auto unit = text.substr(i);
  int64_t scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1'000'000'000;
  else if (unit == "ms")
    scale = 1'000'000;
  else if (unit == "us")
    scale = 1'000;
  else if (unit == "ns")
    scale = 1;
  else if (unit == "m")
    scale = 60'000'000'000;
  else
    return "duration " + quoted(text) + ": unknown unit " + quoted(unit)
           + " (ns, us, ms, s or m; none means s)";
  auto too_large = [&] { return "duration " + quoted(text) + " is too large"; };
  constexpr auto max = static_cast<wide>(std::numeric_limits<int64_t>::max());
  wide ns = 0;
  for (char c : whole) {
    ns = ns * 10 + (c - '0');
    if (ns > max)
      return too_large();
  }
  ns *= scale;
  if (ns > max)
    return too_large();
  if (frac.size() > 18)
    return "duration " + quoted(text) + " is finer than a nanosecond";
  wide num = 0;
  wide den = 1;
  for (char c : frac) {
    num = num * 10 + (c - '0');
    den *= 10;
  }
  if ((num * scale) % den != 0)
    return "duration " + quoted(text) + " is finer than a nanosecond";
  ns += num * scale / den;
  if (ns > max)
    return too_large();
  return std::chrono::nanoseconds{static_cast<int64_t>(ns)};
}

std::string format_duration(std::chrono::nanoseconds d) {
  int64_t ns = d.count();
  std::string sign;
  if (ns < 0) {
    sign = "-";
    ns = ns == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max()
                                                   : -ns;
  }
  struct unit {
    int64_t scale;
    const char* name;
  };
  static constexpr unit units[] = {
      {1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}, {1, "ns"}};
  for (const auto& u : units) {
    if (ns < u.scale && u.scale != 1)
      continue;
    std::string out = sign + std::to_string(ns / u.scale);
    if (int64_t rest = ns % u.scale; rest > 0) {
      // All the digits of the remainder, trailing zeros dropped: exact.
      auto digits = std::to_string(u.scale + rest).substr(1);
      while (digits.back() == '0')
        digits.pop_back();
      out += "." + digits;
    }
    return out + u.name;
  }
  return sign + "0s";
}

} // namespace conclave::lock
