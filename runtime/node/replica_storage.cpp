#include "runtime/node/replica_storage.hpp"

#include "storage/file_term_file.hpp"
#include "storage/wal_log_device.hpp"

#include <filesystem>

namespace conclave::node {

result<replica_storage> open_replica_storage(const std::string& data_dir) {
  auto dir = std::filesystem::path{data_dir} / "replica";
  storage::replica_log_options opts;
  opts.dir = dir;
  store::wal_recovery report;
  auto device = storage::wal_log_device::open(opts, report);
  if (!device)
    return "replica log in " + (dir / "log").string() + ": "
           + (report.problem.empty() ? device.error().message() : report.problem);
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
