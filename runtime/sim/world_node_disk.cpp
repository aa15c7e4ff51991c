#include "runtime/sim/world_node_disk.hpp"

#include "runtime/node/promise_file.hpp"
#include "runtime/node/replica_storage.hpp"

#include <random>

namespace conclave::sim {

world_node_disk::world_node_disk(disk_kind kind, std::chrono::nanoseconds fsync,
                                 bool lying, uint64_t seed)
    : kind_(kind) {
  if (kind == disk_kind::files) {
    disk_ = std::make_shared<sim_disk>(fsync, lying, sim_disk::on_files);
    fs_ = std::make_shared<sim_file_system>(seed);
  } else {
    disk_ = std::make_shared<sim_disk>(fsync, lying);
    terms_ = std::make_shared<replication::memory_term_file>();
    record_ = std::make_shared<election::memory_promise_record>();
  }
}

world_node_disk::~world_node_disk() {
  if (fs_)
    fs_->set_hook(nullptr);
}

outcome::result<world_node_disk::life, std::string>
world_node_disk::open(size_t members, int64_t now_ms, duration lease_max) {
  life l;
  l.disk = disk_;
  faulted_ = false;
  if (kind_ == disk_kind::memory) {
    l.terms = terms_;
    l.record = record_;
    return l;
  }
  fs_->restart();
  node::replica_storage_options o;
  o.data_dir = data_dir;
  o.members = members;
  o.fs = fs_;
  o.writer_thread = false;
  // Zeros ahead of the records as on the disk, in smaller steps: a run
  // writes kilobytes, and a megabyte of zeros per segment was most of its
  // time.
  o.preallocate_bytes = 16u << 10;
  o.now_ms = [now_ms] { return now_ms; };
  auto s = node::open_replica_storage(o);
  if (!s)
    return s.error();
  auto& st = s.value();
  disk_->attach(std::static_pointer_cast<storage::wal_log_device>(st.device));
  l.terms = st.terms;
  l.amnesiac = st.amnesiac;
  l.healed = st.healed;
  l.note = st.recovery_note;
  l.moved_damaged_aside = st.moved_damaged_aside;
  l.cut_torn_tail = st.cut_torn_tail;
  std::string problem;
  l.record = node::file_promise_record::open(data_dir, fs_, lease_max, problem);
  if (!problem.empty())
    l.note += (l.note.empty() ? "" : "; ") + problem;
  return l;
}

uint64_t world_node_disk::kill() {
  power_down_ = nullptr;
  if (fs_) {
    fs_->set_hook(nullptr);
    fs_->kill_processes();
  }
  return disk_->crash();
}

bool world_node_disk::power_loss_at_next_sync(std::function<void()> down) {
  if (!fs_)
    return false;
  power_down_ = std::move(down);
  fs_->set_hook([this](const sim_file_system::op& o) {
    if (o.kind != sim_file_system::op_kind::sync || !power_down_)
      return;
    // The sync's writes are in the page cache, not on the platters: the
    // crash keeps, tears or garbles them (sim_file_system's model).
    auto down = std::move(power_down_);
    power_down_ = nullptr;
    fs_->crash();
    ++power_losses_;
    faulted_ = true;
    down();
  });
  return true;
}

std::optional<sim_file_system::flipped> world_node_disk::flip() {
  if (!fs_)
    return std::nullopt;
  // The log or a checkpoint (what a node heals from its peers), whichever
  // holds a synced byte; the seed of the file system's own choices picks.
  std::mt19937_64 pick{fs_->get_stats().operations};
  auto base = std::string{data_dir} + "/replica/";
  std::string first = pick() % 4 == 0 ? "checkpoints" : "log";
  std::string second = first == "log" ? "checkpoints" : "log";
  auto f = fs_->flip_random_bit(base + first);
  if (!f)
    f = fs_->flip_random_bit(base + second);
  if (f)
    faulted_ = true;
  return f;
}

} // namespace conclave::sim
