#include "storage/wal.hpp"

#include "storage/log_scan.hpp"
#include "storage/posix_file_system.hpp"

#include <algorithm>

namespace conclave::store {

namespace fs = std::filesystem;

namespace {

const std::string segment_prefix = "seg-";
const std::string segment_suffix = ".wal";

} // namespace

wal::wal(wal_options opts)
    : opts_(std::move(opts)), log_dir_(opts_.dir / "log"),
      fs_(opts_.fs     ? opts_.fs
          : opts_.sync ? make_posix_file_system(opts_.sync)
                       : default_file_system()) {}

result<std::unique_ptr<wal>> wal::open(wal_options opts, lsn after,
                                       const replay_fn& replay, wal_recovery& report) {
  std::unique_ptr<wal> w{new wal(std::move(opts))};
  if (auto r = w->scan(after, replay, report); !r)
    return r.error();
  if (w->opts_.writer_thread)
    w->writer_ = std::thread{[p = w.get()] { p->run(); }};
  return w;
}

wal::~wal() {
  if (writer_.joinable()) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stop_ = true;
    }
    work_cv_.notify_all();
    writer_.join();
  } else if (!opts_.writer_thread) {
    // What the writer thread would have drained on close.
    std::unique_lock<std::mutex> lk{mtx_};
    while (!leading_ && !queue_.empty() && !failure_ && !crashed_)
      if (!lead(lk))
        break;
  }
  file_.reset(); // closes
}

namespace {

/// A free name in `dir` for bytes moved aside from `segment` at `offset`.
fs::path aside_name(file_system& disk, const fs::path& dir, const fs::path& segment,
                    uint64_t offset) {
  auto stem = segment.filename().string() + ".from-" + std::to_string(offset);
  auto p = dir / (stem + ".torn");
  for (int n = 1; files::value_or(disk.exists(p), false); ++n)
    p = dir / (stem + "." + std::to_string(n) + ".torn");
  return p;
}

} // namespace

result<void> wal::move_aside(const segment_scan& seg, uint64_t offset,
                             wal_recovery& report) {
  auto aside_dir = log_dir_ / "lost+found";
  uint64_t used = seg.bytes - seg.zero_tail; // zero bytes at the end are no data
  if (offset == 0) {
    if (used == 0)
      return fs_->remove(seg.path); // empty or never written
    if (auto c = fs_->create_directories(aside_dir); !c)
      return c.error();
    auto to = aside_name(*fs_, aside_dir, seg.path, 0);
    if (auto r = fs_->rename(seg.path, to); !r)
      return r.error();
    if (auto s = fs_->sync_directory(aside_dir); !s)
      return s.error();
    report.cut_bytes += used;
    report.moved_to.push_back(to);
    return outcome::success();
  }
  if (used > offset) {
    // Copy first (synced), then cut: a crash in between cuts again next time.
    auto data = fs_->read_file(seg.path);
    if (!data)
      return data.error();
    if (data.value().size() < used)
      return errc::corrupt_data; // changed under us
    if (auto c = fs_->create_directories(aside_dir); !c)
      return c.error();
    auto to = aside_name(*fs_, aside_dir, seg.path, offset);
    auto tmp = to;
    tmp += ".tmp";
    std::string_view bytes = data.value();
    if (auto w = files::write_file_synced(*fs_, tmp, bytes.substr(offset, used - offset));
        !w)
      return w.error();
    if (auto r = fs_->rename(tmp, to); !r)
      return r.error();
    if (auto s = fs_->sync_directory(aside_dir); !s)
      return s.error();
    report.cut_bytes += used - offset;
    report.moved_to.push_back(to);
  }
  auto f = fs_->open_for_write(seg.path, file_system::open_mode::existing);
  if (!f)
    return f.error();
  auto cut = f.value()->truncate(offset);
  if (cut)
    cut = f.value()->sync();
  return cut;
}

result<void> wal::scan(lsn after, const replay_fn& replay, wal_recovery& report) {
  if (auto c = fs_->create_directories(log_dir_); !c)
    return c.error();
  log_scan_options so;
  so.base = after;
  auto scanned = scan_log(*fs_, opts_.dir, so,
                          [&](const log_record& r, std::string_view) -> result<void> {
                            if (auto a = replay(r); !a)
                              return a.error();
                            if (report.records++ == 0)
                              report.first = r.lsn;
                            report.last = r.lsn;
                            return outcome::success();
                          });
  if (!scanned)
    return scanned.error();
  auto& log = scanned.value();
  for (auto& d : log.damage)
    if (d.what == log_damage::kind::covered)
      report.covered_damage.push_back(d.reason);
  for (auto& g : log.covered_gaps)
    report.covered_damage.push_back("covered records missing: " + g);
  if (log.fatal) {
    report.problem = log.problem;
    if (!opts_.repair)
      return errc::corrupt_data; // nothing on disk changed
    report.dropped_records = log.drop_records;
    report.dropped_first = log.drop_first;
    report.dropped_last = log.drop_last;
  }
  // Where the log ends: everything from here on is moved aside (zero bytes
  // and empty files are simply removed). Segments that hold only covered
  // records (not even read) stay as they are.
  bool cutting = log.fatal || log.ends_early;
  log_position end;
  if (log.fatal)
    end = log.keep_end;
  else if (log.ends_early)
    end = {log.bad_segment, log.bad_offset};
  else {
    end = {log.segments.size(), 0};
    // Segments after the last one in use hold nothing but zero bytes.
    while (end.segment > 0) {
      auto& s = log.segments[end.segment - 1];
      if (s.skipped || s.records > 0)
        break;
      --end.segment;
    }
  }
  for (size_t i = 0; i < log.segments.size(); ++i) {
    auto& seg = log.segments[i];
    if (i < end.segment || (i == end.segment && end.offset > 0 && !cutting)) {
      segments_.push_back({seg.path, seg.named});
      continue;
    }
    auto offset = i == end.segment ? end.offset : 0;
    if (auto m = move_aside(seg, offset, report); !m)
      return m.error();
    if (offset > 0)
      segments_.push_back({seg.path, seg.named});
  }
  if (cutting) {
    report.tail_cut = true;
    report.cut_reason = log.fatal ? "repair: " + log.problem : log.reason;
  }
  if (end.segment < log.segments.size())
    if (auto s = fs_->sync_directory(log_dir_); !s)
      return s.error();
  appended_ = durable_ = log.needed_last;
  return outcome::success();
}

void wal::on_durable(std::function<void(lsn, std::error_code)> f) {
  std::lock_guard<std::mutex> guard{mtx_};
  on_durable_ = std::move(f);
}

result<void> wal::append(lsn l, std::string frame, bool caller_waits) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_ || stop_)
      return errc::store_failed;
    if (l.value != appended_.value + 1)
      return errc::bad_argument;
    queue_.push_back(entry{l, std::move(frame), roll_pending_});
    roll_pending_ = false;
    appended_ = l;
    if (caller_waits)
      return outcome::success(); // its wait_durable leads, or joins a group
    wake_writer_ = true;
  }
  work_cv_.notify_one();
  return outcome::success();
}

result<void> wal::wait_durable(lsn l) {
  std::unique_lock<std::mutex> lk{mtx_};
  for (;;) {
    if (durable_ >= l)
      return outcome::success();
    if (failure_)
      return errc::io_failure;
    // No sync in flight: write and sync the queue here rather than hand it
    // to the writer thread and wait to be woken (two thread switches per
    // commit). While one is in flight, wait: its leader wakes us when done,
    // and then one of the waiters leads the records queued meanwhile.
    if (!leading_ && !queue_.empty() && !crashed_)
      lead(lk);
    else
      durable_cv_.wait(lk);
  }
}

void wal::pump() {
  std::unique_lock<std::mutex> lk{mtx_};
  if (!leading_ && !queue_.empty() && !failure_ && !crashed_)
    lead(lk);
}

lsn wal::durable_lsn() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return durable_;
}

lsn wal::appended_lsn() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return appended_;
}

std::error_code wal::failure() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return failure_;
}

wal::stats wal::get_stats() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return stats_;
}

std::vector<fs::path> wal::segments() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<fs::path> out;
  for (auto& s : segments_)
    out.push_back(s.path);
  return out;
}

result<void> wal::roll() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (failure_)
    return errc::store_failed;
  roll_pending_ = true;
  return outcome::success();
}

result<void> wal::truncate_through(lsn l) {
  std::vector<fs::path> doomed;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    size_t n = 0;
    // Segment i holds lsns below segments_[i + 1].first; the last one is
    // being written and always stays.
    while (n + 1 < segments_.size() && segments_[n + 1].first.value <= l.value + 1)
      ++n;
    for (size_t i = 0; i < n; ++i)
      doomed.push_back(segments_[i].path);
    segments_.erase(segments_.begin(),
                    segments_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  if (doomed.empty())
    return outcome::success();
  for (auto& p : doomed)
    if (auto r = fs_->remove(p); !r)
      return r.error();
  return fs_->sync_directory(log_dir_);
}

void wal::crash_for_testing() {
  std::function<void(lsn, std::error_code)> cb;
  lsn d;
  std::error_code err;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    crashed_ = true;
    stop_ = true;
    queue_.clear();
    wake_writer_ = false;
    if (!failure_)
      failure_ = make_error_code(errc::io_failure);
    failed_ = true;
  }
  work_cv_.notify_all();
  durable_cv_.notify_all();
  if (writer_.joinable())
    writer_.join();
  {
    // A sync led by a committing thread finishes first, as the writer
    // thread's would have.
    std::unique_lock<std::mutex> lk{mtx_};
    durable_cv_.wait(lk, [&] { return !leading_; });
    cb = on_durable_;
    d = durable_;
    err = failure_;
  }
  if (cb)
    cb(d, err);
}

bool wal::writer_has_work() const {
  return crashed_
         || (!leading_ && (stop_ || failure_ || (wake_writer_ && !queue_.empty())));
}

void wal::run() {
  std::unique_lock<std::mutex> lk{mtx_};
  for (;;) {
    while (!writer_has_work()) {
      work_cv_.wait(lk);
      ++stats_.writer_wakeups;
    }
    if (crashed_ || failure_)
      return;
    if (queue_.empty()) {
      if (stop_)
        return; // drained
      continue;
    }
    if (!lead(lk))
      return;
  }
}

bool wal::lead(std::unique_lock<std::mutex>& lk) {
  leading_ = true;
  std::vector<entry> batch;
  if (opts_.group_commit) {
    batch.assign(std::make_move_iterator(queue_.begin()),
                 std::make_move_iterator(queue_.end()));
    queue_.clear();
  } else {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (queue_.empty())
    wake_writer_ = false;
  lk.unlock();
  auto r = write_batch(batch);
  lk.lock();
  if (r) {
    durable_ = batch.back().l;
    stats_.records += batch.size();
  } else {
    if (!failure_)
      failure_ = r.error();
    failed_ = true;
  }
  auto cb = on_durable_;
  auto d = durable_;
  auto err = r ? std::error_code{} : failure_;
  if (cb) {
    // Still the leader: callbacks never overlap and come in lsn order.
    lk.unlock();
    cb(d, err);
    lk.lock();
  }
  leading_ = false;
  // Under the lock: a waiter that just found leading_ set cannot miss this.
  durable_cv_.notify_all();
  // The writer thread only when it has something to do now (its wait's
  // predicate holds): waking it after every sync for nothing cost one
  // writer's commit a context switch and a contended mtx_ (4 futex calls).
  if (writer_has_work())
    work_cv_.notify_all();
  return static_cast<bool>(r);
}

result<void> wal::open_segment(lsn first) {
  auto path = log_dir_ / files::lsn_name(segment_prefix, first, segment_suffix);
  auto f = fs_->open_for_write(path, file_system::open_mode::create_truncate);
  if (!f)
    return f.error();
  if (auto s = fs_->sync_directory(log_dir_); !s)
    return s.error();
  file_ = std::move(f.value());
  segment_size_ = 0;
  zeroed_ = 0;
  std::lock_guard<std::mutex> guard{mtx_};
  segments_.push_back({path, first});
  return outcome::success();
}

result<void> wal::sync_current() {
  if (auto s = file_->sync(); !s)
    return s.error();
  std::lock_guard<std::mutex> guard{mtx_};
  ++stats_.syncs;
  return outcome::success();
}

result<void> wal::write_batch(std::vector<entry>& batch) {
  std::string buf;
  bool dirty = false;
  uint64_t at = segment_size_; // file offset of buf's first byte
  lsn batch_first;             // the lsn of buf's first record
  auto flush = [&]() -> result<void> {
    if (buf.empty())
      return outcome::success();
    auto data = buf.size();
    auto end = at + data;
    if (opts_.preallocate_bytes > 0 && end > zeroed_) {
      // Extend the file with zeros well past the data, in the same write:
      // this sync journals the new size once, the next ones only data.
      auto target =
          std::max(end, std::min(zeroed_ + opts_.preallocate_bytes, opts_.segment_bytes));
      buf.append(target - end, '\0');
      zeroed_ = target;
    }
    if (auto w = file_->write_at(at, buf); !w)
      return w.error();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stats_.bytes += data;
    }
    at = end;
    buf.clear();
    dirty = true;
    return outcome::success();
  };
  for (auto& e : batch) {
    if (!file_ || e.roll_before || segment_size_ >= opts_.segment_bytes) {
      if (auto f = flush(); !f)
        return f.error();
      if (file_) {
        if (dirty)
          if (auto s = sync_current(); !s)
            return s.error();
        file_.reset(); // closes
        dirty = false;
      }
      if (auto o = open_segment(e.l); !o)
        return o.error();
      at = 0;
    }
    // A batch is what one write() puts into one segment: its records carry
    // the lsn of its first one, so that recovery can tell this write, torn
    // by a crash before its sync, from damage in an earlier, synced one.
    if (buf.empty())
      batch_first = e.l;
    stamp_batch(e.frame, batch_first);
    buf += e.frame;
    segment_size_ += e.frame.size();
  }
  if (auto f = flush(); !f)
    return f.error();
  if (dirty)
    return sync_current();
  return outcome::success();
}

} // namespace conclave::store
