#include "runtime/sim/world.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/make_message.hpp>

#include <algorithm>
#include <memory>
#include <string>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
using conclave::election::node_id;

namespace {

/// A world of `n` nodes whose bodies record (receiver, true time, payload).
struct recording {
  struct entry {
    uint64_t node;
    sim::timestamp at;
    int value;
  };
  std::vector<entry> log;

  sim::node_spawner spawner() {
    return [this](sim::world& w, node_id id, uint32_t) {
      sim::node_body b;
      b.receive = [this, &w, id](const caf::message& m) {
        log.push_back({id.value, w.now(), m.get_as<int>(0)});
      };
      return b;
    };
  }
};

} // namespace

TEST(world, a_message_arrives_after_the_network_delay) {
  sim::network_model net;
  net.delay_min = net.delay_max = 3ms;
  sim::world w{2, 1, net, {}, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  w.send(node_id{1}, node_id{2}, caf::make_message(7));
  w.run_until(sim::timestamp{10ms});
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_EQ(r.log[0].node, 2u);
  EXPECT_EQ(r.log[0].at, 3ms);
  EXPECT_EQ(r.log[0].value, 7);
  EXPECT_EQ(w.messages_delivered(), 1u);
}

TEST(world, events_at_one_instant_keep_each_nodes_order_and_run_node_by_node) {
  sim::world w{3, 1, {}, {}, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  for (int i = 0; i < 6; ++i)
    w.send(node_id{1}, node_id{static_cast<uint64_t>(3 - i % 2)}, caf::make_message(i));
  w.run_until(sim::timestamp{5ms});
  std::vector<std::pair<uint64_t, int>> got;
  for (auto& e : r.log)
    got.emplace_back(e.node, e.value);
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, int>>{
                     {2, 1}, {2, 3}, {2, 5}, {3, 0}, {3, 2}, {3, 4}}));
}

TEST(world, a_partition_drops_messages_between_groups_while_open) {
  sim::world w{3, 1, {}, {}, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  w.add_cut(sim::timestamp{0}, sim::timestamp{10ms}, {0, 0, 1}, false);
  w.send(node_id{1}, node_id{2}, caf::make_message(1)); // same side
  w.send(node_id{1}, node_id{3}, caf::make_message(2)); // across
  w.run_until(sim::timestamp{20ms});
  w.send(node_id{1}, node_id{3}, caf::make_message(3)); // healed
  w.run_until(sim::timestamp{30ms});
  std::vector<int> got;
  for (auto& e : r.log)
    got.push_back(e.value);
  EXPECT_EQ(got, (std::vector<int>{1, 3}));
}

TEST(world, a_paused_node_gets_its_timers_first_and_its_messages_after_the_pause) {
  sim::world w{2, 1, {}, {}, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  w.pause(node_id{2}, sim::timestamp{50ms});
  w.send(node_id{1}, node_id{2}, caf::make_message(1));
  w.schedule(node_id{2}, 10ms, caf::make_message(2));
  w.run_until(sim::timestamp{100ms});
  ASSERT_EQ(r.log.size(), 2u);
  EXPECT_EQ(r.log[0].value, 2);
  EXPECT_EQ(r.log[0].at, 50ms);
  EXPECT_EQ(r.log[1].value, 1);
  EXPECT_GT(r.log[1].at, 50ms);
}

TEST(world, a_crash_discards_the_nodes_timers_and_notifies_its_peers) {
  sim::world w{3, 1, {}, {}, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  w.set_notices(
      [](node_id peer, bool up) {
        return caf::make_message(static_cast<int>(up ? 100 + peer.value : peer.value));
      },
      2ms);
  w.schedule(node_id{3}, 5ms, caf::make_message(9));
  w.crash(node_id{3});
  w.run_until(sim::timestamp{10ms});
  w.restart(node_id{3});
  w.run_until(sim::timestamp{20ms});
  std::vector<std::pair<uint64_t, int>> got;
  for (auto& e : r.log)
    got.emplace_back(e.node, e.value);
  EXPECT_EQ(got,
            (std::vector<std::pair<uint64_t, int>>{{1, 3}, {2, 3}, {1, 103}, {2, 103}}));
  EXPECT_EQ(w.incarnation(node_id{3}), 2u);
}

TEST(world, a_fast_clock_fires_its_timers_early_in_true_time) {
  sim::clock_model c;
  c.max_rate_error = 0.2;
  sim::world w{4, 3, {}, c, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  for (auto id : w.ids())
    w.schedule(id, 100ms, caf::make_message(static_cast<int>(id.value)));
  w.run_until(sim::timestamp{1s});
  ASSERT_EQ(r.log.size(), 4u);
  bool some_differ = false;
  for (auto& e : r.log) {
    auto rate = w.clock_rate(node_id{e.node});
    EXPECT_LE(std::abs(rate - 1), 0.2);
    // 100 ms on the node's clock is 100 / rate ms of true time.
    EXPECT_NEAR(static_cast<double>(e.at.count()), 100e6 / rate, 2.0);
    some_differ |= e.at != 100ms;
  }
  EXPECT_TRUE(some_differ);
}

TEST(world, loss_and_duplication_stop_when_the_faults_heal) {
  sim::network_model net;
  net.loss = 0.3;
  net.dup = 0.3;
  net.faults_until = sim::timestamp{1s};
  sim::world w{2, 5, net, {}, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  for (int i = 0; i < 1000; ++i)
    w.send(node_id{1}, node_id{2}, caf::make_message(i));
  w.run_until(sim::timestamp{2s});
  auto during = r.log.size();
  EXPECT_NE(during, 1000u); // some lost, some doubled
  EXPECT_GT(during, 700u);
  r.log.clear();
  for (int i = 0; i < 1000; ++i)
    w.send(node_id{1}, node_id{2}, caf::make_message(i));
  w.run_until(sim::timestamp{3s});
  EXPECT_EQ(r.log.size(), 1000u);
}

// Deliveries to an idle actor skip its mailbox (world::deliver); what the
// actor does meanwhile must run as if it had been resumed through the
// mailbox: a message to itself is handled before the jobs it scheduled (an
// actor it spawned, a message to another actor), all before the next event.
TEST(world, an_actor_body_handles_its_own_messages_first_and_before_the_next_event) {
  sim::world w{1, 1, {}, {}, nullptr};
  auto log = std::make_shared<std::vector<std::string>>();
  w.spawn(node_id{1}, [log](sim::world& wd, node_id, uint32_t) {
    sim::node_body b;
    b.actor = wd.system().spawn([log](caf::event_based_actor* self) -> caf::behavior {
      return {
          [=](int x) {
            log->push_back("got " + std::to_string(x));
            auto helper = self->spawn([log](caf::event_based_actor*) -> caf::behavior {
              return {[log](int y) { log->push_back("helper " + std::to_string(y)); }};
            });
            self->send(helper, x * 10);
            self->send(self, "self " + std::to_string(x));
          },
          [=](const std::string& s) { log->push_back(s); },
      };
    });
    return b;
  });
  w.send(node_id{1}, node_id{1}, caf::make_message(1));
  w.send(node_id{1}, node_id{1}, caf::make_message(2));
  w.run_until(sim::timestamp{5ms});
  EXPECT_EQ(*log, (std::vector<std::string>{"got 1", "self 1", "helper 10", "got 2",
                                            "self 2", "helper 20"}));
  EXPECT_EQ(w.messages_delivered(), 2u);
}

TEST(world, the_tap_sees_every_message_with_its_fate) {
  sim::network_model net;
  net.delay_min = net.delay_max = 2ms;
  net.loss = 1.0; // every message sent before faults_until is lost
  net.faults_until = sim::timestamp{5ms};
  sim::world w{4, 1, net, {}, nullptr};
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  struct seen {
    uint64_t from, to;
    sim::timestamp at;
    int value;
    sim::fate f;
  };
  std::vector<seen> tapped;
  w.set_tap([&](sim::timestamp at, node_id from, node_id to, const caf::message& m,
                sim::fate f) {
    tapped.push_back({from.value, to.value, at, m.get_as<int>(0), f});
  });
  w.send(node_id{1}, node_id{2}, caf::make_message(1)); // lost
  w.run_until(sim::timestamp{10ms});
  w.add_cut(sim::timestamp{10ms}, sim::timestamp{20ms}, {0, 0, 1, 0}, false);
  w.send(node_id{1}, node_id{3}, caf::make_message(2)); // blocked
  w.send(node_id{1}, node_id{2}, caf::make_message(3)); // delivered
  w.send(node_id{1}, node_id{4}, caf::make_message(4)); // to a dead node
  w.crash(node_id{4}, false);
  w.run_until(sim::timestamp{30ms});
  ASSERT_EQ(tapped.size(), 4u);
  EXPECT_EQ(tapped[0].f, sim::fate::lost);
  EXPECT_EQ(tapped[0].at, 0ms); // lost when sent
  EXPECT_EQ(tapped[0].value, 1);
  std::vector<std::pair<int, sim::fate>> rest;
  for (size_t i = 1; i < tapped.size(); ++i) {
    rest.emplace_back(tapped[i].value, tapped[i].f);
    EXPECT_EQ(tapped[i].at, 12ms); // at delivery
  }
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (std::vector<std::pair<int, sim::fate>>{{2, sim::fate::blocked},
                                                          {3, sim::fate::delivered},
                                                          {4, sim::fate::dead}}));
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_EQ(r.log[0].value, 3);
}

namespace {

/// A node of two actors: port 0 logs "a <x>", port 1 logs "b <x>" and, for
/// x > 0, sends itself x - 1 through CAF's clock after 10 ms (a delayed send,
/// as actors that do not arm timers through the world do).
sim::node_spawner two_ports(std::shared_ptr<std::vector<std::string>> log) {
  return [log](sim::world& w, node_id, uint32_t) {
    sim::node_body b;
    b.actor = w.system().spawn([log, &w](caf::event_based_actor*) -> caf::behavior {
      return {[log, &w](int x) {
        log->push_back("a " + std::to_string(x) + " @"
                       + std::to_string(w.now().count() / 1000000));
      }};
    });
    b.ports.push_back(
        w.system().spawn([log, &w](caf::event_based_actor* self) -> caf::behavior {
          return {[log, &w, self](int x) {
            log->push_back("b " + std::to_string(x) + " @"
                           + std::to_string(w.now().count() / 1000000));
            if (x > 0)
              self->delayed_send(self, std::chrono::milliseconds(10), x - 1);
          }};
        }));
    return b;
  };
}

} // namespace

TEST(world, messages_and_timers_reach_the_actor_of_their_port) {
  sim::network_model net;
  net.delay_min = net.delay_max = 2ms;
  sim::world w{2, 1, net, {}, nullptr};
  auto log = std::make_shared<std::vector<std::string>>();
  for (auto id : w.ids())
    w.spawn(id, two_ports(log));
  w.send(node_id{1}, node_id{2}, caf::make_message(0), 1);
  w.send(node_id{1}, node_id{2}, caf::make_message(7), 0);
  w.schedule(node_id{2}, 5ms, caf::make_message(0), 1);
  w.run_until(sim::timestamp{20ms});
  EXPECT_EQ(*log, (std::vector<std::string>{"b 0 @2", "a 7 @2", "b 0 @5"}));
}

TEST(world, caf_timers_fire_in_true_time_between_the_worlds_events) {
  sim::world w{1, 1, {}, {}, nullptr};
  auto log = std::make_shared<std::vector<std::string>>();
  w.spawn(node_id{1}, two_ports(log));
  w.inject(node_id{1}, caf::make_message(2), 1);
  w.schedule(node_id{1}, 15ms, caf::make_message(9), 0);
  w.run_until(sim::timestamp{100ms});
  EXPECT_EQ(*log, (std::vector<std::string>{"b 2 @0", "b 1 @10", "a 9 @15", "b 0 @20"}));
  EXPECT_EQ(w.now(), 100ms);
}

TEST(world, a_pause_freezes_every_actor_of_the_node_caf_timers_included) {
  sim::world w{1, 1, {}, {}, nullptr};
  auto log = std::make_shared<std::vector<std::string>>();
  w.spawn(node_id{1}, two_ports(log));
  w.inject(node_id{1}, caf::make_message(3), 1); // b 3 @0, then 2 @10, 1 @20 ...
  w.at(sim::timestamp{5ms}, [&] { w.pause(node_id{1}, sim::timestamp{35ms}); });
  w.run_until(sim::timestamp{100ms});
  // The timer due at 10 ms waits for the end of the pause; the next one is
  // armed then, 10 ms later.
  EXPECT_EQ(*log, (std::vector<std::string>{"b 3 @0", "b 2 @35", "b 1 @45", "b 0 @55"}));
}

TEST(world, a_crash_kills_every_actor_of_the_node_even_while_paused) {
  sim::world w{1, 1, {}, {}, nullptr};
  auto log = std::make_shared<std::vector<std::string>>();
  w.spawn(node_id{1}, two_ports(log));
  auto second = w.system().spawn(
      [](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
  w.inject(node_id{1}, caf::make_message(3), 1);
  w.at(sim::timestamp{5ms}, [&] { w.pause(node_id{1}, sim::timestamp{50ms}); });
  w.at(sim::timestamp{20ms}, [&] { w.crash(node_id{1}); });
  w.run_until(sim::timestamp{100ms});
  EXPECT_EQ(*log, (std::vector<std::string>{"b 3 @0"}));
  EXPECT_FALSE(w.alive(node_id{1}));
  caf::anon_send_exit(second, caf::exit_reason::kill);
}

TEST(world, actors_messaging_each_other_forever_at_one_instant_end_at_the_budget) {
  sim::world w{1, 1, {}, {}, nullptr};
  w.set_budget(1000, 10'000);
  w.spawn(node_id{1}, [](sim::world& wd, node_id, uint32_t) {
    sim::node_body b;
    b.actor = wd.system().spawn([](caf::event_based_actor* self) -> caf::behavior {
      return {[self](int x) { self->send(self, x + 1); }};
    });
    return b;
  });
  w.inject(node_id{1}, caf::make_message(0));
  w.run_until(sim::timestamp{10ms});
  EXPECT_TRUE(w.exhausted());
  EXPECT_EQ(w.now(), 10ms);
}

TEST(world, a_node_arming_timers_for_now_forever_ends_at_the_budget) {
  sim::world w{1, 1, {}, {}, nullptr};
  w.set_budget(1000, 10'000);
  w.spawn(node_id{1}, [](sim::world& wd, node_id id, uint32_t) {
    sim::node_body b;
    b.receive = [&wd, id](const caf::message& m) {
      wd.schedule(id, sim::duration{0}, m);
    };
    return b;
  });
  w.schedule(node_id{1}, 1ms, caf::make_message(0));
  w.run_until(sim::timestamp{10ms});
  EXPECT_TRUE(w.exhausted());
  EXPECT_EQ(w.events(), 1000u);
}

TEST(world, a_run_within_its_budget_is_not_exhausted) {
  sim::world w{2, 1, {}, {}, nullptr};
  w.set_budget(1000, 10'000);
  recording r;
  for (auto id : w.ids())
    w.spawn(id, r.spawner());
  w.send(node_id{1}, node_id{2}, caf::make_message(7));
  w.run_until(sim::timestamp{10ms});
  EXPECT_FALSE(w.exhausted());
  EXPECT_EQ(r.log.size(), 1u);
}
