#include "actors/store/memory_log_device.hpp"

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
  held_.emplace_back(appended_, std::move(done));
  if (auto_sync_)
    release_syncs();
}

void memory_log_device::release_syncs() {
  auto held = std::move(held_);
  held_.clear();
  for (auto& [upto, done] : held) {
    if (failing_) {
      done(errc::io_failure);
      continue;
    }
    if (durable_ < upto)
      durable_ = upto;
    done(upto);
  }
}

void memory_log_device::crash() {
  held_.clear();
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
    if (h.first > at)
      h.first = at;
  return outcome::success();
}

result<void> memory_log_device::checkpoint(std::string image, lsn at) {
  if (failing_)
    return errc::io_failure;
  if (at > durable_)
    return errc::bad_argument; // never checkpoint what is not durable
  checkpoint_ = std::move(image);
  checkpoint_lsn_ = at;
  while (!frames_.empty() && frames_.front().first <= at)
    frames_.pop_front();
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
