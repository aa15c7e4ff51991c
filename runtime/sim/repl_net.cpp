#include "runtime/sim/repl_net.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/local_actor.hpp>
#include <caf/send.hpp>

namespace conclave::sim {

namespace {

using election::node_id;
using release_atom = caf::atom_constant<caf::atom("rs_fsync")>;

bool coin(std::mt19937_64& rng, double p) {
  if (p <= 0)
    return false;
  return std::uniform_real_distribution<double>{0.0, 1.0}(rng) < p;
}

const caf::actor* handle_of(const std::vector<caf::actor>& v, node_id id) {
  if (id.value == 0 || id.value > v.size() || !v[id.value - 1])
    return nullptr;
  return &v[id.value - 1];
}

} // namespace

// -- network ------------------------------------------------------------------

void repl_net::set_link(node_id from, node_id to, bool up) {
  auto& n = cuts_[{from.value, to.value}];
  n += up ? -1 : 1;
  if (n <= 0)
    cuts_.erase({from.value, to.value});
}

bool repl_net::link_up(node_id from, node_id to) const {
  return cuts_.count({from.value, to.value}) == 0;
}

std::vector<caf::timespan> repl_net::route(node_id from, node_id to) {
  ++messages;
  std::vector<caf::timespan> out;
  if (!link_up(from, to)) {
    ++lost;
    return out;
  }
  bool faulty = clock->now() < heal_at;
  if (faulty && coin(rng, loss)) {
    ++lost;
    return out;
  }
  auto draw = [&] {
    auto lo = delay_min.count();
    auto hi = delay_max.count();
    auto d = lo >= hi ? lo : std::uniform_int_distribution<int64_t>{lo, hi}(rng);
    return caf::timespan{d};
  };
  out.push_back(draw());
  if (faulty && coin(rng, dup)) {
    ++duplicated;
    out.push_back(draw());
  }
  return out;
}

template <class Send>
void repl_link::send_routed(node_id to, Send&& send) {
  auto delays = net_->route(self_, to);
  if (delays.empty())
    return;
  auto h = handle_of(net_->hosts, to);
  if (!h) {
    ++net_->lost;
    return;
  }
  for (auto d : delays)
    send(*h, d);
}

void repl_link::deliver(node_id to, const replication::message& m) {
  send_routed(to, [&](const caf::actor& h, auto d) {
    std::visit([&](const auto& x) { caf::delayed_anon_send(h, d, x); }, m);
  });
}

void repl_link::deliver_chunk(node_id to, const replication::snapshot_chunk& c) {
  send_routed(to, [&](const caf::actor& h, auto d) { caf::delayed_anon_send(h, d, c); });
}

void election_link::send(caf::local_actor*, node_id to, const election::message& m) {
  auto delays = net_->route(self_, to);
  if (delays.empty())
    return;
  auto h = handle_of(net_->candidates, to);
  if (!h) {
    ++net_->lost;
    return;
  }
  for (auto d : delays)
    std::visit([&](const auto& x) { caf::delayed_anon_send(*h, d, x); }, m);
}

void election_link::watch(caf::local_actor* self, node_id peer) {
  if (auto h = handle_of(net_->candidates, peer))
    self->monitor(*h);
}

std::optional<node_id> election_link::node_of(const caf::actor_addr& addr) const {
  auto& v = net_->candidates;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] && v[i].address() == addr)
      return node_id{i + 1};
  return std::nullopt;
}

// -- disk ---------------------------------------------------------------------

store::result<void> sim_disk::append(const store::log_record& r) {
  auto res = inner_.append(r);
  if (res)
    appended_ = r.lsn;
  return res;
}

void sim_disk::sync(sync_callback done) {
  if (lying_) {
    inner_.sync([](store::result<store::lsn>) {});
    done(appended_);
  } else {
    inner_.sync(std::move(done));
  }
  if (releaser_)
    caf::delayed_anon_send(releaser_, fsync_, release_atom::value, generation_);
}

store::result<void> sim_disk::truncate_after(store::lsn at) {
  auto res = inner_.truncate_after(at);
  if (res && appended_ > at)
    appended_ = at;
  return res;
}

store::result<void> sim_disk::checkpoint(std::string image, store::lsn at) {
  auto res = inner_.checkpoint(std::move(image), at);
  if (res)
    ++checkpoints_;
  return res;
}

store::result<void> sim_disk::install_snapshot(std::string image, store::lsn at) {
  auto res = inner_.install_snapshot(std::move(image), at);
  if (res) {
    appended_ = at;
    ++installs_;
  }
  return res;
}

store::result<store::log_device::recovered> sim_disk::recover() {
  return inner_.recover();
}

uint64_t sim_disk::crash() {
  auto durable = inner_.durable_lsn();
  auto dropped = appended_ > durable ? appended_.value - durable.value : 0;
  inner_.crash();
  appended_ = inner_.durable_lsn();
  ++generation_;
  return dropped;
}

void sim_disk::release(uint64_t gen) {
  if (gen == generation_)
    inner_.release_syncs();
}

caf::actor spawn_disk_releaser(caf::actor_system& sys, std::weak_ptr<sim_disk> disk) {
  return sys.spawn([disk](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::drop);
    return {
        [disk](release_atom, uint64_t gen) {
          if (auto d = disk.lock())
            d->release(gen);
        },
    };
  });
}

} // namespace conclave::sim
