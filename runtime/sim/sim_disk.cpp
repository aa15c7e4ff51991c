#include "runtime/sim/sim_disk.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

namespace conclave::sim {

namespace {

using release_atom = caf::atom_constant<caf::atom("rs_fsync")>;

} // namespace

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
  if (stalled_)
    release_at_end_ = true;
  else if (releaser_)
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
  release_at_end_ = false; // the syncs under way died with the process
  return dropped;
}

void sim_disk::release(uint64_t gen) {
  if (gen != generation_)
    return;
  if (stalled_)
    release_at_end_ = true;
  else
    inner_.release_syncs();
}

void sim_disk::stall() {
  stalled_ = true;
}

void sim_disk::end_stall() {
  if (!stalled_)
    return;
  stalled_ = false;
  if (release_at_end_) {
    release_at_end_ = false;
    inner_.release_syncs();
  }
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
