#include "runtime/sim/coordinator_driver.hpp"

#include <caf/detail/test_actor_clock.hpp>
#include <caf/send.hpp>

namespace conclave::sim {

coordinator_driver::coordinator_driver(
    const std::function<void(caf::actor_system_config&)>& configure)
    : cfg_(std::make_unique<caf::actor_system_config>()) {
  cfg_->set("scheduler.policy", caf::atom("testing"));
  cfg_->set("logger.file-verbosity", caf::atom("quiet"));
  cfg_->set("logger.console-verbosity", caf::atom("quiet"));
  if (configure)
    configure(*cfg_);
  sys_ = std::make_unique<caf::actor_system>(*cfg_);
  sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  origin_ = sched_->clock().now();
}

coordinator_driver::~coordinator_driver() {
  for (auto& a : tracked_)
    caf::anon_send_exit(a, caf::exit_reason::kill);
  tracked_.clear();
  sched_->run();
  sys_.reset();
}

size_t coordinator_driver::run() {
  return sched_->run();
}

std::chrono::nanoseconds coordinator_driver::elapsed() const {
  return sched_->clock().now() - origin_;
}

void coordinator_driver::advance_to(std::chrono::nanoseconds t) {
  auto& clock = sched_->clock();
  auto target = origin_ + t;
  run();
  while (clock.now() < target) {
    auto& pending = clock.schedule();
    auto next = pending.empty() ? target : std::min(target, pending.begin()->first);
    if (next < clock.now())
      next = clock.now();
    clock.advance_time(next - clock.now());
    run();
  }
}

} // namespace conclave::sim
