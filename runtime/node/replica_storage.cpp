#include "runtime/node/replica_storage.hpp"

#include "storage/file_term_file.hpp"
#include "storage/wal_log_device.hpp"

#include <filesystem>

namespace conclave::node {

namespace fs = std::filesystem;

result<replica_storage> open_replica_storage(const std::string& data_dir) {
  auto dir = fs::path{data_dir} / "replica";
  storage::replica_log_options opts;
  opts.dir = dir;
  store::wal_recovery report;
  auto device = storage::wal_log_device::open(opts, report);
  if (!device)
    return "replica log in " + (dir / "log").string() + ": "
           + (report.problem.empty() ? device.error().message() : report.problem);
  // A replica saves its promised term before it logs anything of that term:
  // a log or checkpoint without a term file means the file was lost, and
  // reading it as term zero would let the replica vote or accept again in a
  // term it already left. Refuse; the log stays as it is.
  std::error_code ec;
  auto term_path = dir / "term";
  bool has_state = report.records > 0 || report.last.value > 0
                   || (fs::is_directory(dir / "checkpoints", ec)
                       && !fs::is_empty(dir / "checkpoints", ec));
  if (has_state && !fs::exists(term_path, ec))
    return "replica term file " + term_path.string()
           + " is missing beside a log that holds records: the replica's promised "
             "term is unknown, so it will not start (restore the file from a "
             "backup of this data dir; the log is left as it is)";
  auto terms = storage::open_term_file(dir);
  if (!terms)
    return "replica term file in " + dir.string() + ": " + terms.error().message();
  replica_storage s;
  s.device = std::move(device.value());
  s.terms = std::move(terms.value());
  s.durable = true;
  if (report.tail_cut)
    s.recovery_note = "cut a torn tail of " + std::to_string(report.cut_bytes)
                      + " byte(s) off the replica log (" + report.cut_reason
                      + "); moved aside, not deleted";
  return s;
}

} // namespace conclave::node
