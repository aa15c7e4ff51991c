#include "runtime/sim/sim_disk.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

namespace conclave::sim {

namespace {

using release_atom = caf::atom_constant<caf::atom("rs_fsync")>;

} // namespace

void sim_disk::attach(std::shared_ptr<storage::wal_log_device> dev) {
  files_ = std::move(dev);
  appended_ = files_ ? files_->appended_lsn() : store::lsn{};
}

store::log_device* sim_disk::device() {
  if (!on_files_)
    return &inner_;
  return files_.get();
}

void sim_disk::release_now() {
  if (!on_files_)
    inner_.release_syncs();
  else if (files_)
    files_->pump();
}

store::result<void> sim_disk::append(const store::log_record& r) {
  auto* d = device();
  if (!d)
    return store::errc::store_failed;
  auto res = d->append(r);
  if (res)
    appended_ = r.lsn;
  return res;
}

void sim_disk::sync(sync_callback done) {
  auto* d = device();
  if (!d) {
    done(store::errc::io_failure);
    return;
  }
  if (lying_) {
    d->sync([](store::result<store::lsn>) {});
    done(appended_);
  } else {
    d->sync(std::move(done));
  }
  if (stalled_)
    release_at_end_ = true;
  else if (releaser_)
    caf::delayed_anon_send(releaser_, fsync_, release_atom::value, generation_);
}

store::result<void> sim_disk::truncate_after(store::lsn at) {
  auto* d = device();
  if (!d)
    return store::errc::store_failed;
  auto res = d->truncate_after(at);
  if (res && appended_ > at)
    appended_ = at;
  return res;
}

store::result<void> sim_disk::checkpoint(std::string image, store::lsn at) {
  auto* d = device();
  if (!d)
    return store::errc::store_failed;
  auto res = d->checkpoint(std::move(image), at);
  if (res)
    ++checkpoints_;
  return res;
}

store::result<void> sim_disk::install_snapshot(std::string image, store::lsn at) {
  auto* d = device();
  if (!d)
    return store::errc::store_failed;
  auto res = d->install_snapshot(std::move(image), at);
  if (res) {
    appended_ = at;
    ++installs_;
  }
  return res;
}

store::result<store::log_device::recovered> sim_disk::recover() {
  auto* d = device();
  if (!d)
    return store::errc::store_failed;
  return d->recover();
}

uint64_t sim_disk::crash() {
  if (on_files_) {
    // Queued records never reached the file system: lost with the process.
    uint64_t dropped = 0;
    if (files_) {
      auto durable = files_->durable_lsn();
      dropped = appended_ > durable ? appended_.value - durable.value : 0;
    }
    files_.reset(); // its file system is down: the close writes nothing
    appended_ = store::lsn{};
    ++generation_;
    release_at_end_ = false;
    return dropped;
  }
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
    release_now();
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
    release_now();
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
