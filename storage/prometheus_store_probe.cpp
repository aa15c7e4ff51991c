#include "storage/prometheus_store_probe.hpp"

namespace conclave::store {

namespace {

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

prometheus::Counter& counter(prometheus::Registry& r, const char* name, const char* help,
                             const prometheus::Labels& labels = {}) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(labels);
}

prometheus::Gauge& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

} // namespace

prometheus_store_probe::prometheus_store_probe(
    std::shared_ptr<prometheus::Registry> registry)
    : registry_(registry ? std::move(registry)
                         : std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  commits_ = &counter(r, "conclave_store_commits_total",
                      "Transactions committed that changed something");
  commit_seconds_ = &prometheus::BuildHistogram()
                         .Name("conclave_store_commit_duration_seconds")
                         .Help("From commit to durable (strong mode) or applied (weak)")
                         .Register(r)
                         .Add({}, prometheus::Histogram::BucketBoundaries{
                                      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                      0.025, 0.05, 0.1, 0.25, 1});
  aborts_ = &counter(r, "conclave_store_aborts_total", "Transactions aborted");
  lock_waits_ =
      &counter(r, "conclave_store_lock_waits_total", "Operations that waited for a lock");
  lock_timeouts_ = &counter(r, "conclave_store_lock_timeouts_total",
                            "Lock waits that reached their timeout");
  log_bytes_ = &counter(r, "conclave_store_log_bytes_total", "Bytes appended to the log");
  log_syncs_ =
      &counter(r, "conclave_store_log_syncs_total", "fdatasync calls of the log");
  checkpoints_ = &counter(r, "conclave_store_checkpoints_total", "Checkpoints written");
  checkpoint_failures_ =
      &counter(r, "conclave_store_checkpoint_failures_total",
               "Checkpoint writes that failed (the log was kept; retried later)");
  checkpoint_seconds_ = &prometheus::BuildHistogram()
                             .Name("conclave_store_checkpoint_duration_seconds")
                             .Help("Time to encode, write and sync a checkpoint")
                             .Register(r)
                             .Add({}, prometheus::Histogram::BucketBoundaries{
                                          0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30});
  checkpoint_bytes_ =
      &gauge(r, "conclave_store_checkpoint_bytes", "Size of the last checkpoint");
  recovery_seconds_ = &gauge(r, "conclave_store_recovery_duration_seconds",
                             "Time the last open spent recovering");
  recovered_records_ = &gauge(r, "conclave_store_recovered_records",
                              "Log records replayed by the last open");
  auto& corrupt = prometheus::BuildCounter()
                      .Name("conclave_store_corruptions_total")
                      .Help("Corrupt data found by recovery: a cut log tail or a "
                            "skipped checkpoint")
                      .Register(r);
  corrupt_log_tail_ = &corrupt.Add({{"what", "log_tail"}});
  corrupt_checkpoint_ = &corrupt.Add({{"what", "checkpoint"}});
  failed_ = &gauge(r, "conclave_store_failed",
                   "1 once a log write or fsync failed and the store stopped");
}

void prometheus_store_probe::committed(std::chrono::nanoseconds latency) {
  commits_->Increment();
  commit_seconds_->Observe(seconds(latency));
}

void prometheus_store_probe::aborted() {
  aborts_->Increment();
}

void prometheus_store_probe::lock_waited() {
  lock_waits_->Increment();
}

void prometheus_store_probe::lock_timed_out() {
  lock_timeouts_->Increment();
}

void prometheus_store_probe::log_bytes(uint64_t n) {
  log_bytes_->Increment(static_cast<double>(n));
}

void prometheus_store_probe::log_synced(uint64_t) {
  log_syncs_->Increment();
}

void prometheus_store_probe::checkpoint_written(std::chrono::nanoseconds d,
                                                uint64_t bytes) {
  checkpoints_->Increment();
  checkpoint_seconds_->Observe(seconds(d));
  checkpoint_bytes_->Set(static_cast<double>(bytes));
}

void prometheus_store_probe::recovered(std::chrono::nanoseconds d, uint64_t records) {
  recovery_seconds_->Set(seconds(d));
  recovered_records_->Set(static_cast<double>(records));
}

void prometheus_store_probe::corruption(std::string_view what) {
  if (what == "checkpoint")
    corrupt_checkpoint_->Increment();
  else
    corrupt_log_tail_->Increment();
}

void prometheus_store_probe::checkpoint_failed() {
  checkpoint_failures_->Increment();
}

void prometheus_store_probe::failed() {
  failed_->Set(1);
}

} // namespace conclave::store
