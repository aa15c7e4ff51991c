#include "runtime/cluster/workflow_host.hpp"

#include "actors/replication/messages.hpp"
#include "actors/store/store_interface.hpp"
#include "actors/workflow/prometheus_workflow_probe.hpp"
#include "protocols/workflow/store_layout.hpp"
#include "runtime/cluster/front_directory.hpp"
#include "runtime/node/workflow_part.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <mutex>
#include <set>

namespace conclave::cluster {

namespace rp = conclave::replication;
namespace wf = conclave::workflow;
using namespace std::chrono_literals;

namespace {

/// Which of `n` members' share job `id` is in: FNV-1a of the id, the same in
/// every process.
uint64_t share_of(const std::string& id, uint64_t n) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : id) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return n == 0 ? 0 : h % n;
}

/// The members this node reaches now (itself included), sorted: the
/// schedulers that share the ready jobs.
struct live_members {
  std::mutex mu;
  std::vector<uint64_t> ids;

  void set(std::vector<uint64_t> now) {
    std::lock_guard<std::mutex> lk{mu};
    ids = std::move(now);
  }

  /// Whether `me` owns the share of job `id` among the live members.
  bool owns(uint64_t me, const std::string& id) {
    std::lock_guard<std::mutex> lk{mu};
    auto i = std::find(ids.begin(), ids.end(), me);
    if (i == ids.end())
      return true;
    return share_of(id, ids.size()) == static_cast<uint64_t>(i - ids.begin());
  }
};

/// Writes this node's kinds to wf.agents until the store takes them, tells
/// the supervisor about each member's connection (a remote handle that goes
/// down when the member's node dies or its link drops), and keeps the live
/// members for the schedulers' shares.
struct keeper_state {
  static inline const char* name = "conclave.workflow_keeper";
};

caf::behavior keeper(caf::stateful_actor<keeper_state>* self,
                     std::shared_ptr<front_directory> dir, caf::actor repl,
                     wf::supervisor_actor sup, uint64_t me, std::vector<uint64_t> peers,
                     std::string kinds, std::string shown,
                     std::shared_ptr<const node::node_log> log,
                     std::shared_ptr<live_members> live) {
  auto registered = std::make_shared<bool>(false);
  auto in_flight = std::make_shared<bool>(false);
  auto watched = std::make_shared<std::map<uint64_t, caf::actor>>();
  self->send(self, caf::tick_atom_v);
  return {
      [=](caf::tick_atom) {
        if (!*registered && !*in_flight) {
          *in_flight = true;
          rp::txn_request req;
          req.ops.push_back(rp::txn_op{wf::layout::agents, std::to_string(me), kinds,
                                       rp::op_kind::put});
          self->request(repl, 10s, std::move(req))
              .then(
                  [=](rp::txn_result& r) {
                    *in_flight = false;
                    if (r.code != rp::errc::ok)
                      return;
                    *registered = true;
                    if (log)
                      log->info("workflow agent kinds registered in the store: "
                                + (shown.empty() ? std::string{"none"} : shown));
                  },
                  [=](caf::error&) { *in_flight = false; });
        }
        std::vector<uint64_t> reached{me};
        for (auto id : peers) {
          auto h = dir->lookup(id);
          if (h)
            reached.push_back(id);
          auto& last = (*watched)[id];
          if (h && h != last) {
            last = h;
            caf::anon_send(sup, conclave::workflow_atoms::watch_atom_v, id, h, true);
          }
        }
        std::sort(reached.begin(), reached.end());
        live->set(std::move(reached));
        self->delayed_send(self, 100ms, caf::tick_atom_v);
      },
  };
}

std::string joined(const std::set<std::string>& kinds) {
  std::string out;
  for (auto& k : kinds)
    out += (out.empty() ? "" : ", ") + k;
  return out;
}

} // namespace

struct workflow_host::state {
  std::shared_ptr<front_directory> dir;
  caf::actor repl;
  conclave::store::store_actor store;
  std::vector<caf::actor> actors;
  wf::client_actor client;
  bool stopped = false;
};

workflow::duration wall_clock_offset() {
  return std::chrono::duration_cast<workflow::duration>(
      std::chrono::system_clock::now().time_since_epoch()
      - std::chrono::steady_clock::now().time_since_epoch());
}

void configure_workflows(caf::actor_system_config& cfg) {
  store::add_store_types(cfg);
  wf::add_workflow_types(cfg);
}

workflow_host::workflow_host(caf::actor_system& sys, const node::node_config& c,
                             workflow_host_options opts)
    : s_(std::make_shared<state>()) {
  auto me = c.id.value;
  auto offset = wall_clock_offset();
  std::shared_ptr<wf::workflow_probe> probe;
  if (opts.metrics)
    probe = std::make_shared<wf::prometheus_workflow_probe>(opts.metrics, false);
  front_directory_options d;
  d.cluster = c.cluster;
  d.members = c.peers;
  d.members.emplace(me, c.listen);
  // A stopped member accepts every dial and never answers; each dial costs
  // this node's I/O thread until it is given up (node.cpp): redial such a
  // member at most every 2 s (the store client uses the others meanwhile).
  d.retry_max = std::chrono::milliseconds{2000};
  s_->dir = std::make_shared<front_directory>(sys, d);
  auto incarnation =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  // The members share the ready jobs by a hash of the job id, among those
  // this node reaches (the keeper below keeps them).
  auto live = std::make_shared<live_members>();
  {
    std::vector<uint64_t> ids{me};
    for (auto& [id, addr] : c.peers)
      ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    live->set(std::move(ids)); // until the keeper knows whom this node reaches
  }
  std::set<std::string> kinds;
  for (auto& [kind, services] : opts.services)
    kinds.insert(kind);
  // The node's workflow part (runtime/node/workflow_part.hpp), on CAF's clock
  // with wall-clock timestamps, reaching the fronts through the middleman.
  node::workflow_part_options w;
  w.self = me;
  w.incarnation = incarnation;
  w.members.push_back(rp::node_id{me});
  for (auto& [id, addr] : c.peers)
    w.members.push_back(rp::node_id{id});
  auto* dir = s_->dir.get();
  w.lookup = [dir](rp::node_id id) { return dir->lookup(id.value); };
  w.store_deadline = client_deadline;
  w.services = std::move(opts.services);
  w.candidate = opts.candidate;
  w.probe = probe;
  w.clock_offset = offset;
  w.poll_interval = opts.poll_interval;
  w.scan_interval = opts.scan_interval;
  w.mine = [live, me](const wf::job_id& j) { return live->owns(me, j.value); };
  w.takeover_after = opts.takeover_after;
  auto part = node::compose_workflows(sys, std::move(w));
  s_->repl = part.repl;
  s_->store = part.store;
  s_->client = part.client;
  s_->actors = part.actors;
  auto supervisor = part.supervisor;
  auto& agents = part.agents;
  std::vector<uint64_t> peers;
  for (auto& [id, addr] : c.peers)
    peers.push_back(id);
  s_->actors.push_back(sys.spawn(keeper, s_->dir, s_->repl, supervisor, me, peers,
                                 wf::layout::encode_kinds(kinds), joined(kinds), opts.log,
                                 live));
  if (opts.log)
    opts.log->info("workflows: scheduler " + std::to_string(me) + ", "
                   + std::to_string(agents.size()) + " agent(s)"
                   + (kinds.empty() ? std::string{} : " of " + joined(kinds))
                   + ", supervisor acting while this node leads");
}

workflow_host::~workflow_host() {
  stop();
}

wf::client_actor workflow_host::client() const {
  return s_->client;
}

caf::actor workflow_host::replication_client() const {
  return s_->repl;
}

void workflow_host::stop() {
  if (!s_ || s_->stopped)
    return;
  s_->stopped = true;
  for (auto& a : s_->actors)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  s_->actors.clear();
  s_->dir.reset();
}

} // namespace conclave::cluster
