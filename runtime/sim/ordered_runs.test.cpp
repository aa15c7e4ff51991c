// run_in_order: reports reach the consumer in run order whatever order the
// threads finish them in, runs do overlap, no more than the window is ever
// ahead of the consumer, and a run's exception comes back after the runs
// before it were consumed.
#include "runtime/sim/ordered_runs.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sched.h>
#include <stdexcept>
#include <thread>
#include <vector>

using conclave::sim::run_in_order;
using conclave::sim::run_threads;

namespace {

/// Work whose length depends on k, so that threads finish out of order.
uint64_t busy(size_t k) {
  uint64_t x = k + 1;
  for (size_t i = 0; i < (k % 7) * 20000; ++i)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

} // namespace

TEST(ordered_runs, reports_reach_the_consumer_in_run_order) {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    std::vector<size_t> seen;
    std::vector<uint64_t> values;
    run_in_order(
        200, threads,
        [](size_t k) {
          return std::pair{k, busy(k)};
        },
        [&](std::pair<size_t, uint64_t> r) {
          seen.push_back(r.first);
          values.push_back(r.second);
        });
    ASSERT_EQ(seen.size(), 200u) << threads;
    for (size_t k = 0; k < seen.size(); ++k) {
      EXPECT_EQ(seen[k], k) << threads;
      EXPECT_EQ(values[k], busy(k)) << threads;
    }
  }
}

TEST(ordered_runs, runs_overlap_on_several_threads) {
  // Run 0 waits until run 1 has started: only a second thread can start it.
  std::mutex m;
  std::condition_variable cv;
  bool second_started = false;
  bool overlapped = false;
  run_in_order(
      4, 2,
      [&](size_t k) {
        std::unique_lock<std::mutex> lock{m};
        if (k == 1) {
          second_started = true;
          cv.notify_all();
        } else if (k == 0) {
          overlapped =
              cv.wait_for(lock, std::chrono::seconds{10}, [&] { return second_started; });
        }
        return k;
      },
      [](size_t) {});
  EXPECT_TRUE(overlapped);
}

TEST(ordered_runs, one_thread_runs_everything_on_the_calling_thread) {
  auto self = std::this_thread::get_id();
  size_t elsewhere = 0;
  run_in_order(
      20, 1,
      [&](size_t k) {
        return std::pair{k, std::this_thread::get_id()};
      },
      [&](std::pair<size_t, std::thread::id> r) { elsewhere += r.second != self; });
  EXPECT_EQ(elsewhere, 0u);
}

TEST(ordered_runs, no_run_starts_more_than_the_window_ahead_of_the_consumer) {
  const unsigned threads = 3;
  const size_t window = 4 * threads;
  std::atomic<size_t> consumed{0};
  std::atomic<size_t> worst{0};
  run_in_order(
      300, threads,
      [&](size_t k) {
        // k was started while `consumed` runs were consumed.
        auto ahead = k + 1 - consumed.load();
        auto w = worst.load();
        while (ahead > w && !worst.compare_exchange_weak(w, ahead)) {
        }
        return busy(k);
      },
      [&](uint64_t) {
        ++consumed;
        // A slow consumer: the threads run ahead as far as they may.
        (void)busy(6);
      });
  EXPECT_EQ(consumed.load(), 300u);
  // One more than the window: a run may start between the pool's count of
  // consumed runs and this test's.
  EXPECT_LE(worst.load(), window + 1);
  EXPECT_GT(worst.load(), 1u); // the threads did run ahead
}

TEST(ordered_runs, a_runs_exception_comes_back_after_the_runs_before_it) {
  for (unsigned threads : {1u, 2u, 4u}) {
    std::vector<size_t> seen;
    try {
      run_in_order(
          100, threads,
          [](size_t k) {
            if (k == 37)
              throw std::runtime_error{"run 37"};
            return busy(k) == 0 ? k + 1 : k;
          },
          [&](size_t k) { seen.push_back(k); });
      ADD_FAILURE() << "no exception, " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "run 37");
    }
    ASSERT_EQ(seen.size(), 37u) << threads;
    for (size_t k = 0; k < seen.size(); ++k)
      EXPECT_EQ(seen[k], k);
  }
}

TEST(ordered_runs, threads_are_at_least_one_and_at_most_the_runs) {
  EXPECT_EQ(run_threads(4, 2), 2u);
  EXPECT_EQ(run_threads(4, 0), 1u);
  EXPECT_EQ(run_threads(1, 1000), 1u);
  EXPECT_EQ(run_threads(3, 1000), 3u);
  EXPECT_EQ(run_threads(0, 1000), conclave::sim::usable_cores());
  EXPECT_EQ(run_threads(0, 1), 1u);
}

TEST(ordered_runs, one_per_core_counts_the_cores_this_thread_may_use) {
  // Pinned to one core (as taskset or a container's cpuset would), 0 means
  // one thread, however many cores the machine has.
  cpu_set_t before;
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &before))
      first = c;
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  auto pinned = run_threads(0, 1000);
  ASSERT_EQ(::sched_setaffinity(0, sizeof before, &before), 0);
  EXPECT_EQ(pinned, 1u);
  EXPECT_EQ(run_threads(0, 1000), static_cast<unsigned>(CPU_COUNT(&before)));
}
