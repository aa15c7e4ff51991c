#include "protocols/replication/replica_log.hpp"

#include <gtest/gtest.h>

using namespace conclave::replication;

namespace {

term t_(uint64_t epoch) {
  return term{epoch, node_id{1}, 1};
}

entry e_(uint64_t at, uint64_t epoch, size_t bytes = 0) {
  return entry{lsn{at}, t_(epoch), entry_kind::transaction, std::string(bytes, 'x')};
}

TEST(replica_log, terms_are_known_from_the_base_to_the_last_record) {
  replica_log log{lsn{10}, t_(2), {e_(11, 2), e_(12, 3)}};
  EXPECT_EQ(log.last(), lsn{12});
  EXPECT_EQ(log.last_term(), t_(3));
  EXPECT_EQ(log.term_at(lsn{10}), t_(2));
  EXPECT_EQ(log.term_at(lsn{12}), t_(3));
  EXPECT_FALSE(log.term_at(lsn{9}));
  EXPECT_FALSE(log.term_at(lsn{13}));
  EXPECT_TRUE(log.matches(lsn{11}, t_(2)));
  EXPECT_FALSE(log.matches(lsn{11}, t_(3)));
}

TEST(replica_log, truncation_and_compaction_keep_byte_totals_right) {
  replica_log log;
  for (uint64_t i = 1; i <= 5; ++i)
    log.append(e_(i, 1, i * 10));
  // entry_bytes = 24 + payload
  EXPECT_EQ(log.bytes_between(lsn{0}, lsn{5}), 5 * 24 + 150u);
  EXPECT_EQ(log.bytes_between(lsn{2}, lsn{4}), 2 * 24 + 70u);
  log.compact_through(lsn{2});
  EXPECT_EQ(log.base(), lsn{2});
  EXPECT_EQ(log.base_term(), t_(1));
  EXPECT_EQ(log.bytes_between(lsn{2}, lsn{4}), 2 * 24 + 70u);
  EXPECT_EQ(log.bytes_between(lsn{0}, lsn{5}), 3 * 24 + 120u);
  log.truncate_after(lsn{3});
  EXPECT_EQ(log.last(), lsn{3});
  log.append(e_(4, 2, 1));
  EXPECT_EQ(log.bytes_between(lsn{3}, lsn{4}), 25u);
  log.reset(lsn{20}, t_(4));
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(log.last(), lsn{20});
  EXPECT_TRUE(log.matches(lsn{20}, t_(4)));
  log.append(e_(21, 4, 6));
  EXPECT_EQ(log.bytes_between(lsn{20}, lsn{21}), 30u);
}

} // namespace
