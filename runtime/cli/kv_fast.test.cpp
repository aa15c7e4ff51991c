// The handoff from the front to the full binary, by plain calls.
#include "runtime/cli/kv_fast.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace conclave::cli {
namespace {

TEST(kv_handoff, a_session_and_a_deadline_survive_the_text) {
  kv_options o;
  o.session_id = "0123456789abcdef0123456789abcdef";
  o.deadline = kv_clock::time_point{std::chrono::nanoseconds{123456789012345}};
  kv_options back;
  ASSERT_TRUE(read_kv_handoff(kv_handoff_text(o), back));
  EXPECT_EQ(back.session_id, o.session_id);
  EXPECT_EQ(back.deadline, o.deadline);
}

TEST(kv_handoff, a_read_hands_over_no_session) {
  kv_options o;
  o.deadline = kv_clock::time_point{std::chrono::nanoseconds{1}};
  kv_options back;
  back.session_id = "left";
  ASSERT_TRUE(read_kv_handoff(kv_handoff_text(o), back));
  EXPECT_EQ(back.session_id, "");
  EXPECT_EQ(back.deadline, o.deadline);
}

TEST(kv_handoff, garbage_is_refused_and_changes_nothing) {
  for (const std::string& bad : std::vector<std::string>{
           "", ",", "abc", "abc,", ",0", ",-5", ",12x", "ABC,5", "a b,5", "a,5,6",
           std::string(65, 'a') + ",5", ",99999999999999999999999", "zz,5", ",+5"}) {
    kv_options o;
    o.session_id = "kept";
    auto before = o.deadline;
    EXPECT_FALSE(read_kv_handoff(bad, o)) << bad;
    EXPECT_EQ(o.session_id, "kept") << bad;
    EXPECT_EQ(o.deadline, before) << bad;
  }
}

} // namespace
} // namespace conclave::cli
