// A function leader task runs on a thread of its own (real scheduler here, since
// detached actors live outside the test coordinator). No sleeping: the task and
// the test wait on flags with a bounded spin.
#include "actors/election/leader_task.hpp"

#include "actors/election/candidate_actor.hpp"
#include "actors/election/directory_transport.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace el = conclave::election;

namespace {

bool spin_until(const std::atomic<bool>& flag, std::chrono::seconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > end)
      return false;
    std::this_thread::yield();
  }
  return true;
}

} // namespace

TEST(leader_task, function_task_runs_while_leading_and_sees_cancellation_on_shutdown) {
  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::conclave_election>();
  caf::actor_system sys{cfg};
  auto started = std::make_shared<std::atomic<bool>>(false);
  auto finished = std::make_shared<std::atomic<bool>>(false);
  auto term_seen = std::make_shared<std::atomic<uint64_t>>(0);
  auto task = std::make_shared<const el::leader_task>(
      el::leader_task::from_function([=](el::leader_context ctx) {
        term_seen->store(ctx.leadership_term().epoch);
        started->store(true);
        while (!ctx.cancelled())
          std::this_thread::yield();
        finished->store(true);
      }));
  auto net = std::make_shared<el::directory_transport>();
  el::candidate_options o;
  o.id = el::node_id{1};
  o.peers = {o.id};
  o.net = net;
  o.task = task;
  o.start_immediately = true;
  auto c = el::spawn_candidate(sys, o);
  net->put(o.id, c);
  ASSERT_TRUE(spin_until(*started, std::chrono::seconds(10)));
  EXPECT_EQ(term_seen->load(), 1u);
  EXPECT_FALSE(finished->load());
  caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
  EXPECT_TRUE(spin_until(*finished, std::chrono::seconds(10)));
}

TEST(leader_task, an_empty_task_starts_nothing) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  el::leader_task none = el::leader_task::from_actor(nullptr);
  EXPECT_FALSE(none.start(
      sys,
      el::leader_context{el::node_id{1}, {}, std::make_shared<std::atomic<bool>>()}));
}
