// A GoogleTest fixture over CAF's test_coordinator: one actor system per test with
// a manual scheduler and a virtual clock. Nothing runs until the test says so, and
// time moves only when the test moves it, so every actor test is deterministic and
// never sleeps.
//
//   class my_test : public conclave::testing::coordinator_fixture {
//     void configure(caf::actor_system_config& cfg) override {
//       cfg.add_message_types<caf::id_block::conclave_election>();
//     }
//   };
//   TEST_F(my_test, ...) { auto a = spawn_tracked(...); run(); advance(100ms); }
//
// Every actor spawned through spawn_tracked() is killed in TearDown: under the test
// coordinator, ~actor_system runs until no work is left, so one actor with a
// re-arming timer would otherwise make the test hang (also after a failed ASSERT).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

namespace conclave::testing {

class coordinator_fixture : public ::testing::Test {
protected:
  /// Hook for subclasses: register message types, set options.
  virtual void configure(caf::actor_system_config&) {}

  void SetUp() override {
    cfg_ = std::make_unique<caf::actor_system_config>();
    cfg_->set("scheduler.policy", caf::atom("testing"));
    cfg_->set("logger.file-verbosity", caf::atom("quiet"));
    configure(*cfg_);
    sys_ = std::make_unique<caf::actor_system>(*cfg_);
    sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  }

  void TearDown() override {
    for (auto& a : tracked_)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    tracked_.clear();
    if (sched_)
      sched_->run();
    sys_.reset();
    cfg_.reset();
  }

  caf::actor_system& sys() { return *sys_; }
  caf::scheduler::test_coordinator& sched() { return *sched_; }

  /// Remembers an actor handle so TearDown stops it.
  template <class Handle>
  Handle track(Handle h) {
    tracked_.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  /// Runs every enqueued job (no timers fire). Returns the number of jobs.
  size_t run() { return sched_->run(); }

  /// Runs one job at a time until pred() holds or no job is left.
  bool run_until(const std::function<bool()>& pred) {
    while (!pred())
      if (!sched_->try_run_once())
        return pred();
    return true;
  }

  /// Moves virtual time forward by d in steps of at most `step`, running all jobs
  /// after each step so that timers armed by a handler fire at their own time.
  void advance(caf::timespan d, caf::timespan step = std::chrono::milliseconds(1)) {
    run();
    while (d.count() > 0) {
      auto s = std::min(d, step);
      sched_->advance_time(s);
      run();
      d -= s;
    }
  }

  /// Like advance(), but stops as soon as pred() holds. Returns whether it did.
  bool advance_until(const std::function<bool()>& pred, caf::timespan limit,
                     caf::timespan step = std::chrono::milliseconds(1)) {
    run();
    for (caf::timespan t{0}; !pred(); t += step) {
      if (t >= limit)
        return false;
      sched_->advance_time(step);
      run();
    }
    return true;
  }

  /// Current virtual time since the start of the test's actor system.
  caf::actor_clock::time_point now() { return sched_->clock().now(); }

private:
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  std::vector<caf::actor> tracked_;
};

} // namespace conclave::testing
