#include "storage/api/memory_log_device.hpp"

#include <algorithm>

namespace conclave::store {

result<void> memory_log_device::append(const log_record& r) {
  if (failing_)
    return errc::io_failure;
  frames_.emplace_back(r.lsn, encode_record(r));
  appended_ = r.lsn;
  return outcome::success();
}

void memory_log_device::sync(sync_callback done) {
  ++syncs_;
  held_.push_back(held_sync{appended_, std::move(done), syncs_, lsn{}});
  if (auto_sync_)
    release_syncs();
}

void memory_log_device::release_syncs() {
  auto held = std::move(held_);
  held_.clear();
  for (auto& h : held) {
    if (failing_) {
      h.done(errc::io_failure);
      continue;
    }
    if (before_) {
      if (h.seq > staged_seq_)
        before_.reset(); // the staged checkpoint or install is durable now
      else if (before_->durable < h.pre_upto)
        before_->durable = h.pre_upto; // a sync from before the checkpoint
    }
    if (durable_ < h.upto)
      durable_ = h.upto;
    h.done(h.upto);
  }
}

void memory_log_device::stage() {
  if (!gated_ || before_)
    return;
  before_ = durable_view{checkpoint_, checkpoint_lsn_, frames_, durable_};
  staged_seq_ = syncs_;
  for (auto& h : held_)
    h.pre_upto = h.upto;
}

void memory_log_device::crash() {
  held_.clear();
  if (before_) {
    checkpoint_ = std::move(before_->checkpoint);
    checkpoint_lsn_ = before_->checkpoint_lsn;
    frames_ = std::move(before_->frames);
    durable_ = before_->durable;
    before_.reset();
  }
  while (!frames_.empty() && frames_.back().first > durable_)
    frames_.pop_back();
  appended_ = durable_;
}

result<void> memory_log_device::truncate_after(lsn at) {
  if (failing_)
    return errc::io_failure;
  if (at < checkpoint_lsn_)
    return errc::bad_argument;
  while (!frames_.empty() && frames_.back().first > at)
    frames_.pop_back();
  if (appended_ > at)
    appended_ = at;
  if (durable_ > at)
    durable_ = at;
  // A held sync must not report the records that later replace these.
  for (auto& h : held_)
    if (h.upto > at)
      h.upto = at;
  return outcome::success();
}

result<void> memory_log_device::checkpoint(std::string image, lsn at) {
  if (failing_)
    return errc::io_failure;
  if (at > durable_ || at < checkpoint_lsn_)
    return errc::bad_argument; // never checkpoint what is not durable
  stage();
  checkpoint_ = std::move(image);
  checkpoint_lsn_ = at;
  while (!frames_.empty() && frames_.front().first <= at)
    frames_.pop_front();
  return outcome::success();
}

result<void> memory_log_device::install_snapshot(std::string image, lsn at) {
  if (failing_)
    return errc::io_failure;
  stage();
  checkpoint_ = std::move(image);
  checkpoint_lsn_ = at;
  frames_.clear();
  appended_ = durable_ = at;
  for (auto& h : held_)
    h.upto = std::min(h.upto, at);
  return outcome::success();
}

result<log_device::recovered> memory_log_device::recover() {
  recovered out;
  out.checkpoint = checkpoint_;
  for (auto& [l, frame] : frames_) {
    if (l > durable_)
      break;
    auto d = decode_record(frame);
    if (d.status != decode_status::ok)
      return errc::corrupt_data;
    out.records.push_back(std::move(d.record));
  }
  return out;
}

} // namespace conclave::store
