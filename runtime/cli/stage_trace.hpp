// When a one-shot command reached each stage of its run, for benchmarks
// (`conclave kv --trace-stages`, scripts/bench-kv-oneshot.sh --trace): each
// mark records the wall clock (CLOCK_REALTIME, microseconds since the epoch,
// so that a script can subtract the time it started the process), and
// print() writes them on stderr as `conclave-trace STAGE MICROSECONDS` lines.
// Marking costs one clock read; nothing is printed unless asked.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <time.h>

namespace conclave::cli {

class stage_trace {
public:
  /// Records `stage` (a string literal) now; ignored past 16 marks.
  void mark(const char* stage) {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    auto i = count_.fetch_add(1, std::memory_order_relaxed);
    if (i >= marks_.size())
      return;
    marks_[i] = {stage, static_cast<uint64_t>(ts.tv_sec) * 1000000u
                            + static_cast<uint64_t>(ts.tv_nsec) / 1000u};
  }

  /// Writes every mark on stderr, in the order they were made.
  void print() const {
    auto n = std::min<size_t>(count_.load(std::memory_order_relaxed), marks_.size());
    for (size_t i = 0; i < n; ++i)
      std::fprintf(stderr, "conclave-trace %s %llu\n", marks_[i].stage,
                   static_cast<unsigned long long>(marks_[i].micros));
  }

private:
  struct entry {
    const char* stage = "";
    uint64_t micros = 0;
  };
  std::array<entry, 16> marks_{};
  std::atomic<size_t> count_{0};
};

/// The process's trace (main() marks "main" first).
inline stage_trace& stages() {
  static stage_trace t;
  return t;
}

} // namespace conclave::cli
