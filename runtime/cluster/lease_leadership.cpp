#include "runtime/cluster/lease_leadership.hpp"

#include "actors/election/leader_task.hpp"
#include "actors/replication/lease_client.hpp"
#include "runtime/cluster/front_directory.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace conclave::cluster {

namespace rp = conclave::replication;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct lease_leadership::state {
  caf::actor_system* sys = nullptr;
  node::node_config cfg;
  std::shared_ptr<const election::leader_task> task;
  std::shared_ptr<const node::node_log> log;
  std::unique_ptr<front_directory> dir;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread thread;

  void info(const std::string& m) const {
    if (log)
      log->info(m);
  }

  /// Sleeps until `t` or stop(); true if stopping.
  bool sleep_until(steady::time_point t) {
    std::unique_lock<std::mutex> lk{mu};
    return cv.wait_until(lk, t, [this] { return stopping; });
  }

  bool stopped() {
    std::lock_guard<std::mutex> lk{mu};
    return stopping;
  }

  rp::client_options client_options() const {
    rp::client_options o;
    o.members.push_back(rp::node_id{cfg.id.value});
    for (auto& [id, addr] : cfg.peers)
      o.members.push_back(rp::node_id{id});
    auto* d = dir.get();
    o.lookup = [d](rp::node_id id) { return d->lookup(id.value); };
    o.primary = rp::node_id{dir->primary_hint()};
    return o;
  }

  /// Waits up to `limit` for a running task to return; true if it did.
  bool wait_for_task(const caf::actor& running, steady::duration limit) {
    if (!running)
      return true;
    caf::scoped_actor self{*sys};
    self->monitor(running);
    caf::anon_send_exit(running, caf::exit_reason::user_shutdown);
    bool ended = false;
    self->receive([&](caf::down_msg&) { ended = true; },
                  caf::after(std::chrono::duration_cast<caf::timespan>(limit)) >> [] {});
    return ended;
  }

  void run() {
    rp::lease_client client{*sys, client_options()};
    auto ttl = cfg.leader_lease_ttl;
    auto interval = std::max<std::chrono::milliseconds>(ttl / 3, 1ms);
    auto margin = std::max<std::chrono::milliseconds>(ttl / 10, 5ms);
    auto holder = rp::lease_client::make_holder_id();
    rp::lease_params p;
    p.ttl = ttl;
    p.label = "node " + std::to_string(cfg.id.value);
    auto incarnation =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    while (!stopped()) {
      auto r = client.acquire(cfg.leader_lease, holder, p, rp::lease_client::max_poll);
      if (r.code != rp::errc::ok) {
        if (r.code != rp::errc::lease_busy && sleep_until(steady::now() + 50ms))
          return;
        continue;
      }
      auto token = r.token;
      auto safe_until = r.safe_until;
      election::term t{token, election::node_id{cfg.id.value}, incarnation};
      auto flag = std::make_shared<std::atomic<bool>>(false);
      caf::actor running;
      if (task)
        running = task->start(*sys, election::leader_context{cfg.id, t, flag});
      info("leading: holds lease '" + cfg.leader_lease + "' with token "
           + std::to_string(token));
      auto last_send = steady::now();
      std::string why = "stopping";
      for (;;) {
        auto give_up = safe_until - margin;
        if (sleep_until(std::min(last_send + interval, give_up)))
          break;
        auto now = steady::now();
        if (now >= give_up) {
          why = "no renewal succeeded in time";
          break;
        }
        if (now < last_send + interval)
          continue;
        auto budget =
            std::min(std::chrono::duration_cast<std::chrono::milliseconds>(give_up - now),
                     interval);
        last_send = now;
        auto rr = client.renew(cfg.leader_lease, holder, token, ttl, budget);
        if (rr.code == rp::errc::ok)
          safe_until = std::max(safe_until, rr.safe_until);
        else if (rr.code == rp::errc::stale_token) {
          why = "the lease was granted to another node";
          break;
        }
      }
      flag->store(true, std::memory_order_release);
      info("stopped leading (token " + std::to_string(token) + "): " + why);
      // The lease passes on only once the task has returned: released when it
      // did in time, else left to expire (no new campaign before it ended).
      bool ended = wait_for_task(
          running, std::max<steady::duration>(safe_until - steady::now(), 0ms));
      if (stopped()) {
        if (ended)
          (void)client.release(cfg.leader_lease, holder, token, 1000ms);
        return;
      }
      if (!ended)
        wait_for_task(running, std::chrono::hours(24));
    }
  }
};

lease_leadership::lease_leadership(caf::actor_system& sys, const node::node_config& c,
                                   std::shared_ptr<const election::leader_task> task,
                                   std::shared_ptr<const node::node_log> log)
    : s_(std::make_shared<state>()) {
  s_->sys = &sys;
  s_->cfg = c;
  s_->task = std::move(task);
  s_->log = std::move(log);
  front_directory_options d;
  d.cluster = c.cluster;
  d.members = c.peers;
  d.members.emplace(c.id.value, c.listen);
  s_->dir = std::make_unique<front_directory>(sys, d);
  auto st = s_;
  s_->thread = std::thread([st] { st->run(); });
}

lease_leadership::~lease_leadership() {
  stop();
}

void lease_leadership::stop() {
  if (!s_)
    return;
  {
    std::lock_guard<std::mutex> lk{s_->mu};
    s_->stopping = true;
  }
  s_->cv.notify_all();
  if (s_->thread.joinable())
    s_->thread.join();
  s_->dir.reset();
}

} // namespace conclave::cluster
