#include "runtime/sim/world.hpp"

#include <caf/actor_cast.hpp>
#include <caf/detail/test_actor_clock.hpp>
#include <caf/execution_unit.hpp>
#include <caf/exit_reason.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message_id.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace conclave::sim {

namespace {

/// A uniform draw from [0, 1). A distribution of its own per draw: worlds
/// run on several threads at once (ordered_runs.hpp), and this one keeps no
/// state between draws, so the draws are the same as from a shared one.
template <class Rng>
double unit(Rng& rng) {
  return std::uniform_real_distribution<double>{0.0, 1.0}(rng);
}

/// Runs what an activated actor schedules (a message it sends to another
/// actor, an actor it spawns) on the test coordinator, as the coordinator's
/// own execution unit does.
class coordinator_unit final : public caf::execution_unit {
public:
  explicit coordinator_unit(caf::scheduler::test_coordinator& sched)
      : caf::execution_unit(&sched.system()), sched_(sched) {}
  void exec_later(caf::resumable* ptr) override { sched_.jobs.push_back(ptr); }

private:
  caf::scheduler::test_coordinator& sched_;
};

/// Kills `a` as a kill -9 kills a process: before whatever waits in its
/// mailbox (the exit goes to the urgent queue, which the actor reads first).
void kill_now(const caf::actor& a) {
  if (!a)
    return;
  auto ptr = caf::actor_cast<caf::abstract_actor*>(a);
  ptr->enqueue(caf::make_mailbox_element(
                   nullptr, caf::make_message_id(caf::message_priority::high), {},
                   caf::exit_msg{ptr->address(), caf::exit_reason::kill}),
               nullptr);
}

/// The data of `m` with its reference, for an event.
caf::detail::message_data* owned(caf::message m) {
  return m.vals().release();
}

/// The message of an event, taking over its reference.
caf::message adopt(caf::detail::message_data* data) {
  return caf::message{caf::message::data_ptr{data, false}};
}

} // namespace

world::world(size_t nodes, uint64_t seed, network_model net, clock_model clocks,
             const std::function<void(caf::actor_system_config&)>& configure)
    : net_(net), rng_(seed), cfg_(std::make_unique<caf::actor_system_config>()) {
  cfg_->set("scheduler.policy", caf::atom("testing"));
  cfg_->set("logger.file-verbosity", caf::atom("quiet"));
  if (configure)
    configure(*cfg_);
  sys_ = std::make_unique<caf::actor_system>(*cfg_);
  sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  unit_ = std::make_unique<coordinator_unit>(*sched_);
  caf_origin_ = sched_->clock().now();
  nodes_.resize(nodes);
  for (uint64_t i = 1; i <= nodes; ++i)
    ids_.push_back(node_id{i});
  // Clocks are drawn from their own generator, so that turning drift on does not
  // change the network's random choices.
  std::mt19937_64 clock_rng{seed ^ 0x9e3779b97f4a7c15ULL};
  for (size_t i = 0; i < nodes_.size(); ++i) {
    auto& n = nodes_[i];
    if (i < clocks.rates.size())
      n.rate = clocks.rates[i];
    else if (clocks.max_rate_error > 0)
      n.rate = 1.0 + clocks.max_rate_error * (2 * unit(clock_rng) - 1);
    if (clocks.max_offset > duration{0})
      n.offset = timestamp{std::uniform_int_distribution<int64_t>{
          0, clocks.max_offset.count()}(clock_rng)};
  }
}

world::~world() {
  for (auto& b : buckets_)
    for (size_t i = b.next; i < b.events.size(); ++i)
      adopt(b.events[i].msg); // released
  for (auto& n : nodes_) {
    release_held(n);
    if (n.alive) {
      if (n.body.actor)
        caf::anon_send_exit(n.body.actor, caf::exit_reason::kill);
      for (auto& a : n.body.ports)
        if (a)
          caf::anon_send_exit(a, caf::exit_reason::kill);
    }
  }
  sched_->run();
}

// -- nodes ----------------------------------------------------------------------

void world::spawn(node_id id, node_spawner make) {
  auto& n = node(id);
  n.make = std::move(make);
  n.incarnation += 1;
  set_body(n, n.make(*this, id, n.incarnation));
  n.alive = true;
  n.paused_until = timestamp{0};
  run_jobs();
}

void world::set_body(node_state& n, node_body body) {
  n.body = std::move(body);
  n.target = nullptr;
  n.jobs.clear();
  auto job_of = [](const caf::actor& a) {
    return dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(a));
  };
  if (n.body.actor) {
    n.target = dynamic_cast<caf::scheduled_actor*>(
        caf::actor_cast<caf::abstract_actor*>(n.body.actor));
    if (auto j = job_of(n.body.actor))
      n.jobs.push_back(j);
  }
  for (auto& a : n.body.ports)
    if (a)
      if (auto j = job_of(a))
        n.jobs.push_back(j);
}

const caf::actor& world::port_actor(const node_state& n, port_id port) const {
  static const caf::actor none;
  if (port == 0)
    return n.body.actor;
  return port <= n.body.ports.size() ? n.body.ports[port - 1] : none;
}

std::optional<port_id> world::port_of(node_id id, const caf::actor_addr& who) const {
  auto& n = node(id);
  if (n.body.actor && n.body.actor.address() == who)
    return port_id{0};
  for (size_t k = 0; k < n.body.ports.size(); ++k)
    if (n.body.ports[k] && n.body.ports[k].address() == who)
      return static_cast<port_id>(k + 1);
  return std::nullopt;
}

void world::crash(node_id id, bool notify) {
  auto& n = node(id);
  if (!n.alive)
    return;
  n.alive = false;
  // Killed before anything waiting in their mailboxes runs (also what a
  // pause held: it dies with them).
  kill_now(n.body.actor);
  for (auto& a : n.body.ports)
    kill_now(a);
  release_held(n);
  n.paused_until = timestamp{0};
  run_jobs();
  set_body(n, {});
  for (auto* o : observers_)
    o->crashed(id, now_);
  if (notify)
    notify_all(static_cast<uint32_t>(id.value - 1), false);
}

void world::restart(node_id id) {
  auto& n = node(id);
  if (n.alive || !n.make)
    return;
  n.incarnation += 1;
  set_body(n, n.make(*this, id, n.incarnation));
  n.alive = true;
  n.paused_until = timestamp{0};
  run_jobs();
  for (auto* o : observers_)
    o->restarted(id, now_);
  notify_all(static_cast<uint32_t>(id.value - 1), true);
}

void world::pause(node_id id, timestamp until) {
  auto& n = node(id);
  if (!n.alive)
    return;
  n.paused_until = std::max(n.paused_until, until);
  if (!n.jobs.empty() && !n.holding && n.paused_until > now_) {
    // The node's actors stop: their jobs wait until the pause ends.
    n.holding = true;
    ++holding_;
    resume_at(static_cast<uint32_t>(id.value - 1), n.incarnation, n.paused_until);
  }
  for (auto* o : observers_)
    o->paused(id, now_, n.paused_until);
}

void world::resume_at(uint32_t index, uint32_t incarnation, timestamp t) {
  at(t, [this, index, incarnation] {
    auto& m = nodes_[index];
    if (!m.holding || m.incarnation != incarnation)
      return; // crashed meanwhile: what it held died with it
    if (now_ < m.paused_until) {
      resume_at(index, incarnation, m.paused_until); // extended meanwhile
      return;
    }
    release_held(m);
    run_jobs();
  });
}

void world::release_held(node_state& n) {
  if (!n.holding)
    return;
  n.holding = false;
  --holding_;
  for (auto* j : n.held)
    sched_->jobs.push_back(j);
  n.held.clear();
}

void world::run_coordinator() {
  jobs_left_ -= sched_->run(jobs_left_);
  if (jobs_left_ == 0 && sched_->has_job())
    exhausted_ = true;
}

void world::run_jobs() {
  if (holding_ == 0) {
    run_coordinator();
    return;
  }
  while (!sched_->jobs.empty()) {
    if (jobs_left_ == 0) {
      exhausted_ = true;
      return;
    }
    auto* job = sched_->jobs.front();
    node_state* owner = nullptr;
    for (auto& n : nodes_)
      if (n.holding && std::find(n.jobs.begin(), n.jobs.end(), job) != n.jobs.end()) {
        owner = &n;
        break;
      }
    if (owner) {
      sched_->jobs.pop_front();
      owner->held.push_back(job);
      continue;
    }
    sched_->run_once();
    --jobs_left_;
  }
}

void world::run_actors() {
  run_jobs();
}

void world::set_notices(std::function<caf::message(node_id, bool)> make, duration delay) {
  notice_ = std::move(make);
  notice_delay_ = delay;
}

void world::notify_all(uint32_t about, bool up) {
  if (!notice_)
    return;
  for (uint32_t p = 0; p < nodes_.size(); ++p)
    if (p != about && nodes_[p].alive)
      push(now_ + notice_delay_, {kind::notice, 0, p, about, nodes_[p].incarnation,
                                  owned(notice_(ids_[about], up))});
}

// -- network ----------------------------------------------------------------------

duration world::delay() {
  if (net_.delay_min == net_.delay_max)
    return net_.delay_min;
  return duration{std::uniform_int_distribution<int64_t>{net_.delay_min.count(),
                                                         net_.delay_max.count()}(rng_)};
}

void world::send(node_id from, node_id to, caf::message m, port_id port) {
  ++sent_;
  if (to.value < 1 || to.value > nodes_.size())
    return;
  bool faulty = now_ < net_.faults_until;
  if (faulty && net_.loss > 0 && unit(rng_) < net_.loss) {
    if (tap_)
      tap_(now_, from, to, m, fate::lost);
    return;
  }
  auto target = static_cast<uint32_t>(to.value - 1);
  auto source = static_cast<uint32_t>(from.value - 1);
  auto first = now_ + delay();
  if (faulty && net_.dup > 0 && unit(rng_) < net_.dup) {
    ++duplicated_;
    push(first, {kind::deliver, port, target, source, 0, owned(m)});
    push(now_ + delay(), {kind::deliver, port, target, source, 0, owned(std::move(m))});
  } else {
    push(first, {kind::deliver, port, target, source, 0, owned(std::move(m))});
  }
}

void world::add_cut(timestamp from, timestamp until, std::vector<int> group,
                    bool directed) {
  group.resize(nodes_.size(), -1);
  cuts_.push_back({from, until, directed, std::move(group)});
}

void world::add_cut(timestamp from, timestamp until,
                    const std::vector<std::vector<node_id>>& groups, bool directed) {
  std::vector<int> group(nodes_.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g)
    for (auto id : groups[g])
      if (id.value >= 1 && id.value <= nodes_.size())
        group[id.value - 1] = static_cast<int>(g);
  add_cut(from, until, std::move(group), directed);
}

void world::end_cuts(timestamp at) {
  for (auto& c : cuts_)
    c.until = std::min(c.until, std::max(c.from, at));
}

bool world::blocked(node_id from, node_id to) const {
  if (from == to)
    return false;
  for (auto& c : cuts_) {
    if (now_ < c.from || now_ >= c.until)
      continue;
    auto a = c.group[from.value - 1], b = c.group[to.value - 1];
    if (c.directed ? (a == 0 && b == 1) : (a != b || a < 0))
      return true;
  }
  return false;
}

// -- time ---------------------------------------------------------------------------

timestamp world::to_local(node_id id, timestamp t) const {
  auto& n = node(id);
  if (n.rate == 1.0)
    return n.offset + t;
  return n.offset + timestamp{std::llround(static_cast<double>(t.count()) * n.rate)};
}

timestamp world::to_true(node_id id, timestamp local) const {
  auto& n = node(id);
  if (n.rate == 1.0)
    return local - n.offset;
  return timestamp{
      std::llround(static_cast<double>((local - n.offset).count()) / n.rate)};
}

void world::schedule(node_id id, duration local_after, caf::message m, port_id port) {
  auto& n = node(id);
  auto due = now_ + local_after;
  if (n.rate != 1.0) {
    // The first true instant at which the node's clock shows the target: a
    // timer must never fire before its time on the clock that armed it.
    auto target = local_now(id) + local_after;
    due = std::max(now_, to_true(id, target));
    while (to_local(id, due) < target)
      due += duration{1};
  }
  push(due, {kind::timer, port, static_cast<uint32_t>(id.value - 1), 0, n.incarnation,
             owned(std::move(m))});
}

void world::inject(node_id id, const caf::message& m, port_id port) {
  auto& n = node(id);
  if (n.alive)
    deliver(n, m, port);
}

void world::at(timestamp t, std::function<void()> f) {
  calls_.push_back(std::move(f));
  push(t, {kind::call, 0, 0, static_cast<uint32_t>(calls_.size() - 1), 0, nullptr});
}

// -- the queue ------------------------------------------------------------------------

void world::push(timestamp at, event e) {
  static_assert(std::is_trivially_copyable_v<event>);
  uint32_t b;
  if (at == last_push_at_) {
    b = last_push_bucket_;
  } else if (auto i = bucket_at_.find(at.count()); i != bucket_at_.end()) {
    b = i->second;
  } else {
    if (free_buckets_.empty()) {
      b = static_cast<uint32_t>(buckets_.size());
      buckets_.emplace_back();
    } else {
      b = free_buckets_.back();
      free_buckets_.pop_back();
    }
    bucket_at_.emplace(at.count(), b);
    instants_.emplace_back(at, b);
    std::push_heap(instants_.begin(), instants_.end(), std::greater<>{});
  }
  last_push_at_ = at;
  last_push_bucket_ = b;
  buckets_[b].events.push_back(std::move(e));
}

std::optional<timestamp> world::next_caf_timer() const {
  auto& pending = sched_->clock().schedule();
  if (pending.empty())
    return std::nullopt;
  return std::chrono::duration_cast<timestamp>(pending.begin()->first - caf_origin_);
}

void world::advance_caf_clock(timestamp t) {
  auto& clock = sched_->clock();
  auto target = caf_origin_ + std::chrono::duration_cast<caf::timespan>(t);
  if (target > clock.now())
    clock.advance_time(target - clock.now());
  else
    clock.advance_time(caf::timespan{0});
}

bool world::step(timestamp end) {
  if (events_ >= events_budget_)
    exhausted_ = true;
  if (exhausted_)
    return false;
  // CAF's own timers (request timeouts, delayed sends of actors that do not
  // arm timers through the world) fire in true time, before the world's
  // events of the same instant.
  if (auto caf_at = next_caf_timer()) {
    auto due = std::max(*caf_at, now_);
    if (due <= end && (instants_.empty() || due <= instants_.front().first)) {
      now_ = due;
      ++events_;
      for (auto* o : observers_)
        o->before_event(now_);
      advance_caf_clock(now_);
      run_jobs();
      for (auto* o : observers_)
        o->after_event(now_);
      return true;
    }
  }
  if (instants_.empty() || instants_.front().first > end)
    return false;
  auto [at, b] = instants_.front();
  if (buckets_[b].next == 0 && buckets_[b].events.size() > 1)
    group_by_node(buckets_[b].events);
  event e = buckets_[b].events[buckets_[b].next++];
  if (buckets_[b].next == buckets_[b].events.size()) {
    buckets_[b].events.clear();
    buckets_[b].next = 0;
    free_buckets_.push_back(b);
    bucket_at_.erase(at.count());
    std::pop_heap(instants_.begin(), instants_.end(), std::greater<>{});
    instants_.pop_back();
    if (last_push_at_ == at)
      last_push_at_ = timestamp{-1};
  }
  now_ = std::max(now_, at);
  ++events_;
  sched_->clock().current_time =
      std::max(sched_->clock().current_time,
               caf_origin_ + std::chrono::duration_cast<caf::timespan>(now_));
  for (auto* o : observers_)
    o->before_event(now_);
  dispatch(e);
  for (auto* o : observers_)
    o->after_event(now_);
  return true;
}

void world::group_by_node(std::vector<event>& events) {
  // Events at one instant are causally independent across nodes (every message
  // takes a positive delay), so only each node's own order matters. Running a
  // node's events back to back keeps its state in the cache: with 1,000 nodes
  // and a message storm this is most of the simulator's speed. Calls (faults)
  // at this instant go first, in the order queued; a node reads the messages
  // that arrive at the instant its timer fires before the timer.
  auto key = [](const event& e) -> size_t {
    return e.what == kind::call ? 0 : 1 + 2 * size_t{e.to} + (e.what == kind::timer);
  };
  auto& start = group_start_;
  start.assign(2 * nodes_.size() + 2, 0);
  for (auto& e : events)
    ++start[key(e) + 1];
  for (size_t k = 1; k < start.size(); ++k)
    start[k] += start[k - 1];
  auto& sorted = group_scratch_;
  sorted.resize(events.size());
  for (auto& e : events)
    sorted[start[key(e)]++] = std::move(e);
  events.swap(sorted);
  sorted.clear();
}

void world::run_until(timestamp end) {
  stopped_ = false;
  while (!stopped_ && step(end)) {
  }
  if (!stopped_) {
    now_ = std::max(now_, end);
    sched_->clock().current_time =
        std::max(sched_->clock().current_time,
                 caf_origin_ + std::chrono::duration_cast<caf::timespan>(now_));
  }
}

void world::dispatch(event& e) {
  if (e.what == kind::call) {
    calls_[e.from]();
    return;
  }
  auto msg = adopt(e.msg); // released on every return, unless queued again
  e.msg = nullptr;
  auto& n = nodes_[e.to];
  auto tap = [&](fate f) {
    if (tap_ && e.what != kind::timer)
      tap_(now_, ids_[e.from], ids_[e.to], msg, f);
  };
  if (!n.alive) {
    tap(fate::dead);
    return;
  }
  if ((e.what == kind::timer || e.what == kind::notice) && e.incarnation != n.incarnation)
    return; // armed by, or meant for, an earlier life
  if (e.what == kind::deliver && blocked(ids_[e.from], ids_[e.to])) {
    tap(fate::blocked);
    return;
  }
  if (now_ < n.paused_until) {
    // Frozen: everything waits for SIGCONT. On resume a process's due timers
    // fire at once, while the bytes its peers sent meanwhile still have to be
    // read off the sockets: timers first, deliveries a moment later.
    auto at = n.paused_until;
    if (e.what != kind::timer)
      at += std::chrono::microseconds(100);
    e.msg = owned(std::move(msg));
    push(at, e);
    return;
  }
  if (e.what == kind::deliver)
    ++delivered_;
  tap(fate::delivered);
  deliver(n, msg, e.port);
}

void world::deliver(node_state& n, const caf::message& m, port_id port) {
  if (port != 0) {
    if (auto& a = port_actor(n, port)) {
      caf::anon_send(a, m);
      run_jobs();
    }
    return;
  }
  if (n.target && holding_ == 0 && !sched_->has_job() && n.target->mailbox().blocked()) {
    // The actor is idle with an empty mailbox (the coordinator ran until
    // idle after the last event): hand it the message directly, as its
    // mailbox would next, without the round through the mailbox and the
    // coordinator's job queue (a quarter of a large run's time). What it
    // sends or spawns meanwhile is scheduled on the coordinator as usual.
    auto elem = caf::make_mailbox_element(nullptr, caf::make_message_id(), {}, m);
    n.target->activate(unit_.get(), *elem);
    if (sched_->has_job()) {
      // Resumed through its mailbox, an actor that sent itself a message
      // would handle it next, before the jobs it scheduled: the same order.
      sched_->prioritize(n.body.actor);
      run_coordinator();
    }
  } else if (n.body.actor) {
    caf::anon_send(n.body.actor, m);
    run_jobs();
  } else if (n.body.receive) {
    n.body.receive(m);
  }
}

} // namespace conclave::sim
