#include "runtime/node/workflow_part.hpp"

#include "actors/workflow/agent.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/replicated_store.hpp"
#include "actors/workflow/supervisor.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

namespace conclave::node {

namespace rp = conclave::replication;
namespace wf = conclave::workflow;

workflow_part compose_workflows(caf::actor_system& sys, workflow_part_options opts) {
  workflow_part out;
  auto me = opts.self;
  auto inc = opts.incarnation;
  rp::client_options o;
  o.members = opts.members;
  o.lookup = opts.lookup;
  o.deadline = opts.store_deadline;
  o.session_id = "node-" + std::to_string(me) + "-" + std::to_string(inc);
  o.seed = inc;
  out.repl = rp::spawn_client(sys, o);
  out.actors.push_back(out.repl);
  wf::replicated_store_options so;
  so.client = out.repl;
  out.store = wf::spawn_replicated_store(sys, so);
  out.actors.push_back(caf::actor_cast<caf::actor>(out.store));

  // Agents: ids unique in the cluster (node id, then a counter).
  uint64_t n = 0;
  for (auto& [kind, services] : opts.services) {
    for (auto& svc : services) {
      out.actors.push_back(caf::actor_cast<caf::actor>(svc)); // stopped with the part
      wf::agent_options ao;
      ao.id = me * 1000 + ++n;
      ao.service = svc;
      ao.seed = ao.id ^ inc;
      ao.clock = opts.clock;
      ao.clock_offset = opts.clock_offset;
      ao.probe = opts.probe;
      auto a = wf::spawn_agent(sys, ao);
      out.actors.push_back(caf::actor_cast<caf::actor>(a));
      out.agents.push_back(wf::agent_entry{ao.id, kind, a});
    }
  }
  wf::scheduler_options sched;
  sched.self = wf::scheduler_ref{me, inc};
  sched.store = out.store;
  sched.agents = out.agents;
  sched.poll_interval = opts.poll_interval;
  // The members share the ready jobs (opts.mine), so their optimistic claims
  // rarely meet; a share left unclaimed for takeover_after is anyone's. A
  // claim group conflicts as a whole when one of its jobs was claimed
  // elsewhere first: small groups keep that cheap.
  if (opts.mine)
    sched.mine = opts.mine;
  sched.takeover_after = opts.takeover_after;
  sched.claim_group = 8;
  sched.claims_in_flight = 64;
  sched.clock = opts.clock;
  sched.clock_offset = opts.clock_offset;
  sched.probe = opts.probe;
  out.scheduler = wf::spawn_scheduler(sys, sched);
  out.actors.push_back(caf::actor_cast<caf::actor>(out.scheduler));

  wf::client_options co;
  co.store = out.store;
  // Other nodes may serve kinds this one does not: callers check kinds
  // against wf.agents (embedded_node::submit, `conclave job submit`).
  co.any_kind = true;
  co.id_prefix = "n" + std::to_string(me) + "-" + std::to_string(inc % 1000000);
  co.clock = opts.clock;
  co.clock_offset = opts.clock_offset;
  co.probe = opts.probe;
  out.client = wf::spawn_client(sys, co);
  out.actors.push_back(caf::actor_cast<caf::actor>(out.client));

  wf::supervisor_options sup;
  sup.store = out.store;
  sup.scan_interval = opts.scan_interval;
  sup.candidate = opts.candidate;
  sup.clock = opts.clock;
  sup.clock_offset = opts.clock_offset;
  sup.probe = opts.probe;
  sup.events = caf::actor_cast<caf::actor>(out.client);
  sup.unsafe_ignore_attempt_fence = opts.unsafe_ignore_attempt_fence;
  out.supervisor = wf::spawn_supervisor(sys, sup);
  out.actors.push_back(caf::actor_cast<caf::actor>(out.supervisor));
  if (opts.candidate)
    caf::anon_send(opts.candidate, caf::subscribe_atom_v,
                   caf::actor_cast<caf::actor>(out.supervisor));
  return out;
}

} // namespace conclave::node
