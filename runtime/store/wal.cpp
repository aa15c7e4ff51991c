#include "runtime/store/wal.hpp"

#include "runtime/store/log_scan.hpp"

#include <algorithm>
#include <fcntl.h>
#include <unistd.h>

namespace conclave::store {

namespace fs = std::filesystem;

namespace {

const std::string segment_prefix = "seg-";
const std::string segment_suffix = ".wal";

} // namespace

wal::wal(wal_options opts)
    : opts_(std::move(opts)), log_dir_(opts_.dir / "log"),
      sync_(opts_.sync ? opts_.sync : files::default_sync()) {}

result<std::unique_ptr<wal>> wal::open(wal_options opts, lsn after,
                                       const replay_fn& replay, wal_recovery& report) {
  std::unique_ptr<wal> w{new wal(std::move(opts))};
  if (auto r = w->scan(after, replay, report); !r)
    return r.error();
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
  }
  if (fd_ >= 0)
    ::close(fd_);
}

result<void> wal::scan(lsn after, const replay_fn& replay, wal_recovery& report) {
  std::error_code ec;
  fs::create_directories(log_dir_, ec);
  if (ec)
    return ec;
  bool replayed = false;
  auto scanned = scan_log(opts_.dir, [&](const log_record& r) -> result<void> {
    if (r.lsn <= after)
      return outcome::success();
    if (!replayed && r.lsn.value != after.value + 1)
      return errc::corrupt_data; // records after `after` are missing
    if (auto a = replay(r); !a)
      return a.error();
    if (!replayed)
      report.first = r.lsn;
    replayed = true;
    report.last = r.lsn;
    ++report.records;
    return outcome::success();
  });
  if (!scanned)
    return scanned.error();
  auto& log = scanned.value();
  bool removed = false;
  // A log that ends before `after` holds only what the checkpoint covers. Its
  // segments go: the next record (after + 1) starts a new one, and leaving
  // the old ones would read as a gap in the lsns at the next open.
  bool stale = log.records > 0 && log.last < after;
  for (size_t i = 0; i < log.segments.size(); ++i) {
    auto& seg = log.segments[i];
    bool after_end = log.ends_early && i > log.bad_segment;
    if (seg.valid_bytes == 0 || after_end || stale) {
      // Empty (created just before a crash), invalid from its first byte, or
      // after the end of the log.
      fs::remove(seg.path, ec);
      removed = true;
      continue;
    }
    if (log.ends_early && i == log.bad_segment) {
      int fd = ::open(seg.path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0)
        return files::last_error();
      auto rc = ::ftruncate(fd, static_cast<off_t>(seg.valid_bytes));
      if (rc == 0)
        rc = sync_(fd);
      auto err = rc != 0 ? files::last_error() : std::error_code{};
      ::close(fd);
      if (err)
        return err;
    }
    segments_.push_back({seg.path, seg.named});
  }
  if (log.ends_early) {
    report.tail_cut = true;
    report.cut_bytes = log.bytes_after_end;
    report.cut_reason = log.reason;
  }
  if (removed || log.ends_early)
    if (auto s = files::sync_dir(log_dir_, sync_); !s)
      return s.error();
  appended_ = durable_ = log.records > 0 && log.last > after ? log.last : after;
  return outcome::success();
}

void wal::on_durable(std::function<void(lsn, std::error_code)> f) {
  std::lock_guard<std::mutex> guard{mtx_};
  on_durable_ = std::move(f);
}

result<void> wal::append(lsn l, std::string frame) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failure_ || stop_)
      return errc::store_failed;
    if (l.value != appended_.value + 1)
      return errc::bad_argument;
    queue_.push_back(entry{l, std::move(frame), roll_pending_});
    roll_pending_ = false;
    appended_ = l;
  }
  work_cv_.notify_one();
  return outcome::success();
}

result<void> wal::wait_durable(lsn l) {
  std::unique_lock<std::mutex> lk{mtx_};
  durable_cv_.wait(lk, [&] { return durable_ >= l || failure_; });
  if (durable_ >= l)
    return outcome::success();
  return errc::io_failure;
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
  for (auto& p : doomed) {
    std::error_code ec;
    fs::remove(p, ec);
    if (ec)
      return ec;
  }
  return files::sync_dir(log_dir_, sync_);
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
    if (!failure_)
      failure_ = make_error_code(errc::io_failure);
    failed_ = true;
    cb = on_durable_;
    d = durable_;
    err = failure_;
  }
  work_cv_.notify_all();
  durable_cv_.notify_all();
  if (writer_.joinable())
    writer_.join();
  if (cb)
    cb(d, err);
}

void wal::run() {
  std::unique_lock<std::mutex> lk{mtx_};
  for (;;) {
    work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (crashed_ || queue_.empty())
      return;
    std::vector<entry> batch;
    if (opts_.group_commit) {
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.end()));
      queue_.clear();
    } else {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lk.unlock();
    auto r = write_batch(batch);
    lk.lock();
    if (!r) {
      if (!failure_)
        failure_ = r.error();
      failed_ = true;
      durable_cv_.notify_all();
      auto cb = on_durable_;
      auto err = failure_;
      auto d = durable_;
      lk.unlock();
      if (cb)
        cb(d, err);
      return;
    }
    durable_ = batch.back().l;
    stats_.records += batch.size();
    durable_cv_.notify_all();
    auto cb = on_durable_;
    auto d = durable_;
    lk.unlock();
    if (cb)
      cb(d, {});
    lk.lock();
  }
}

result<void> wal::open_segment(lsn first) {
  auto path = log_dir_ / files::lsn_name(segment_prefix, first, segment_suffix);
  int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return files::last_error();
  if (auto s = files::sync_dir(log_dir_, sync_); !s) {
    ::close(fd);
    return s.error();
  }
  fd_ = fd;
  segment_size_ = 0;
  std::lock_guard<std::mutex> guard{mtx_};
  segments_.push_back({path, first});
  return outcome::success();
}

result<void> wal::sync_current() {
  if (sync_(fd_) != 0)
    return files::last_error();
  std::lock_guard<std::mutex> guard{mtx_};
  ++stats_.syncs;
  return outcome::success();
}

result<void> wal::write_batch(std::vector<entry>& batch) {
  std::string buf;
  bool dirty = false;
  auto flush = [&]() -> result<void> {
    if (buf.empty())
      return outcome::success();
    if (auto w = files::write_all(fd_, buf); !w)
      return w.error();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stats_.bytes += buf.size();
    }
    buf.clear();
    dirty = true;
    return outcome::success();
  };
  for (auto& e : batch) {
    if (fd_ < 0 || e.roll_before || segment_size_ >= opts_.segment_bytes) {
      if (auto f = flush(); !f)
        return f.error();
      if (fd_ >= 0) {
        if (dirty)
          if (auto s = sync_current(); !s)
            return s.error();
        ::close(fd_);
        fd_ = -1;
        dirty = false;
      }
      if (auto o = open_segment(e.l); !o)
        return o.error();
    }
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
