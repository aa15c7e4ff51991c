#include "runtime/node/replica_storage.hpp"

#include "storage/file_term_file.hpp"
#include "storage/file_util.hpp"
#include "storage/posix_file_system.hpp"
#include "storage/wal_log_device.hpp"

#include <chrono>
#include <filesystem>
#include <optional>

namespace conclave::node {

namespace fs = std::filesystem;

namespace {

constexpr const char* amnesia_mark = "amnesiac";

/// Moves every entry of `dir` but the term file, the lock, the mark and
/// earlier damaged-* directories into a new dir/damaged-<ms>/ (`to`); the
/// error, if any.
std::optional<std::string> move_aside(store::file_system& disk, const fs::path& dir,
                                      int64_t ms, fs::path& to) {
  to = dir / ("damaged-" + std::to_string(ms));
  for (int n = 1; store::files::value_or(disk.exists(to), false); ++n)
    to = dir / ("damaged-" + std::to_string(ms) + "." + std::to_string(n));
  if (auto c = disk.create_directories(to); !c)
    return "cannot create " + to.string() + ": " + c.error().message();
  auto names = disk.list_directory(dir);
  if (!names)
    return "cannot read " + dir.string() + ": " + names.error().message();
  for (auto& name : names.value()) {
    if (name == "term" || name == "LOCK" || name == amnesia_mark
        || name.rfind("damaged-", 0) == 0)
      continue;
    if (auto r = disk.rename(dir / name, to / name); !r)
      return "cannot move " + (dir / name).string() + " to " + to.string() + ": "
             + r.error().message();
  }
  if (!disk.sync_directory(to) || !disk.sync_directory(dir))
    return "cannot sync " + dir.string();
  return std::nullopt;
}

} // namespace

damaged_open_verdict decide_damaged_open(const damaged_open_facts& f) {
  if (!f.damaged)
    return damaged_open_verdict::not_damaged;
  // Nobody else holds what this replica acknowledged: its damaged log is the
  // only copy, and only an operator may accept the loss (store repair).
  if (f.members <= 1)
    return damaged_open_verdict::refuse_single_replica;
  // Without the promised term the replica could promise a term twice; the
  // amnesia rule protects the log, not the term.
  if (!f.term_present || !f.term_reads)
    return damaged_open_verdict::refuse_term_unknown;
  return damaged_open_verdict::heal;
}

result<replica_storage> open_replica_storage(const std::string& data_dir,
                                             size_t members) {
  replica_storage_options o;
  o.data_dir = data_dir;
  o.members = members;
  return open_replica_storage(o);
}

result<replica_storage> open_replica_storage(const replica_storage_options& o) {
  auto disk_ptr = o.fs ? o.fs : store::default_file_system();
  auto& disk = *disk_ptr;
  auto exists = [&](const fs::path& p) {
    return store::files::value_or(disk.exists(p), false);
  };
  auto dir = fs::path{o.data_dir} / "replica";
  auto mark = dir / amnesia_mark;
  storage::replica_log_options opts;
  opts.dir = dir;
  opts.fs = disk_ptr;
  opts.writer_thread = o.writer_thread;
  if (o.preallocate_bytes > 0)
    opts.preallocate_bytes = o.preallocate_bytes;
  store::wal_recovery report;
  auto device = storage::wal_log_device::open(opts, report);
  std::string healing_note;
  auto term_path = dir / "term";
  damaged_open_facts facts;
  facts.damaged = !device && !report.problem.empty();
  facts.members = o.members;
  facts.term_present = facts.damaged && exists(term_path);
  facts.term_reads =
      facts.term_present && storage::open_term_file(dir, disk_ptr).has_value();
  auto verdict = decide_damaged_open(facts);
  if (verdict == damaged_open_verdict::refuse_term_unknown)
    return "replica log in " + (dir / "log").string() + ": " + report.problem
           + " (not rebuilt from the other members: the term file " + term_path.string()
           + (facts.term_present ? " does not read" : " is missing")
           + ", so the replica's promised term is unknown; the log is left as it is)";
  if (verdict == damaged_open_verdict::heal) {
    // A damaged log or checkpoint, a term file that reads, and peers that hold
    // what this replica acknowledged: move the damaged files aside (never
    // delete them), mark the replica amnesiac (durably, before anything
    // moves), and rebuild from the peers (replica_core.hpp, "Amnesia").
    if (!store::files::write_file_synced(disk, mark, report.problem + "\n")
        || !disk.sync_directory(dir))
      return "replica log in " + (dir / "log").string() + ": " + report.problem
             + " (and the amnesia mark " + mark.string()
             + " could not be written, so the damaged files stay in place)";
    fs::path aside;
    auto ms = o.now_ms ? o.now_ms()
                       : std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    if (auto failed = move_aside(disk, dir, ms, aside))
      return "replica log in " + (dir / "log").string() + ": " + report.problem + " ("
             + *failed + ")";
    healing_note = "the replica log was damaged (" + report.problem
                   + "); moved it aside to " + aside.string()
                   + " and rejoining from the other members";
    report = store::wal_recovery{};
    device = storage::wal_log_device::open(opts, report);
  }
  if (!device)
    return "replica log in " + (dir / "log").string() + ": "
           + (report.problem.empty() ? device.error().message() : report.problem)
           + (verdict == damaged_open_verdict::refuse_single_replica
                  ? " (a single replica has no peer to rebuild it from: see `conclave "
                    "store check`)"
                  : "");
  bool amnesiac = exists(mark);
  // A replica saves its promised term before it logs anything of that term:
  // a log or checkpoint without a term file means the file was lost, and
  // reading it as term zero would let the replica vote or accept again in a
  // term it already left. Refuse; the log stays as it is.
  bool has_state = report.records > 0 || report.last.value > 0
                   || !store::files::value_or(disk.list_directory(dir / "checkpoints"),
                                              std::vector<std::string>{})
                           .empty();
  if ((has_state || amnesiac) && !exists(term_path))
    return "replica term file " + term_path.string()
           + " is missing beside a log that holds records: the replica's promised "
             "term is unknown, so it will not start (restore the file from a "
             "backup of this data dir; the log is left as it is)";
  auto terms = storage::open_term_file(dir, disk_ptr);
  if (!terms)
    return "replica term file in " + dir.string() + ": " + terms.error().message();
  replica_storage s;
  s.device = std::move(device.value());
  s.terms = std::move(terms.value());
  s.durable = true;
  s.amnesiac = amnesiac;
  if (amnesiac) {
    s.healed = [mark, dir, disk_ptr] {
      (void)disk_ptr->remove(mark);
      (void)disk_ptr->sync_directory(dir);
    };
    if (healing_note.empty())
      healing_note = "the replica is still rebuilding its log from the other members "
                     "(it lost it before the last stop; "
                     + mark.string() + ")";
  }
  s.recovery_note = healing_note;
  s.moved_damaged_aside = verdict == damaged_open_verdict::heal;
  s.cut_torn_tail = report.tail_cut;
  if (report.tail_cut) {
    if (!s.recovery_note.empty())
      s.recovery_note += "; ";
    s.recovery_note += "cut a torn tail of " + std::to_string(report.cut_bytes)
                       + " byte(s) off the replica log (" + report.cut_reason
                       + "); moved aside, not deleted";
  }
  return s;
}

} // namespace conclave::node
