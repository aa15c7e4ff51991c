// history_bench: time of the linearizability checker on generated client
// histories (tests/support/random_history.hpp) of various sizes, widths of
// concurrency and shares of unanswered calls. Prints figures; asserts nothing
// about time.
//
//   history_bench [--quick]
#include "protocols/history/linearizability.hpp"

#include "tests/support/random_history.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>

using namespace conclave::history;
using conclave::testing::random_history;
using conclave::testing::random_history_options;

namespace {

void run(size_t ops, size_t keys, size_t queues, size_t clients, int64_t latency,
         double unanswered) {
  random_history_options o;
  o.ops = ops;
  o.keys = keys;
  o.queues = queues;
  o.clients = clients;
  o.max_latency = latency;
  o.unanswered = unanswered;
  o.seed = 42;
  auto h = random_history(o);
  auto start = std::chrono::steady_clock::now();
  auto r = check_linearizable(h);
  auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf(
      "%7zu ops %4zu keys %3zu queues %3zu clients latency<=%-3lld unanswered %4.0f%%"
      "  %-16s %4zu partitions %10llu steps %9.1f ms\n",
      ops, keys, queues, clients, static_cast<long long>(latency), unanswered * 100,
      to_string(r.result), r.partitions, static_cast<unsigned long long>(r.steps), ms);
}

} // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (quick) {
    run(1'000, 10, 1, 5, 10, 0.05);
    return 0;
  }
  run(10'000, 100, 0, 5, 10, 0.0);
  run(10'000, 100, 0, 5, 10, 0.05);
  run(10'000, 100, 10, 5, 10, 0.05);
  run(10'000, 10, 0, 5, 10, 0.05);
  run(10'000, 100, 0, 20, 50, 0.05);
  return 0;
}
