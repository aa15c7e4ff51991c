// prometheus_workflow_probe on CAF's test coordinator: every series exists at
// 0 before anything runs, and after a few small jobs (one plain, one whose
// first attempt hangs past its deadline, one that fails and is compensated)
// the registry holds exactly the counts those jobs imply.
#include "actors/workflow/prometheus_workflow_probe.hpp"
#include "actors/store/store_host.hpp"
#include "actors/workflow/agent.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/scheduler.hpp"
#include "actors/workflow/supervisor.hpp"
#include "actors/workflow/test_service.hpp"
#include "storage/api/memory_log_device.hpp"
#include "tests/support/ask.hpp"
#include "tests/support/coordinator_fixture.hpp"

#include <prometheus/metric_family.h>

using namespace conclave::workflow;
using namespace std::chrono_literals;
using conclave::testing::ask;
namespace atoms = conclave::workflow_atoms;
namespace el = conclave::election;

namespace {

class probe_test : public conclave::testing::coordinator_fixture {
protected:
  void configure(caf::actor_system_config& cfg) override {
    conclave::store::add_store_types(cfg);
    add_workflow_types(cfg);
    cfg.add_message_types<caf::id_block::conclave_election>();
  }

  void SetUp() override {
    coordinator_fixture::SetUp();
    conclave::store::store_host_options so;
    so.device = std::make_shared<conclave::store::memory_log_device>();
    auto store = track(conclave::store::spawn_store_host(sys(), so));
    service = std::make_shared<test_service_state>();
    undo_state = std::make_shared<test_service_state>();
    auto svc = track(spawn_test_service(sys(), service));
    auto undo = track(spawn_test_service(sys(), undo_state));
    std::vector<agent_entry> agents;
    for (uint64_t id : {1, 2}) {
      agent_options o;
      o.id = id;
      o.service = id == 1 ? svc : undo;
      o.probe = probe;
      agents.push_back({id, id == 1 ? "svc" : "undo", track(spawn_agent(sys(), o))});
    }
    scheduler_options sc;
    sc.self = scheduler_ref{1, 1};
    sc.store = store;
    sc.agents = agents;
    sc.probe = probe;
    track(spawn_scheduler(sys(), sc));
    supervisor_options vo;
    vo.store = store;
    vo.probe = probe;
    vo.scan_interval = 50ms;
    auto sup = track(spawn_supervisor(sys(), vo));
    el::leadership_event ev;
    ev.what = el::leadership_event::kind::became_leader;
    ev.t = el::term{1, el::node_id{1}, 1};
    caf::anon_send(sup, ev);
    client_options co;
    co.store = store;
    co.known_kinds = {"svc", "undo"};
    co.probe = probe;
    client = track(spawn_client(sys(), co));
    run();
  }

  /// The value of the series `name` with label `key`=`value` (or no label).
  double value(const std::string& name, const std::string& key = {},
               const std::string& val = {}) {
    for (auto& f : probe->registry()->Collect()) {
      if (f.name != name)
        continue;
      for (auto& m : f.metric) {
        bool match = key.empty();
        for (auto& l : m.label)
          match = match || (l.name == key && l.value == val);
        if (!match)
          continue;
        switch (f.type) {
        case prometheus::MetricType::Counter:
          return m.counter.value;
        case prometheus::MetricType::Gauge:
          return m.gauge.value;
        case prometheus::MetricType::Histogram:
          return static_cast<double>(m.histogram.sample_count);
        default:
          return -1;
        }
      }
    }
    return -1; // no such series
  }

  job_id submit(const std::string& id, size_t steps, bool compensate) {
    job_spec s;
    s.id = job_id{id};
    for (size_t i = 0; i < steps; ++i) {
      step_spec st;
      st.agent_kind = "svc";
      st.timeout = 100ms;
      st.retry.max_attempts = 1;
      if (compensate)
        st.compensation = compensation_spec{"undo", "u"};
      s.steps.push_back(st);
    }
    auto r = ask<job_id>(sys(), client, atoms::submit_atom_v, s);
    run();
    EXPECT_TRUE(r->done && r->value);
    return s.id;
  }

  bool reaches(const job_id& id, job_state want) {
    return advance_until(
        [&] {
          auto r = ask<job_view>(sys(), client, caf::get_atom::value, id);
          run();
          return r->value && r->value->job.state == want;
        },
        2s);
  }

  std::shared_ptr<prometheus_workflow_probe> probe =
      std::make_shared<prometheus_workflow_probe>();
  std::shared_ptr<test_service_state> service, undo_state;
  client_actor client;
};

} // namespace

TEST(prometheus_workflow_probe, every_series_exists_at_zero_from_the_start) {
  prometheus_workflow_probe p;
  size_t series = 0;
  for (auto& f : p.registry()->Collect())
    for (auto& m : f.metric) {
      ++series;
      if (f.type == prometheus::MetricType::Histogram)
        EXPECT_EQ(m.histogram.sample_count, 0u) << f.name;
      else
        EXPECT_EQ(f.type == prometheus::MetricType::Counter ? m.counter.value
                                                            : m.gauge.value,
                  0.0)
            << f.name;
    }
  // 7 job states + 7 step states + 2 dispatch kinds + 3 recovery causes + 7
  // single series (step duration, stale, retries, expiries, fenced,
  // compensations, scans).
  EXPECT_EQ(series, 7u + 7u + 2u + 3u + 7u);
}

TEST_F(probe_test, a_small_workflow_leaves_the_counts_it_implies) {
  // A: two steps, both succeed.
  auto a = submit("a", 2, false);
  ASSERT_TRUE(reaches(a, job_state::processed));
  // B: the first attempt hangs past its deadline; the supervisor recovers it.
  service->script = {test_behavior::hang};
  auto b = submit("b", 1, false);
  ASSERT_TRUE(reaches(b, job_state::processed));
  // C: step 0 succeeds, step 1 fails permanently; step 0 is compensated.
  service->script = {test_behavior::ok, test_behavior::permanent};
  auto c = submit("c", 2, true);
  ASSERT_TRUE(reaches(c, job_state::compensated));

  EXPECT_EQ(value("conclave_workflow_jobs", "state", "processed"), 2);
  EXPECT_EQ(value("conclave_workflow_jobs", "state", "compensated"), 1);
  EXPECT_EQ(value("conclave_workflow_jobs", "state", "pending"), 0);
  EXPECT_EQ(value("conclave_workflow_jobs", "state", "processing"), 0);
  EXPECT_EQ(value("conclave_workflow_jobs", "state", "compensating"), 0);
  EXPECT_EQ(value("conclave_workflow_steps", "state", "processed"), 3);
  EXPECT_EQ(value("conclave_workflow_steps", "state", "compensated"), 1);
  EXPECT_EQ(value("conclave_workflow_steps", "state", "error"), 1);
  EXPECT_EQ(value("conclave_workflow_steps", "state", "pending"), 0);
  EXPECT_EQ(value("conclave_workflow_steps", "state", "processing"), 0);
  // a: 2, b: 2 (the hung attempt and its retry), c: 2; one undo.
  EXPECT_EQ(value("conclave_workflow_dispatches_total", "action", "step"), 6);
  EXPECT_EQ(value("conclave_workflow_dispatches_total", "action", "compensation"), 1);
  EXPECT_EQ(value("conclave_workflow_recoveries_total", "cause", "deadline"), 1);
  EXPECT_EQ(value("conclave_workflow_recoveries_total", "cause", "monitor"), 0);
  EXPECT_EQ(value("conclave_workflow_recoveries_total", "cause", "failure"), 0);
  EXPECT_EQ(value("conclave_workflow_deadline_expiries_total"), 1);
  EXPECT_EQ(value("conclave_workflow_compensations_total"), 1);
  EXPECT_EQ(value("conclave_workflow_stale_replies_total"), 0);
  EXPECT_EQ(value("conclave_workflow_fenced_writes_total"), 0);
  EXPECT_EQ(value("conclave_workflow_agent_retries_total"), 0);
  // Outcomes recorded: a 2, b 1, c 2, the undo 1.
  EXPECT_EQ(value("conclave_workflow_step_duration_seconds"), 6);
  EXPECT_GE(value("conclave_workflow_supervisor_scan_duration_seconds"), 1);
}
