#include "storage/state_manager.hpp"

#include "storage/backup.hpp"
#include "storage/checkpoint_file.hpp"
#include "storage/file_util.hpp"
#include "storage/wal.hpp"

#include <future>
#include <iostream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace conclave::store {

namespace fs = std::filesystem;
using std::chrono::steady_clock;

namespace {

std::chrono::nanoseconds since(steady_clock::time_point t) {
  return steady_clock::now() - t;
}

/// One step of a checkpoint's encoding (take_checkpoint).
constexpr size_t checkpoint_step_items = 1024;
constexpr size_t checkpoint_step_bytes = 256u << 10;

} // namespace

state_manager::state_manager(state_manager_options opts)
    : opts_(std::move(opts)), probe_(opts_.probe ? opts_.probe : &null_store_probe()),
      core_(opts_.limits) {
  if (!opts_.log)
    opts_.log = [](const std::string& line) { std::cerr << line << '\n'; };
}

result<std::unique_ptr<state_manager>> state_manager::open(state_manager_options opts) {
  if (opts.dir.empty())
    return errc::bad_argument;
  std::unique_ptr<state_manager> sm{new state_manager(std::move(opts))};
  if (auto r = sm->recover(); !r)
    return r.error();
  sm->timer_ = std::thread{[p = sm.get()] { p->timer_loop(); }};
  sm->checkpointer_ = std::thread{[p = sm.get()] { p->checkpoint_loop(); }};
  return sm;
}

state_manager::~state_manager() {
  std::vector<completion> out;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
    for (auto& [id, p] : parked_) {
      auto cb = std::move(p.cb);
      out.emplace_back([cb] { cb(errc::store_failed); });
    }
    parked_.clear();
  }
  timer_cv_.notify_all();
  checkpoint_cv_.notify_all();
  if (timer_.joinable())
    timer_.join();
  if (checkpointer_.joinable())
    checkpointer_.join();
  for (auto& f : out)
    f();
  // Flushes and syncs what was appended; commit callbacks still waiting run
  // from the log's writer thread before it stops.
  wal_.reset();
  std::multimap<uint64_t, commit_waiter> left;
  {
    std::lock_guard<std::mutex> guard{durable_mtx_};
    left.swap(commit_waiters_);
  }
  for (auto& [l, w] : left)
    w.cb(errc::store_failed);
  if (lock_fd_ >= 0)
    ::close(lock_fd_); // releases the flock
}

void state_manager::report(const std::string& line) const {
  opts_.log("store " + opts_.dir.string() + ": " + line);
}

timestamp state_manager::steady_now() {
  return std::chrono::duration_cast<timestamp>(steady_clock::now().time_since_epoch());
}

timestamp state_manager::now() const {
  return opts_.clock ? opts_.clock() : steady_now();
}

void state_manager::clock_advanced() {
  // Under the lock: the timer thread reads the clock and starts waiting
  // without releasing it, so this cannot fall in between.
  std::lock_guard<std::mutex> guard{mtx_};
  timer_cv_.notify_all();
}

timestamp state_manager::deadline_in(std::chrono::milliseconds timeout) const {
  if (timeout.count() < 0)
    timeout = opts_.default_timeout;
  // Saturate: milliseconds::max() does not even fit in nanoseconds, and
  // now + 300 years would wrap around to the past.
  auto t = now();
  auto room = std::chrono::duration_cast<std::chrono::milliseconds>(timestamp::max() - t);
  if (timeout >= room)
    return timestamp::max();
  return t + timeout;
}

result<void> state_manager::check_running() {
  // The log may have failed a moment ago on its writer thread, before its
  // callback reached durable().
  if (!failure_ && wal_ && wal_->failed())
    failure_ = wal_->failure();
  if (stopping_ || failure_)
    return errc::store_failed;
  return outcome::success();
}

std::error_code state_manager::failure() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return failure_;
}

lsn state_manager::last_lsn() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return core_.last_lsn();
}

lsn state_manager::durable_lsn() const {
  return wal_->durable_lsn();
}

state_manager::stats state_manager::get_stats() const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto s = stats_;
  auto w = wal_->get_stats();
  s.log_bytes = w.bytes;
  s.log_records = w.records;
  s.log_syncs = w.syncs;
  s.active_transactions = core_.active_transactions();
  return s;
}

// -- recovery -------------------------------------------------------------------

result<void> state_manager::recover() {
  auto started = steady_clock::now();
  std::error_code ec;
  fs::create_directories(opts_.dir, ec);
  if (ec) {
    report("cannot create the data directory: " + ec.message());
    return errc::io_failure;
  }
  // One store per data directory: two would interleave their logs.
  lock_fd_ = ::open((opts_.dir / "LOCK").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    report("cannot open the lock file: " + files::last_error().message());
    return errc::io_failure;
  }
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    report("the data directory is in use by another store");
    return errc::directory_in_use;
  }
  std::vector<fs::path> corrupt;
  for (auto& file : list_checkpoints(opts_.dir)) {
    auto image = read_checkpoint(file);
    if (!image && image.error() != make_error_code(errc::corrupt_data)) {
      // A read error proves nothing about the file: never set it aside, and
      // never fall back past it (the next checkpoints would then delete the
      // older one while this one may be fine once readable).
      report("cannot read checkpoint " + file.string() + ": " + image.error().message()
             + "; fix the file's access and reopen");
      return image.error();
    }
    if (image && core_.load_checkpoint(image.value().image)) {
      recovery_.checkpoint = core_.last_lsn();
      break;
    }
    recovery_.corrupt_checkpoints.push_back(file.filename().string());
    corrupt.push_back(file);
  }
  wal_options wo;
  wo.dir = opts_.dir;
  wo.segment_bytes = opts_.segment_bytes;
  wo.preallocate_bytes = opts_.preallocate_bytes;
  wo.group_commit = opts_.group_commit;
  if (opts_.sync)
    wo.sync = opts_.sync;
  wo.repair = opts_.repair;
  wal_recovery found;
  auto replay = [this](const log_record& r) -> result<void> { return core_.apply(r); };
  auto w = wal::open(wo, core_.last_lsn(), replay, found);
  if (!w) {
    if (!found.problem.empty())
      report("the log is corrupt before its end: " + found.problem
             + "; nothing was changed. `conclave store repair --dir " + opts_.dir.string()
             + "` cuts the log there, keeping a copy of what it drops");
    else
      report(
          "cannot recover the log after lsn " + to_string(core_.last_lsn()) + ": "
          + w.error().message()
          + (recovery_.corrupt_checkpoints.empty() ? "" : " (a checkpoint was corrupt)"));
    return w.error();
  }
  // Set aside (kept for inspection) once the open succeeds, so that a corrupt
  // checkpoint never counts as one of the two kept and the fallback one is not
  // deleted next time.
  for (auto& file : corrupt) {
    auto aside = file;
    aside += ".corrupt";
    fs::rename(file, aside, ec);
    report("checkpoint " + file.filename().string() + " is corrupt (moved to "
           + aside.filename().string() + "); falling back to the previous one");
    probe_->corruption("checkpoint");
  }
  for (auto& d : found.covered_damage)
    report("damage among records the checkpoint covers (harmless): " + d);
  wal_ = std::move(w.value());
  last_synced_ = core_.last_lsn().value;
  previous_checkpoint_ = recovery_.checkpoint;
  wal_->on_durable([this](lsn upto, std::error_code err) { durable(upto, err); });
  recovery_.records_replayed = found.records;
  recovery_.last = core_.last_lsn();
  recovery_.tail_cut = found.tail_cut;
  recovery_.cut_bytes = found.cut_bytes;
  recovery_.cut_reason = found.cut_reason;
  recovery_.moved_to = found.moved_to;
  recovery_.problem = found.problem;
  recovery_.dropped_records = found.dropped_records;
  recovery_.dropped_first = found.dropped_first;
  recovery_.dropped_last = found.dropped_last;
  if (found.tail_cut) {
    std::string where;
    for (auto& p : found.moved_to)
      where += (where.empty() ? "; moved to " : ", ") + p.string();
    report("log " + std::string{opts_.repair ? "repaired: cut" : "tail cut"}
           + " after lsn " + to_string(core_.last_lsn()) + " ("
           + std::to_string(found.cut_bytes) + " bytes): " + found.cut_reason + where);
    probe_->corruption("log_tail");
  }
  recovery_.duration = since(started);
  probe_->recovered(recovery_.duration, found.records);
  return outcome::success();
}

// -- collections and transactions -------------------------------------------------

result<collection_info> state_manager::ensure_collection(const std::string& name,
                                                         collection_kind kind,
                                                         const std::string& key_type,
                                                         const std::string& value_type) {
  lsn created;
  collection_info info;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (auto r = check_running(); !r)
      return r.error();
    auto r = core_.ensure_collection(name, kind, key_type, value_type);
    if (!r)
      return r.error();
    if (r.value()) {
      auto& rec = *r.value();
      created = rec.lsn;
      auto frame = encode_record(rec);
      log_bytes_since_checkpoint_ += frame.size();
      probe_->log_bytes(frame.size());
      if (auto a = wal_->append(rec.lsn, std::move(frame), true); !a)
        return a.error();
    }
    info = *core_.find_collection(name);
  }
  // A collection exists once its creation is durable, in either mode.
  if (created.value != 0)
    if (auto d = wal_->wait_durable(created); !d)
      return d.error();
  return info;
}

std::vector<collection_info> state_manager::collections() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return core_.collections();
}

result<txn_id> state_manager::begin_txn() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto r = check_running(); !r)
    return r.error();
  return core_.begin();
}

result<op_result> state_manager::execute(const op_request& req,
                                         std::chrono::milliseconds timeout) {
  // Most operations complete at once; a promise is made only for a wait.
  std::optional<std::promise<result<op_result>>> done;
  auto make_callback = [&done]() -> op_callback {
    done.emplace();
    return [&done](result<op_result> r) { done->set_value(std::move(r)); };
  };
  if (auto now = run_or_park(op_request{req}, timeout, make_callback))
    return std::move(*now);
  return done->get_future().get();
}

void state_manager::execute_async(op_request req, std::chrono::milliseconds timeout,
                                  op_callback cb) {
  auto now = run_or_park(std::move(req), timeout, [&cb] { return std::move(cb); });
  if (now)
    cb(std::move(*now));
}

std::optional<result<op_result>>
state_manager::run_or_park(op_request req, std::chrono::milliseconds timeout,
                           const std::function<op_callback()>& make_callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto r = check_running(); !r)
    return std::optional<result<op_result>>{std::in_place, r.error()};
  auto deadline = deadline_in(timeout);
  auto res = core_.execute(req, deadline);
  if (!res || !res.value().waiting)
    return res;
  ++stats_.lock_waits;
  probe_->lock_waited();
  parked_[req.txn.value] = parked{std::move(req), deadline, make_callback()};
  timer_cv_.notify_all(); // maybe an earlier deadline
  return std::nullopt;
}

void state_manager::wake(std::vector<completion>& out) {
  for (auto t : core_.take_woken()) {
    auto p = parked_.find(t.value);
    if (p == parked_.end())
      continue;
    auto res = core_.execute(p->second.req, p->second.deadline);
    if (res && res.value().waiting)
      continue; // granted one lock, waits for the next (queues)
    auto cb = std::move(p->second.cb);
    parked_.erase(p);
    out.emplace_back(
        [cb = std::move(cb), res = std::move(res)]() mutable { cb(std::move(res)); });
  }
}

void state_manager::fail_parked(txn_id txn, errc why, std::vector<completion>& out) {
  auto p = parked_.find(txn.value);
  if (p == parked_.end())
    return;
  auto cb = std::move(p->second.cb);
  parked_.erase(p);
  out.emplace_back([cb = std::move(cb), why] { cb(why); });
}

result<lsn> state_manager::commit_locked(txn_id txn, std::vector<completion>& out,
                                         commit_callback* cb, lsn& wait_for,
                                         bool caller_waits) {
  if (auto r = check_running(); !r)
    return r.error();
  auto observed = core_.observed_through(txn);
  auto rec = core_.commit(txn);
  if (!rec)
    return rec.error();
  auto& r = rec.value();
  wake(out);
  ++stats_.commits;
  if (r.lsn.value == 0) {
    // Read-only. Its reads may have seen commits that are applied but not
    // durable yet (locks are released early): acknowledging it before they
    // are would let a crash take back what it returned.
    if (!opts_.strong || observed.value == 0)
      return lsn{};
    std::lock_guard<std::mutex> guard{durable_mtx_};
    // The log sets its durable lsn (or failure) before it calls durable(),
    // which takes durable_mtx_: a waiter added here cannot miss its wake-up.
    if (wal_->failed())
      return errc::io_failure;
    if (wal_->durable_lsn() >= observed)
      return lsn{};
    wait_for = observed;
    if (cb)
      commit_waiters_.emplace(observed.value,
                              commit_waiter{std::move(*cb), steady_clock::now(), true});
    return lsn{};
  }
  auto frame = encode_record(r);
  auto size = frame.size();
  if (cb) {
    std::lock_guard<std::mutex> guard{durable_mtx_};
    commit_waiters_.emplace(r.lsn.value,
                            commit_waiter{std::move(*cb), steady_clock::now(), false});
  }
  if (auto a = wal_->append(r.lsn, std::move(frame), caller_waits); !a) {
    // Applied in memory but not logged: the store must stop. The caller
    // reports the failure to its own callback.
    if (cb) {
      std::lock_guard<std::mutex> guard{durable_mtx_};
      for (auto w = commit_waiters_.lower_bound(r.lsn.value);
           w != commit_waiters_.end() && w->first == r.lsn.value; ++w)
        if (!w->second.read_only) {
          *cb = std::move(w->second.cb);
          commit_waiters_.erase(w);
          break;
        }
    }
    failure_ = a.error();
    report("log append failed: " + a.error().message() + "; the store stopped");
    probe_->failed();
    return a.error();
  }
  probe_->log_bytes(size);
  log_bytes_since_checkpoint_ += size;
  if (opts_.checkpoint_log_bytes > 0
      && log_bytes_since_checkpoint_ >= opts_.checkpoint_log_bytes
      && !checkpoint_wanted_) {
    checkpoint_wanted_ = true;
    checkpoint_cv_.notify_all();
  }
  return r.lsn;
}

result<lsn> state_manager::commit(txn_id txn) {
  auto started = steady_clock::now();
  std::vector<completion> out;
  result<lsn> r = lsn{};
  lsn wait_for;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    // In strong mode this thread waits for the record next, and writes and
    // syncs it itself when no other sync is in flight (wal::wait_durable).
    r = commit_locked(txn, out, nullptr, wait_for, opts_.strong);
  }
  for (auto& f : out)
    f();
  if (r && wait_for.value != 0)
    if (auto d = wal_->wait_durable(wait_for); !d)
      return d.error();
  if (!r || r.value().value == 0)
    return r;
  if (opts_.strong)
    if (auto d = wal_->wait_durable(r.value()); !d)
      return d.error();
  probe_->committed(since(started));
  return r;
}

void state_manager::commit_async(txn_id txn, commit_callback cb) {
  auto started = steady_clock::now();
  std::vector<completion> out;
  result<lsn> r = lsn{};
  bool deferred = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    // In strong mode the callback waits for the log writer (durable()).
    auto* pending = opts_.strong ? &cb : nullptr;
    lsn wait_for;
    r = commit_locked(txn, out, pending, wait_for, false);
    deferred = r && opts_.strong && (r.value().value != 0 || wait_for.value != 0);
  }
  for (auto& f : out)
    f();
  if (!deferred) {
    if (r && r.value().value != 0)
      probe_->committed(since(started));
    cb(std::move(r));
  }
}

void state_manager::durable(lsn upto, std::error_code err) {
  if (!err && upto.value > last_synced_) {
    probe_->log_synced(upto.value - last_synced_);
    last_synced_ = upto.value;
  }
  std::vector<std::pair<uint64_t, commit_waiter>> done;
  {
    std::lock_guard<std::mutex> guard{durable_mtx_};
    auto end = err ? commit_waiters_.end() : commit_waiters_.upper_bound(upto.value);
    for (auto i = commit_waiters_.begin(); i != end; ++i)
      done.emplace_back(i->first, std::move(i->second));
    commit_waiters_.erase(commit_waiters_.begin(), end);
  }
  if (err) {
    report("log write or fdatasync failed: " + err.message() + "; the store stopped");
    probe_->failed();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (!failure_)
        failure_ = err;
    }
    checkpoint_cv_.notify_all();
  }
  for (auto& [l, w] : done) {
    if (err) {
      w.cb(errc::io_failure);
    } else if (w.read_only) {
      w.cb(lsn{});
    } else {
      probe_->committed(since(w.started));
      w.cb(lsn{l});
    }
  }
}

result<void> state_manager::abort(txn_id txn) {
  std::vector<completion> out;
  result<void> r = outcome::success();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    fail_parked(txn, errc::transaction_finished, out);
    r = core_.abort(txn);
    if (r) {
      ++stats_.aborts;
      probe_->aborted();
    }
    wake(out);
  }
  for (auto& f : out)
    f();
  return r;
}

// -- maintenance -------------------------------------------------------------------

namespace {

steady_clock::time_point to_time_point(timestamp t) {
  return steady_clock::time_point{std::chrono::duration_cast<steady_clock::duration>(t)};
}

} // namespace

void state_manager::timer_loop() {
  // Only lock deadlines: nothing here touches a file, so a slow disk cannot
  // make a timeout late.
  std::unique_lock<std::mutex> lk{mtx_};
  while (!stopping_) {
    auto next = core_.next_deadline();
    if (next && *next != timestamp::max()) {
      // Relative to the deadline clock, which may be a test's manual one.
      if (auto left = *next - now(); left > timestamp::zero())
        timer_cv_.wait_for(lk, left);
    } else {
      timer_cv_.wait(lk); // none, or only waits without a timeout
    }
    std::vector<completion> out;
    for (auto t : core_.expire(now())) {
      ++stats_.lock_timeouts;
      probe_->lock_timed_out();
      fail_parked(t, errc::lock_timeout, out);
    }
    wake(out);
    if (!out.empty()) {
      lk.unlock();
      for (auto& f : out)
        f();
      lk.lock();
    }
  }
}

void state_manager::checkpoint_loop() {
  std::unique_lock<std::mutex> lk{mtx_};
  while (!stopping_) {
    if (!checkpoint_wanted_ || failure_) {
      checkpoint_cv_.wait(lk);
      continue;
    }
    if (steady_now() < checkpoint_retry_at_) {
      checkpoint_cv_.wait_until(lk, to_time_point(checkpoint_retry_at_));
      continue;
    }
    checkpoint_wanted_ = false;
    lk.unlock();
    (void)take_checkpoint(true); // reports its own failure
    lk.lock();
  }
}

result<lsn> state_manager::checkpoint() {
  return take_checkpoint(false);
}

result<lsn> state_manager::take_checkpoint(bool automatic) {
  std::lock_guard<std::mutex> one_at_a_time{checkpoint_mtx_};
  auto started = steady_clock::now();
  lsn at;
  store_core::checkpoint_encoder encoder;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (auto r = check_running(); !r)
      return r.error();
    // Records after `at` go to a new segment, so the old ones can go.
    if (auto r = wal_->roll(); !r)
      return r.error();
    encoder = core_.begin_checkpoint();
    at = encoder.at();
    log_bytes_since_checkpoint_ = 0;
  }
  // The image of the state at `at` is encoded in steps of at most 1,024 items
  // or 256 KiB, under the lock for each step only: operations and lock
  // timeouts go on in between (one encoding under the lock paused the store
  // for 1.4-1.9 s at 195 MiB; a step takes about 15 ms at most there).
  for (bool done = false; !done;) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (auto r = check_running(); !r) {
        core_.end_checkpoint(encoder);
        return r.error();
      }
      done = core_.encode_step(encoder, checkpoint_step_items, checkpoint_step_bytes);
      if (done)
        core_.end_checkpoint(encoder);
    }
    if (!done)
      std::this_thread::yield(); // let threads waiting for the lock in
  }
  auto image = encoder.take_image();
  // Never checkpoint what is not durable in the log yet.
  if (auto d = wal_->wait_durable(at); !d)
    return d.error();
  auto sync = opts_.checkpoint_sync ? opts_.checkpoint_sync
              : opts_.sync          ? opts_.sync
                                    : std::function<int(int)>{};
  if (auto w = write_checkpoint(opts_.dir, at, image, sync); !w) {
    // Not final: the log still holds everything (nothing was truncated), so
    // the store goes on and a later checkpoint tries again.
    probe_->checkpoint_failed();
    report("writing checkpoint " + to_string(at) + " failed: " + w.error().message()
           + "; the log is kept and the store goes on"
           + (automatic
                  ? "; retrying in "
                        + std::to_string(opts_.checkpoint_retry_delay.count()) + " ms"
                  : ""));
    {
      std::lock_guard<std::mutex> guard{mtx_};
      ++stats_.checkpoint_failures;
      if (automatic) {
        checkpoint_wanted_ = true;
        checkpoint_retry_at_ = steady_now() + opts_.checkpoint_retry_delay;
      }
    }
    return w.error();
  }
  // Keep the log since the previous checkpoint: if this one turns out
  // corrupt, recovery falls back to that one and replays from there.
  if (auto t = wal_->truncate_through(previous_checkpoint_); !t)
    report("log truncation after checkpoint " + to_string(at)
           + " failed: " + t.error().message());
  previous_checkpoint_ = at;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ++stats_.checkpoints;
  }
  probe_->checkpoint_written(since(started), image.size());
  return at;
}

result<backup_info> state_manager::backup(const fs::path& backup_dir, bool incremental) {
  // No checkpoint (and so no log truncation) while the files are copied.
  std::lock_guard<std::mutex> one_at_a_time{checkpoint_mtx_};
  if (auto f = failure(); f)
    return errc::store_failed;
  auto upto = wal_->durable_lsn();
  if (incremental)
    return backup_incremental(opts_.dir, backup_dir, upto);
  return backup_full(opts_.dir, backup_dir, upto);
}

void state_manager::crash_for_testing() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!failure_)
      failure_ = make_error_code(errc::store_failed);
  }
  wal_->crash_for_testing();
}

result<backup_info> state_manager::restore(const fs::path& backup_dir,
                                           const fs::path& new_dir) {
  return restore_backup(backup_dir, new_dir);
}

} // namespace conclave::store
