#include "storage/wal_log_device.hpp"

#include "storage/checkpoint_file.hpp"
#include "storage/file_util.hpp"
#include "storage/log_scan.hpp"
#include "storage/posix_file_system.hpp"

#include <algorithm>
#include <cstdio>

namespace conclave::storage {

namespace fs = std::filesystem;
using store::errc;
using store::lsn;
using store::result;
namespace outcome = store::outcome;
namespace files = store::files;

namespace {

const std::string segment_prefix = "seg-";
const std::string segment_suffix = ".wal";

struct named_segment {
  fs::path path;
  lsn first;
};

/// The segment files of log_dir, oldest first.
result<std::vector<named_segment>> list_segments(store::file_system& disk,
                                                 const fs::path& log_dir) {
  std::vector<named_segment> out;
  auto names = disk.list_directory(log_dir);
  if (!names)
    return names.error();
  for (auto& name : names.value())
    if (auto named = files::parse_lsn_name(name, segment_prefix, segment_suffix))
      out.push_back({log_dir / name, *named});
  std::sort(out.begin(), out.end(), [](const named_segment& a, const named_segment& b) {
    return a.first < b.first;
  });
  return out;
}

/// A free name in `dir` for the bytes of `segment` from `offset` on.
fs::path truncated_name(store::file_system& disk, const fs::path& dir,
                        const fs::path& segment, uint64_t offset) {
  auto stem = segment.filename().string() + ".from-" + std::to_string(offset);
  auto p = dir / (stem + ".truncated");
  for (int n = 1; files::value_or(disk.exists(p), false); ++n)
    p = dir / (stem + "." + std::to_string(n) + ".truncated");
  return p;
}

/// A free name in `dir` for `file` (moved aside).
fs::path aside_name(store::file_system& disk, const fs::path& dir, const fs::path& file) {
  auto p = dir / file.filename();
  for (int n = 1; files::value_or(disk.exists(p), false); ++n)
    p = dir / (file.filename().string() + "." + std::to_string(n));
  return p;
}

/// Reads a checkpoint file; a bad one is reported by name in `problem`.
result<store::checkpoint_image> read_named_checkpoint(store::file_system& disk,
                                                      const fs::path& file,
                                                      std::string& problem) {
  auto ck = store::read_checkpoint(disk, file);
  if (!ck) {
    problem = "checkpoint " + file.string() + " is corrupt or unreadable ("
              + ck.error().message() + ")";
    return errc::corrupt_data;
  }
  return ck;
}

} // namespace

wal_log_device::wal_log_device(replica_log_options opts)
    : opts_(std::move(opts)), fs_(opts_.fs     ? opts_.fs
                                  : opts_.sync ? store::make_posix_file_system(opts_.sync)
                                               : store::default_file_system()) {}

wal_log_device::~wal_log_device() {
  wal_.reset(); // writes and syncs what is queued; completes pending syncs
  lock_.reset();
}

result<std::shared_ptr<wal_log_device>>
wal_log_device::open(replica_log_options opts, store::wal_recovery& report) {
  std::shared_ptr<wal_log_device> dev{new wal_log_device(std::move(opts))};
  auto& disk = *dev->fs_;
  if (auto c = disk.create_directories(dev->opts_.dir); !c)
    return c.error();
  auto lock = disk.lock_exclusive(dev->opts_.dir / "LOCK");
  if (!lock)
    return lock.error();
  dev->lock_ = std::move(lock.value());
  // A snapshot install that passed its commit point is finished first; one
  // that did not (only a .tmp) never happened.
  auto install_dir = dev->opts_.dir / "install";
  if (files::value_or(disk.exists(install_dir), false)) {
    auto pending = store::list_checkpoints(disk, install_dir);
    if (!pending.empty()) {
      if (auto ck = read_named_checkpoint(disk, pending.front(), report.problem); !ck)
        return ck.error();
      if (auto f = dev->finish_install(pending.front()); !f)
        return f.error();
    } else {
      if (auto r = disk.remove_all(install_dir); !r)
        return r.error();
    }
  }
  if (auto cks = store::list_checkpoints(disk, dev->opts_.dir); !cks.empty()) {
    auto ck = read_named_checkpoint(disk, cks.front(), report.problem);
    if (!ck)
      return ck.error();
    dev->checkpoint_lsn_ = ck.value().at;
    dev->checkpoint_image_ = std::move(ck.value().image);
  }
  if (auto w = dev->open_wal(dev->checkpoint_lsn_, report, &dev->opened_records_); !w)
    return w.error();
  dev->opened_records_valid_ = true;
  dev->appended_ = dev->durable_ = dev->wal_->appended_lsn();
  return dev;
}

result<void> wal_log_device::open_wal(lsn after, store::wal_recovery& report,
                                      std::vector<store::log_record>* records) {
  store::wal_options wo;
  wo.dir = opts_.dir;
  wo.segment_bytes = opts_.segment_bytes;
  wo.preallocate_bytes = opts_.preallocate_bytes;
  wo.fs = fs_;
  wo.writer_thread = opts_.writer_thread;
  auto replay = [records](const store::log_record& r) -> result<void> {
    if (records)
      records->push_back(r);
    return outcome::success();
  };
  auto w = store::wal::open(wo, after, replay, report);
  if (!w)
    return w.error();
  w.value()->on_durable([this](lsn upto, std::error_code err) { durable(upto, err); });
  wal_ = std::move(w.value());
  return outcome::success();
}

void wal_log_device::durable(lsn upto, std::error_code err) {
  std::vector<pending_sync> ready;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (err) {
      if (!failure_)
        failure_ = err;
      ready.swap(pending_);
    } else {
      if (durable_ < upto)
        durable_ = upto;
      auto split =
          std::stable_partition(pending_.begin(), pending_.end(),
                                [&](const pending_sync& p) { return p.upto > durable_; });
      ready.assign(std::make_move_iterator(split),
                   std::make_move_iterator(pending_.end()));
      pending_.erase(split, pending_.end());
    }
  }
  // Outside the lock: appends and syncs of other threads go on meanwhile.
  for (auto& p : ready) {
    if (err)
      p.done(errc::io_failure);
    else
      p.done(p.upto);
  }
}

void wal_log_device::fail(std::error_code err) {
  durable(lsn{}, err);
}

result<void> wal_log_device::append(const store::log_record& r) {
  if (store::encoded_body_size(r) > store::max_record_body)
    return errc::transaction_too_large;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_ || !wal_)
      return errc::store_failed;
    if (r.lsn.value != appended_.value + 1)
      return errc::bad_argument;
  }
  if (auto a = wal_->append(r.lsn, store::encode_record(r)); !a)
    return a.error();
  std::lock_guard<std::mutex> guard{mtx_};
  appended_ = r.lsn;
  opened_records_valid_ = false;
  opened_records_.clear();
  return outcome::success();
}

void wal_log_device::sync(sync_callback done) {
  result<lsn> now = errc::io_failure;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!failure_) {
      if (durable_ < appended_) {
        pending_.push_back({appended_, std::move(done)});
        return;
      }
      now = appended_;
    }
  }
  done(now);
}

result<void> wal_log_device::truncate_after(lsn at) {
  lsn appended;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_ || !wal_)
      return errc::store_failed;
    if (at >= appended_)
      return outcome::success();
    appended = appended_;
    // A sync still waiting reports at most `at` from here on.
    for (auto& p : pending_)
      p.upto = std::min(p.upto, at);
  }
  // Nothing may be in flight while the files change: make everything durable
  // (cheaper than telling queued records from written ones), then stop the
  // writer.
  if (auto st = stop_wal(appended); !st)
    return st.error();
  if (auto c = cut_files(at); !c) {
    fail(c.error());
    return c.error();
  }
  store::wal_recovery report;
  if (auto o = open_wal(at, report, nullptr); !o) {
    fail(o.error());
    return o.error();
  }
  std::unique_lock<std::mutex> guard{mtx_};
  appended_ = at;
  if (durable_ > at)
    durable_ = at;
  ++truncations_;
  opened_records_valid_ = false;
  opened_records_.clear();
  std::vector<pending_sync> ready;
  ready.swap(pending_);
  guard.unlock();
  for (auto& p : ready)
    p.done(p.upto);
  return outcome::success();
}

result<void> wal_log_device::cut_files(lsn at) {
  auto& disk = *fs_;
  auto log_dir = opts_.dir / "log";
  auto aside_dir = log_dir / "truncated";
  auto segs = list_segments(disk, log_dir);
  if (!segs)
    return segs.error();
  auto& all = segs.value();
  auto make_aside_dir = [&]() -> result<void> {
    if (auto c = disk.create_directories(aside_dir); !c)
      return c.error();
    return disk.sync_directory(log_dir);
  };
  // Whole segments after `at`, newest first, each move synced before the
  // next: a crash in between leaves a log that ends earlier, never one with
  // a hole.
  bool have_aside_dir = false;
  while (!all.empty() && all.back().first > at) {
    if (!have_aside_dir) {
      if (auto m = make_aside_dir(); !m)
        return m.error();
      have_aside_dir = true;
    }
    auto to = truncated_name(disk, aside_dir, all.back().path, 0);
    if (auto r = disk.rename(all.back().path, to); !r)
      return r.error();
    if (auto s = disk.sync_directory(aside_dir); !s)
      return s.error();
    if (auto s = disk.sync_directory(log_dir); !s)
      return s.error();
    all.pop_back();
  }
  if (all.empty())
    return at.value == 0 || at == checkpoint_lsn_ ? result<void>{outcome::success()}
                                                  : result<void>{errc::corrupt_data};
  // The segment that holds record `at`: find where that record ends.
  auto& holder = all.back();
  auto data = disk.read_file(holder.path);
  if (!data)
    return data.error();
  std::string_view bytes = data.value();
  // Damage among the records the checkpoint covers is read past, as
  // recovery does.
  uint64_t end = store::record_end(bytes, holder.first, at);
  if (end == std::string_view::npos)
    return errc::corrupt_data; // record `at` should be here: do not guess
  // What follows: records (the dropped suffix), then zeros of preallocation.
  uint64_t used = end;
  while (used < bytes.size()) {
    auto d = store::decode_record(bytes.substr(used));
    if (d.status != store::decode_status::ok)
      break;
    used += d.size;
  }
  if (auto nz = bytes.find_last_not_of('\0');
      nz != std::string_view::npos && nz + 1 > used)
    used = nz + 1;
  if (used > end) {
    if (!have_aside_dir)
      if (auto m = make_aside_dir(); !m)
        return m.error();
    auto to = truncated_name(disk, aside_dir, holder.path, end);
    auto tmp = to;
    tmp += ".tmp";
    if (auto w = files::write_file_synced(disk, tmp, bytes.substr(end, used - end)); !w)
      return w.error();
    if (auto r = disk.rename(tmp, to); !r)
      return r.error();
    if (auto s = disk.sync_directory(aside_dir); !s)
      return s.error();
  }
  if (bytes.size() > end) {
    auto f = disk.open_for_write(holder.path, store::file_system::open_mode::existing);
    if (!f)
      return f.error();
    if (auto t = f.value()->truncate(end); !t)
      return t.error();
    // The size change is what fdatasync must persist here.
    if (auto s = f.value()->sync(); !s)
      return s.error();
  }
  return outcome::success();
}

result<void> wal_log_device::checkpoint(std::string image, lsn at) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_ || !wal_)
      return errc::store_failed;
    if (at > durable_ || at < checkpoint_lsn_)
      return errc::bad_argument; // never checkpoint what is not durable
  }
  if (auto w = store::write_checkpoint(*fs_, opts_.dir, at, image); !w)
    return w.error(); // not fatal: the log still holds every record
  {
    std::lock_guard<std::mutex> guard{mtx_};
    checkpoint_lsn_ = at;
  }
  // The next record starts a new segment, so that the segments the
  // checkpoint covers can go now or at the next checkpoint.
  (void)wal_->roll();
  (void)wal_->truncate_through(at); // a failure leaves redundant files only
  return outcome::success();
}

result<void> wal_log_device::stop_wal() {
  lsn appended;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    appended = appended_;
  }
  return stop_wal(appended);
}

result<void> wal_log_device::stop_wal(lsn appended) {
  if (auto w = wal_->wait_durable(appended); !w) {
    fail(w.error());
    return w.error();
  }
  {
    auto s = wal_->get_stats();
    std::lock_guard<std::mutex> guard{mtx_};
    syncs_before_ += s.syncs;
  }
  wal_.reset();
  return outcome::success();
}

result<void> wal_log_device::finish_install(const fs::path& install_file) {
  auto& disk = *fs_;
  auto log_dir = opts_.dir / "log";
  auto aside_dir = log_dir / "replaced";
  auto ck_dir = opts_.dir / "checkpoints";
  if (auto c = disk.create_directories(aside_dir); !c)
    return c.error();
  if (auto s = disk.sync_directory(log_dir); !s)
    return s.error();
  // Newest first, each move synced: a crash leaves a prefix of the old log
  // (and the install file, so the next open finishes the install).
  auto segs = list_segments(disk, log_dir);
  if (!segs)
    return segs.error();
  auto& all = segs.value();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (auto r = disk.rename(it->path, aside_name(disk, aside_dir, it->path)); !r)
      return r.error();
    if (auto s = disk.sync_directory(aside_dir); !s)
      return s.error();
    if (auto s = disk.sync_directory(log_dir); !s)
      return s.error();
  }
  if (auto c = disk.create_directories(ck_dir); !c)
    return c.error();
  for (auto& old : store::list_checkpoints(disk, opts_.dir))
    if (auto r = disk.rename(old, aside_name(disk, aside_dir, old)); !r)
      return r.error();
  if (auto s = disk.sync_directory(aside_dir); !s)
    return s.error();
  if (auto r = disk.rename(install_file, ck_dir / install_file.filename()); !r)
    return r.error();
  if (auto s = disk.sync_directory(ck_dir); !s)
    return s.error();
  if (auto r = disk.remove_all(opts_.dir / "install"); !r)
    return r.error();
  return disk.sync_directory(opts_.dir);
}

result<void> wal_log_device::install_snapshot(std::string image, lsn at) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_ || !wal_)
      return errc::store_failed;
  }
  auto& disk = *fs_;
  auto install_dir = opts_.dir / "install";
  if (auto r = disk.remove_all(install_dir); !r)
    return r.error();
  // The commit point: the image durable under install/.
  if (auto w = store::write_checkpoint(disk, install_dir, at, image); !w)
    return w.error();
  if (auto s = disk.sync_directory(install_dir); !s)
    return s.error();
  if (auto s = disk.sync_directory(opts_.dir); !s)
    return s.error();
  if (auto st = stop_wal(); !st)
    return st.error();
  auto pending = store::list_checkpoints(disk, install_dir);
  if (pending.empty()) {
    fail(make_error_code(errc::corrupt_data));
    return errc::corrupt_data;
  }
  if (auto f = finish_install(pending.front()); !f) {
    fail(f.error());
    return f.error();
  }
  store::wal_recovery report;
  if (auto o = open_wal(at, report, nullptr); !o) {
    fail(o.error());
    return o.error();
  }
  std::unique_lock<std::mutex> guard{mtx_};
  appended_ = durable_ = at;
  checkpoint_lsn_ = at;
  checkpoint_image_.clear();
  opened_records_valid_ = false;
  opened_records_.clear();
  std::vector<pending_sync> ready;
  ready.swap(pending_);
  guard.unlock();
  for (auto& p : ready)
    p.done(std::min(p.upto, at));
  return outcome::success();
}

lsn wal_log_device::checkpoint_lsn() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return checkpoint_lsn_;
}

result<store::log_device::recovered> wal_log_device::recover() {
  recovered out;
  lsn appended, base;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_ || !wal_)
      return errc::store_failed;
    if (opened_records_valid_) {
      opened_records_valid_ = false;
      out.records = std::move(opened_records_);
      opened_records_.clear();
      out.checkpoint = std::move(checkpoint_image_);
      checkpoint_image_.clear();
      return out;
    }
    appended = appended_;
    base = checkpoint_lsn_;
  }
  if (base.value > 0) {
    auto cks = store::list_checkpoints(*fs_, opts_.dir);
    if (cks.empty())
      return errc::corrupt_data;
    auto ck = store::read_checkpoint(*fs_, cks.front());
    if (!ck)
      return errc::corrupt_data;
    if (ck.value().at != base)
      return errc::corrupt_data;
    out.checkpoint = std::move(ck.value().image);
  }
  // Read back from the files once nothing is in flight.
  if (auto w = wal_->wait_durable(appended); !w)
    return errc::io_failure;
  store::log_scan_options so;
  so.base = base;
  auto scanned =
      store::scan_log(*fs_, opts_.dir, so,
                      [&](const store::log_record& r, std::string_view) -> result<void> {
                        if (r.lsn <= appended)
                          out.records.push_back(r);
                        return outcome::success();
                      });
  if (!scanned)
    return scanned.error();
  if (scanned.value().fatal || out.records.size() != appended.value - base.value)
    return errc::corrupt_data;
  return out;
}

void wal_log_device::pump() {
  // wal_ changes only on the host's thread, which is this one.
  if (wal_)
    wal_->pump();
}

lsn wal_log_device::appended_lsn() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return appended_;
}

lsn wal_log_device::durable_lsn() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return durable_;
}

uint64_t wal_log_device::syncs() const {
  uint64_t now = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    now = syncs_before_;
  }
  // wal_ changes only on the host's own thread (truncate_after).
  return now + (wal_ ? wal_->get_stats().syncs : 0);
}

uint64_t wal_log_device::truncations() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return truncations_;
}

result<std::shared_ptr<store::log_device>> open_replica_log(const fs::path& dir) {
  replica_log_options opts;
  opts.dir = dir;
  store::wal_recovery report;
  auto dev = wal_log_device::open(opts, report);
  if (!dev) {
    if (!report.problem.empty())
      std::fprintf(stderr, "replica data in %s is corrupt: %s\n", dir.c_str(),
                   report.problem.c_str());
    return dev.error();
  }
  if (report.tail_cut) {
    std::string where;
    for (auto& p : report.moved_to)
      where += (where.empty() ? "; moved to " : ", ") + p.string();
    std::fprintf(stderr, "replica log %s: tail cut after lsn %llu (%llu bytes): %s%s\n",
                 dir.c_str(), static_cast<unsigned long long>(report.last.value),
                 static_cast<unsigned long long>(report.cut_bytes),
                 report.cut_reason.c_str(), where.c_str());
  }
  return std::shared_ptr<store::log_device>{std::move(dev.value())};
}

} // namespace conclave::storage
