// The candidate actor under CAF's test coordinator: virtual time, deterministic
// order, no sleeping. Peers are found through a directory_transport, failures are
// real CAF monitors (an actor killed → down_msg at its peers).
#include "actors/election/candidate_actor.hpp"

#include "actors/election/directory_transport.hpp"
#include "actors/election/election_probe.hpp"
#include "actors/election/leader_task.hpp"
#include "actors/election/local_group.hpp"
#include "tests/support/coordinator_fixture.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <map>
#include <set>

using namespace std::chrono_literals;
namespace el = conclave::election;
namespace atoms = conclave::election_atoms;

namespace {

/// Records what every candidate reports after each input.
struct recording_probe : el::election_probe {
  struct view {
    el::node_id leader;
    el::term t;
    bool is_leader = false;
    bool acting = false;
  };
  std::map<el::node_id, view> views;
  std::map<el::node_id, std::vector<el::election_event>> events;
  std::vector<std::string> rejected;
  el::node_id current;

  void event(const el::election_event& e, el::timestamp) override {
    events[current].push_back(e);
  }
  void message_rejected(std::string_view why) override { rejected.emplace_back(why); }
  void state(const el::candidate_core& c, el::timestamp) override {
    views[c.id()] = {c.leader(), c.current_term(), c.is_leader(), c.acting()};
  }
};

/// One probe per candidate, all writing into the shared recording.
struct probe_for : el::election_probe {
  probe_for(std::shared_ptr<recording_probe> r, el::node_id id)
      : rec(std::move(r)), id(id) {}
  std::shared_ptr<recording_probe> rec;
  el::node_id id;
  void event(const el::election_event& e, el::timestamp t) override {
    rec->current = id;
    rec->event(e, t);
  }
  void message_rejected(std::string_view why) override { rec->message_rejected(why); }
  void state(const el::candidate_core& c, el::timestamp t) override { rec->state(c, t); }
};

/// A directory transport whose members can be muted: everything they send is
/// lost, and nobody is told (a frozen process, SIGSTOP).
struct muting_transport : el::transport {
  std::shared_ptr<el::directory_transport> inner =
      std::make_shared<el::directory_transport>();
  std::set<el::node_id> muted;
  void send(caf::local_actor* self, el::node_id to, const el::message& m) override {
    if (!muted.count(el::sender(m)) && !muted.count(to))
      inner->send(self, to, m);
  }
  void watch(caf::local_actor* self, el::node_id peer) override {
    inner->watch(self, peer);
  }
  std::optional<el::node_id> node_of(const caf::actor_addr& a) const override {
    return inner->node_of(a);
  }
  bool admits(const caf::strong_actor_ptr& sender, el::node_id from) const override {
    return inner->admits(sender, from);
  }
};

/// Counts starts and stops of leader tasks and the terms they ran in.
struct task_log {
  int started = 0;
  int stopped = 0;
  std::vector<el::term> terms;
  std::vector<el::leader_context> contexts;
};

} // namespace

class candidate_actor_test : public conclave::testing::coordinator_fixture {
protected:
  void configure(caf::actor_system_config& cfg) override {
    cfg.add_message_types<caf::id_block::conclave_election>();
  }

  void spawn_group(size_t n, el::election_config cfg = {},
                   std::shared_ptr<const el::leader_task> task = nullptr) {
    net = std::make_shared<muting_transport>();
    rec = std::make_shared<recording_probe>();
    el::candidate_options base;
    base.config = cfg;
    base.net = net;
    base.task = task;
    auto group = el::spawn_local_group(sys(), n, base, net->inner, [&](auto& o) {
      o.probe = std::make_shared<probe_for>(rec, o.id);
    });
    for (auto& [id, h] : group.members)
      handles[id] = track(h);
    for (auto& [id, h] : handles)
      caf::anon_send(h, atoms::start_atom::value);
    run();
  }

  /// Every live candidate follows `leader`, which is acting.
  bool agreed_on(uint64_t leader, std::initializer_list<uint64_t> dead = {}) {
    for (auto& [id, v] : rec->views) {
      if (std::find(dead.begin(), dead.end(), id.value) != dead.end())
        continue;
      if (v.leader != el::node_id{leader})
        return false;
    }
    auto& lv = rec->views[el::node_id{leader}];
    return lv.is_leader && lv.acting;
  }

  void kill(uint64_t id) {
    caf::anon_send_exit(handles[el::node_id{id}], caf::exit_reason::kill);
  }

  std::shared_ptr<const el::leader_task> counting_task(std::shared_ptr<task_log> log) {
    auto task = el::leader_task::from_actor(
        [log](caf::actor_system& sys, el::leader_context ctx) -> caf::actor {
          log->started++;
          log->terms.push_back(ctx.leadership_term());
          log->contexts.push_back(ctx);
          return sys.spawn([log](caf::event_based_actor* self) -> caf::behavior {
            self->attach_functor([log] { log->stopped++; });
            return {[](int) {}};
          });
        });
    return std::make_shared<const el::leader_task>(std::move(task));
  }

  std::shared_ptr<muting_transport> net;
  std::shared_ptr<recording_probe> rec;
  std::map<el::node_id, el::candidate_actor> handles;
};

TEST_F(candidate_actor_test, highest_alive_id_wins_and_everyone_knows) {
  spawn_group(5);
  ASSERT_TRUE(advance_until([&] { return agreed_on(5); }, 2s));
  for (auto& [id, v] : rec->views)
    EXPECT_EQ(v.t, rec->views[el::node_id{5}].t) << el::to_string(id);
}

TEST_F(candidate_actor_test, a_message_naming_a_member_it_was_not_sent_by_is_dropped) {
  spawn_group(3);
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  auto t = rec->views[el::node_id{3}].t;
  // "Node 2 leads a later term", to candidate 1: from an actor that is not
  // node 2's candidate (a process linked as another member, or anyone), then
  // anonymously, then from node 2's candidate itself.
  el::coordinator_msg forged{el::node_id{2}, el::term{t.epoch + 5, el::node_id{2}, 1}};
  auto impostor =
      sys().spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
  auto one = caf::actor_cast<caf::actor>(handles[el::node_id{1}]);
  caf::send_as(impostor, one, forged);
  run();
  caf::anon_send(one, forged);
  run();
  EXPECT_EQ(std::count(rec->rejected.begin(), rec->rejected.end(), "unverified_sender"),
            2);
  EXPECT_EQ(rec->views[el::node_id{1}].leader, el::node_id{3});
  EXPECT_EQ(rec->views[el::node_id{1}].t, t);
  // The same content from node 2's candidate is taken.
  caf::send_as(caf::actor_cast<caf::actor>(handles[el::node_id{2}]), one, forged);
  run();
  EXPECT_EQ(std::count(rec->rejected.begin(), rec->rejected.end(), "unverified_sender"),
            2);
  EXPECT_EQ(rec->views[el::node_id{1}].t, forged.t);
  caf::anon_send_exit(impostor, caf::exit_reason::user_shutdown);
}

TEST(directory_transport, only_the_registered_handle_speaks_for_a_member) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto quiet = [](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; };
  auto a = sys.spawn(quiet);
  auto b = sys.spawn(quiet);
  el::directory_transport d;
  d.put(el::node_id{2}, caf::actor_cast<el::candidate_actor>(a));
  auto ptr = [](const caf::actor& x) {
    return caf::actor_cast<caf::strong_actor_ptr>(x);
  };
  EXPECT_TRUE(d.admits(ptr(a), el::node_id{2}));
  EXPECT_FALSE(d.admits(ptr(b), el::node_id{2}));
  EXPECT_FALSE(d.admits(nullptr, el::node_id{2}));
  EXPECT_FALSE(d.admits(ptr(a), el::node_id{3})); // not registered
  d.erase(el::node_id{2});
  EXPECT_FALSE(d.admits(ptr(a), el::node_id{2}));
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
}

TEST_F(candidate_actor_test, killed_leader_is_replaced_through_the_monitor) {
  spawn_group(4);
  ASSERT_TRUE(advance_until([&] { return agreed_on(4); }, 2s));
  auto old = rec->views[el::node_id{4}].t;
  auto killed_at = now();
  kill(4);
  ASSERT_TRUE(advance_until([&] { return agreed_on(3, {4}); }, 2s));
  // The down_msg path: no waiting for the heartbeat detector (150 ms).
  EXPECT_LT(now() - killed_at, el::election_config{}.detector.timeout);
  EXPECT_GT(rec->views[el::node_id{3}].t, old);
}

TEST_F(candidate_actor_test, leader_answers_queries_and_resigns_on_request) {
  spawn_group(3);
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  auto info = std::make_shared<el::leader_info>();
  auto members = std::make_shared<std::vector<el::participant>>();
  auto resigned = std::make_shared<bool>(false);
  auto leader = handles[el::node_id{3}];
  track(sys().spawn([=](caf::event_based_actor* self) {
    self->request(handles[el::node_id{1}], caf::infinite, caf::get_atom::value,
                  atoms::leader_atom::value)
        .then([=](const el::leader_info& x) { *info = x; });
    self->request(leader, caf::infinite, caf::get_atom::value, atoms::members_atom::value)
        .then([=](const std::vector<el::participant>& x) { *members = x; });
    self->request(leader, caf::infinite, atoms::resign_atom::value).then([=](bool ok) {
      *resigned = ok;
    });
  }));
  run();
  EXPECT_EQ(info->self, el::node_id{1});
  EXPECT_EQ(info->leader, el::node_id{3});
  EXPECT_FALSE(info->is_leader);
  ASSERT_EQ(members->size(), 3u);
  EXPECT_EQ((*members)[2].state, el::peer_state::alive);
  EXPECT_TRUE(*resigned);
  ASSERT_TRUE(advance_until([&] { return agreed_on(2); }, 100ms));
}

TEST_F(candidate_actor_test, subscribers_hear_about_leadership_changes) {
  spawn_group(3);
  auto seen = std::make_shared<std::vector<el::leadership_event>>();
  auto sub = track(sys().spawn([seen](caf::event_based_actor*) -> caf::behavior {
    return {[seen](const el::leadership_event& e) { seen->push_back(e); }};
  }));
  caf::anon_send(handles[el::node_id{3}], caf::subscribe_atom::value, sub);
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  using k = el::leadership_event::kind;
  auto has = [&](k what) {
    return std::any_of(seen->begin(), seen->end(),
                       [&](auto& e) { return e.what == what; });
  };
  EXPECT_TRUE(has(k::became_leader));
  EXPECT_TRUE(has(k::acting_started));
  caf::anon_send(handles[el::node_id{3}], atoms::resign_atom::value);
  advance(50ms);
  EXPECT_TRUE(has(k::lost_leadership));
  EXPECT_TRUE(has(k::acting_stopped));
}

TEST_F(candidate_actor_test, leader_told_of_a_recorded_epoch_announces_a_term_above_it) {
  spawn_group(3);
  auto seen = std::make_shared<std::vector<el::leadership_event>>();
  auto sub = track(sys().spawn([seen](caf::event_based_actor*) -> caf::behavior {
    return {[seen](const el::leadership_event& e) { seen->push_back(e); }};
  }));
  caf::anon_send(handles[el::node_id{3}], caf::subscribe_atom::value, sub);
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  auto old = rec->views[el::node_id{3}].t;
  auto recorded = old.epoch + 5;
  // A follower told of it only remembers it.
  caf::anon_send(handles[el::node_id{1}], atoms::observe_atom::value, recorded);
  run();
  EXPECT_EQ(rec->views[el::node_id{1}].t, old);
  EXPECT_FALSE(rec->views[el::node_id{1}].is_leader);
  caf::anon_send(handles[el::node_id{3}], atoms::observe_atom::value, recorded);
  auto all_above = [&] {
    for (auto& [id, v] : rec->views)
      if (v.t.epoch <= recorded || v.t != rec->views[el::node_id{3}].t)
        return false;
    return agreed_on(3);
  };
  ASSERT_TRUE(advance_until(all_above, 500ms));
  auto fresh = rec->views[el::node_id{3}].t;
  EXPECT_TRUE(std::any_of(seen->begin(), seen->end(), [&](auto& e) {
    return e.what == el::leadership_event::kind::became_leader && e.t == fresh;
  }));
}

TEST_F(candidate_actor_test, leader_task_starts_on_election_and_stops_on_resign) {
  auto log = std::make_shared<task_log>();
  spawn_group(3, {}, counting_task(log));
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  run();
  EXPECT_EQ(log->started, 1);
  EXPECT_EQ(log->stopped, 0);
  EXPECT_FALSE(log->contexts.back().cancelled());
  caf::anon_send(handles[el::node_id{3}], atoms::resign_atom::value);
  ASSERT_TRUE(advance_until([&] { return agreed_on(2); }, 200ms));
  run();
  EXPECT_TRUE(log->contexts.front().cancelled());
  EXPECT_EQ(log->started, 2); // 2's task
  EXPECT_EQ(log->stopped, 1); // 3's task
  EXPECT_GT(log->terms[1], log->terms[0]);
}

TEST_F(candidate_actor_test, leader_task_is_cancelled_when_a_higher_term_appears) {
  auto log = std::make_shared<task_log>();
  spawn_group(3, {}, counting_task(log));
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  run();
  ASSERT_EQ(log->started, 1);
  // Someone announces a newer leadership (as after a partition heals).
  auto t = rec->views[el::node_id{3}].t;
  caf::send_as(
      caf::actor_cast<caf::actor>(handles[el::node_id{1}]),
      caf::actor_cast<caf::actor>(handles[el::node_id{3}]),
      el::heartbeat_ack_msg{el::node_id{1}, {t.epoch + 1, el::node_id{2}}, 0, false});
  run();
  EXPECT_TRUE(log->contexts.front().cancelled());
  EXPECT_EQ(log->stopped, 1);
  EXPECT_FALSE(rec->views[el::node_id{3}].is_leader);
}

TEST_F(candidate_actor_test, a_new_leader_task_waits_until_the_cancelled_one_returned) {
  // A task that goes on after its cancellation until told "done" (a slow
  // task finishing its last action).
  struct slow_log {
    int started = 0;
    int running = 0;
    int most_at_once = 0;
    std::vector<caf::actor> tasks;
  };
  auto log = std::make_shared<slow_log>();
  auto task = std::make_shared<const el::leader_task>(el::leader_task::from_actor(
      [log](caf::actor_system& sys, el::leader_context) -> caf::actor {
        log->started++;
        log->most_at_once = std::max(log->most_at_once, ++log->running);
        auto a = sys.spawn([log](caf::event_based_actor* self) -> caf::behavior {
          self->set_exit_handler([](caf::exit_msg&) {}); // finishes first
          self->attach_functor([log] { log->running--; });
          return {[self](const std::string&) { self->quit(); }};
        });
        log->tasks.push_back(a);
        return a;
      }));
  // However the test ends: stop the candidates, then kill every task (kill
  // cannot be trapped), or the actor system would wait for them forever.
  auto stop_all = [this, log] {
    for (auto& [id, h] : handles)
      caf::anon_send_exit(h, caf::exit_reason::kill);
    run();
    for (auto& a : log->tasks)
      caf::anon_send_exit(a, caf::exit_reason::kill);
    run();
  };
  std::unique_ptr<void, std::function<void(void*)>> guard{this,
                                                          [&](void*) { stop_all(); }};
  el::election_config cfg;
  cfg.guard.enabled = true; // a cut-off leader stops acting when its lease lapses
  spawn_group(3, cfg, task);
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  run();
  ASSERT_EQ(log->started, 1);
  // Node 3 is cut off: its lease lapses, it stops acting (its task is
  // cancelled, and keeps running); then the links come back.
  net->muted.insert(el::node_id{3});
  ASSERT_TRUE(advance_until([&] { return !rec->views[el::node_id{3}].acting; }, 2s));
  net->muted.clear();
  ASSERT_TRUE(advance_until(
      [&] {
        for (auto& [id, v] : rec->views)
          if (v.acting)
            return true;
        return false;
      },
      2s));
  advance(200ms);
  // Whoever acts now: if it is node 3, its new task waits for the old one.
  EXPECT_EQ(log->most_at_once, 1);
  // The cancelled tasks finish; a waiting one starts only then.
  auto started_before = log->started;
  for (size_t i = 0; i + 1 < log->tasks.size() || i == 0; ++i)
    if (i < log->tasks.size())
      caf::anon_send(log->tasks[i], std::string{"done"});
  advance(50ms);
  EXPECT_LE(log->running, 1);
  EXPECT_EQ(log->most_at_once, 1);
  EXPECT_GE(log->started, started_before);
}

TEST_F(candidate_actor_test, leader_task_is_cancelled_on_shutdown_and_the_others_elect) {
  auto log = std::make_shared<task_log>();
  spawn_group(3, {}, counting_task(log));
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  run();
  auto start = now();
  caf::anon_send_exit(handles[el::node_id{3}], caf::exit_reason::user_shutdown);
  run();
  EXPECT_TRUE(log->contexts.front().cancelled());
  EXPECT_GE(log->stopped, 1);
  ASSERT_TRUE(advance_until([&] { return agreed_on(2, {3}); }, 1s));
  EXPECT_LT(now() - start, 100ms); // resign on shutdown: no detection delay
}

TEST_F(candidate_actor_test, a_silent_leader_is_suspected_by_heartbeats) {
  el::election_config cfg;
  cfg.detector.kind = el::detector_kind::phi;
  cfg.detector.timeout = 100ms;
  spawn_group(3, cfg);
  ASSERT_TRUE(advance_until([&] { return agreed_on(3); }, 2s));
  // Freeze the leader: no down_msg, its heartbeats just stop arriving.
  auto frozen_at = now();
  net->muted.insert(el::node_id{3});
  ASSERT_TRUE(advance_until(
      [&] {
        return rec->views[el::node_id{1}].leader == el::node_id{2}
               && rec->views[el::node_id{2}].is_leader;
      },
      2s));
  EXPECT_GE(now() - frozen_at, cfg.detector.timeout - cfg.heartbeat_interval);
  // Thawed, the old leader learns the higher term from the acks and steps down.
  net->muted.clear();
  ASSERT_TRUE(advance_until([&] { return agreed_on(2); }, 500ms));
  EXPECT_FALSE(rec->views[el::node_id{3}].is_leader);
}

TEST_F(candidate_actor_test, unexpected_messages_are_dropped_and_counted) {
  spawn_group(1);
  caf::anon_send(caf::actor_cast<caf::actor>(handles[el::node_id{1}]),
                 std::string{"junk"});
  run();
  EXPECT_EQ(rec->rejected.size(), 1u);
}
