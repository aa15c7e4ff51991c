// ordered_runs: the runs of one `conclave sim` command on several threads.
// Every run builds its own world (its own actor system, clocks, network and
// disks) from its seed alone, so runs are independent; run_in_order starts
// them on a pool of threads and hands each run's report to one consumer, on
// the calling thread, in the order of the runs. What the consumer adds up and
// prints is therefore byte for byte the same for any number of threads.
//
// At most `window` runs are finished and not yet consumed (or under way
// beyond the oldest unconsumed one), so memory stays bounded however many
// runs are asked. A run that throws stops the pool: its exception is rethrown
// from run_in_order when the consumer reaches that run, after every thread
// has ended. Notifications are sent with the lock held, so that race
// checkers (helgrind) see every hand-over.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <sched.h>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace conclave::sim {

/// The cores this thread may run on (its affinity: taskset, a container's
/// cpuset), or the machine's if that cannot be read; at least one.
inline unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The threads to use for `runs` runs when asked for `asked` (0: one per
/// usable core); never more than the runs, at least one.
inline unsigned run_threads(unsigned asked, size_t runs) {
  unsigned t = asked == 0 ? usable_cores() : asked;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(t, runs)));
}

/// Calls consume(run(k)) for k = 0 .. n-1 in that order; run(k) is called on
/// up to `threads` threads at once (threads <= 1: all on the calling thread).
template <class Run, class Consume>
void run_in_order(size_t n, unsigned threads, Run run, Consume consume) {
  using report = std::invoke_result_t<Run&, size_t>;
  if (threads <= 1 || n <= 1) {
    for (size_t k = 0; k < n; ++k)
      consume(run(k));
    return;
  }
  const size_t window = 4 * static_cast<size_t>(threads);
  struct slot {
    std::optional<report> value;
    std::exception_ptr error;
    bool done = false;
  };
  std::vector<slot> slots(window);
  std::mutex m;
  std::condition_variable work_cv;
  std::condition_variable done_cv;
  size_t next = 0;     // the next run to start
  size_t consumed = 0; // runs handed to the consumer
  bool stop = false;
  auto worker = [&] {
    while (true) {
      size_t k = 0;
      {
        std::unique_lock<std::mutex> lock{m};
        // Slot k % window is free once run k - window was consumed.
        work_cv.wait(lock, [&] { return stop || next >= n || next < consumed + window; });
        if (stop || next >= n)
          return;
        k = next++;
      }
      slot s;
      try {
        s.value.emplace(run(k));
      } catch (...) {
        s.error = std::current_exception();
      }
      s.done = true;
      {
        std::lock_guard<std::mutex> lock{m};
        if (s.error)
          stop = true;
        slots[k % window] = std::move(s);
        done_cv.notify_all();
        work_cv.notify_all();
      }
    }
  };
  std::vector<std::thread> pool;
  auto join = [&] {
    {
      std::lock_guard<std::mutex> lock{m};
      stop = true;
      work_cv.notify_all();
    }
    for (auto& t : pool)
      t.join();
    pool.clear();
  };
  try {
    for (unsigned i = 0; i < threads; ++i)
      pool.emplace_back(worker);
    for (size_t k = 0; k < n; ++k) {
      slot s;
      {
        std::unique_lock<std::mutex> lock{m};
        done_cv.wait(lock, [&] { return slots[k % window].done; });
        s = std::move(slots[k % window]);
        slots[k % window] = slot{};
        ++consumed;
        work_cv.notify_all();
      }
      if (s.error)
        std::rethrow_exception(s.error);
      consume(std::move(*s.value));
    }
  } catch (...) {
    join();
    throw;
  }
  join();
}

/// The CLI's loop over seeds: run k simulates a copy of `settings` whose
/// seed (`seed_of(copy)`, a reference) is first_seed + k, and its report is
/// added to `summary` in seed order.
template <class Summary, class Settings, class SeedOf, class Simulate>
void add_runs(Summary& summary, const Settings& settings, SeedOf seed_of,
              uint64_t first_seed, size_t runs, unsigned threads, Simulate simulate) {
  run_in_order(
      runs, run_threads(threads, runs),
      [&](size_t k) {
        auto copy = settings;
        seed_of(copy) = first_seed + k;
        return simulate(copy);
      },
      [&summary](auto&& report) { summary.add(report); });
}

} // namespace conclave::sim
