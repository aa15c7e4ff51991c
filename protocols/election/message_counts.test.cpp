// Messages per election against the textbook figures, for n = 2..32.
#include "tests/support/election_network.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using conclave::testing::election_network;
namespace el = conclave::election;

namespace {

el::election_config quiet_config(el::algorithm a) {
  el::election_config cfg;
  cfg.algo = a;
  cfg.election_wait = std::chrono::hours(1); // only the initiator we pick elects
  return cfg;
}

template <class T>
uint64_t count(const election_network& net) {
  return net.sent(election_network::index_of<T>());
}

} // namespace

class message_counts : public ::testing::TestWithParam<int> {};

TEST_P(message_counts, bully_highest_live_initiator_sends_n_minus_2_coordinators) {
  const auto n = static_cast<uint64_t>(GetParam());
  election_network net(n, quiet_config(el::algorithm::bully));
  net.start_all();
  net.node(n).request_election(net.now());
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == el::node_id{n}; }, 1s));
  net.reset_counts();
  // The leader crashes; only the highest survivor notices and initiates.
  net.crash(el::node_id{n}, /*notify=*/false);
  net.notify_down(el::node_id{n - 1}, el::node_id{n});
  ASSERT_TRUE(
      net.run_until([&] { return net.agreed_leader() == el::node_id{n - 1}; }, 1s));
  EXPECT_EQ(count<el::coordinator_msg>(net), n - 2);
  EXPECT_EQ(net.election_messages(), n - 2);
}

TEST_P(message_counts, bully_lowest_initiator_costs_n_times_n_minus_1_over_2_elections) {
  const auto n = static_cast<uint64_t>(GetParam());
  election_network net(n, quiet_config(el::algorithm::bully));
  net.start_all();
  net.node(1).request_election(net.now());
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == el::node_id{n}; }, 1s));
  net.run_for(100ms);
  EXPECT_EQ(count<el::election_msg>(net), n * (n - 1) / 2);
  EXPECT_EQ(count<el::answer_msg>(net), n * (n - 1) / 2);
}

TEST_P(message_counts, ring_election_and_coordinator_rounds_take_n_messages_each) {
  const auto n = static_cast<uint64_t>(GetParam());
  election_network net(n, quiet_config(el::algorithm::ring));
  net.start_all();
  net.node(1).request_election(net.now());
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == el::node_id{n}; }, 1s));
  net.run_for(100ms); // let the announcement come back to the initiator
  EXPECT_EQ(count<el::ring_election_msg>(net), n);
  EXPECT_EQ(count<el::ring_coordinator_msg>(net), n);
  EXPECT_EQ(count<el::ring_ack_msg>(net), 2 * n); // one ack per hop
}

INSTANTIATE_TEST_SUITE_P(n_2_to_32, message_counts, ::testing::Range(2, 33));
