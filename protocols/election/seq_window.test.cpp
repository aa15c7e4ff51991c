#include "protocols/election/seq_window.hpp"

#include <gtest/gtest.h>

using conclave::election::seq_window;
using v = seq_window::verdict;

TEST(seq_window, each_number_is_fresh_once_in_any_order) {
  seq_window w;
  EXPECT_EQ(w.see(5), v::fresh);
  EXPECT_EQ(w.see(5), v::copy);
  EXPECT_EQ(w.see(7), v::fresh);
  EXPECT_EQ(w.see(6), v::fresh); // overtaken by 7: still counts
  EXPECT_EQ(w.see(6), v::copy);
  EXPECT_EQ(w.see(5), v::copy);  // the old highest moved into the window
  EXPECT_EQ(w.see(1), v::fresh); // below the first one seen
  EXPECT_EQ(w.see(1), v::copy);
}

TEST(seq_window, the_edges_of_the_window) {
  seq_window w;
  EXPECT_EQ(w.see(100), v::fresh);
  EXPECT_EQ(w.see(100 - seq_window::span), v::fresh); // bit 63, the last one kept
  EXPECT_EQ(w.see(100 - seq_window::span), v::copy);
  EXPECT_EQ(w.see(100 - seq_window::span - 1), v::too_old);
  // A jump of exactly the span keeps the old highest as bit 63.
  EXPECT_EQ(w.see(100 + seq_window::span), v::fresh);
  EXPECT_EQ(w.see(100), v::copy);
  EXPECT_EQ(w.see(99), v::too_old);
  // A longer jump forgets everything below.
  EXPECT_EQ(w.see(1000), v::fresh);
  EXPECT_EQ(w.see(999), v::fresh);
  EXPECT_EQ(w.see(100 + seq_window::span), v::too_old);
  EXPECT_EQ(w.see(UINT64_MAX), v::fresh);
  EXPECT_EQ(w.see(UINT64_MAX), v::copy);
}

TEST(seq_window, reset_forgets_a_previous_life) {
  seq_window w;
  EXPECT_EQ(w.see(1'000'000), v::fresh);
  w.reset();
  EXPECT_EQ(w.see(1), v::fresh);
  EXPECT_EQ(w.see(1), v::copy);
}
