// Order statistics for benchmark reports.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace conclave::bench {

/// Median of `v` (0 when empty).
inline double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// The q-quantile (0..1) of `v`, nearest rank; reorders `v`.
inline double percentile(std::vector<double>& v, double q) {
  if (v.empty())
    return 0;
  auto i = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

} // namespace conclave::bench
