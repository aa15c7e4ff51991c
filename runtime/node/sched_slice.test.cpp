#include "runtime/node/sched_slice.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace conclave::node {
namespace {

using std::chrono::microseconds;

// Runs in a thread of its own so the test runner's thread keeps its slice.
TEST(SchedSlice, ShortSliceIsSetAndInheritedByNewThreads) {
  auto outcome =
      std::async(std::launch::async, [] {
        auto before = current_cpu_slice();
        auto error = request_cpu_slice(microseconds{500});
        if (!error.empty())
          return std::make_tuple(error, before, microseconds{0}, microseconds{0});
        microseconds child{0};
        std::thread t{[&] { child = current_cpu_slice(); }};
        t.join();
        return std::make_tuple(error, before, current_cpu_slice(), child);
      }).get();
  auto& [error, before, after, child] = outcome;
  if (error.find("before Linux 6.12") != std::string::npos)
    GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  EXPECT_NE(before, microseconds{500});
  EXPECT_EQ(after, microseconds{500});
  EXPECT_EQ(child, microseconds{500}); // the node's CAF threads start later
}

TEST(SchedSlice, OutOfRangeSliceIsReportedNotIgnored) {
  auto error = std::async(std::launch::async, [] {
                 return request_cpu_slice(microseconds{1});
               }).get(); // below the kernel's 100 us minimum
  EXPECT_NE(error, "");
}

} // namespace
} // namespace conclave::node
