// The closed loop of tests/bench/http: C clients, each putting one key after
// the other for S seconds; the latencies of the puts that succeeded.
#pragma once

#include "tests/bench/support/stats.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace conclave::bench {

using clock_type = std::chrono::steady_clock;

/// What one case of one round measured.
struct result {
  double puts_per_s = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  uint64_t failed = 0;
};

/// Runs `clients` loops of `put(client, i)` (true: succeeded) for `seconds`
/// and collects the latencies of the successful ones.
inline result closed_loop(unsigned clients, double seconds,
                          const std::function<bool(unsigned, uint64_t)>& put) {
  std::mutex mu;
  std::vector<double> lat;
  std::atomic<uint64_t> failed{0};
  auto start = clock_type::now();
  auto end = start
             + std::chrono::duration_cast<clock_type::duration>(
                 std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      std::vector<double> mine;
      for (uint64_t i = 0; clock_type::now() < end; ++i) {
        auto t0 = clock_type::now();
        bool ok = put(c, i);
        auto ms =
            std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
        if (ok)
          mine.push_back(ms);
        else
          ++failed;
      }
      std::lock_guard<std::mutex> lk{mu};
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  for (auto& t : threads)
    t.join();
  double took = std::chrono::duration<double>(clock_type::now() - start).count();
  result r;
  r.puts_per_s = static_cast<double>(lat.size()) / took;
  r.p50_ms = percentile(lat, 0.50);
  r.p99_ms = percentile(lat, 0.99);
  r.failed = failed;
  return r;
}

} // namespace conclave::bench
