// Reading a log directory without changing it: the segments in lsn order,
// the records recovery needs, and every stretch of bytes that holds no valid
// record, classified by what recovery may do about it. The write-ahead log's
// recovery (wal::open) acts on this scan; `conclave store check` only reports
// it. docs/design/store.md, "Recovery", states the same rules for operators.
//
// Rules (`base` is the lsn the loaded checkpoint covers; 0 without one)
// - Records with lsn <= base are covered: not needed. A segment whose
//   successor's name is <= base + 1 holds only covered records and is not read
//   at all unless the caller asks (store check does). Damage among covered
//   records, or covered records missing, loses nothing and stops nothing.
// - The needed records (lsn > base) must follow base densely: base + 1,
//   base + 2, ... Each is handed to `each` in order.
// - Damage is a stretch of bytes that does not decode as a record (torn,
//   checksum or format failure, out-of-order lsn, first record not matching
//   the file name). Zero bytes that run to the end of a segment are not
//   damage: they are the unwritten part of a preallocated segment, a clean
//   end of that segment.
// - Damage with no valid record after it, in its segment or any later one, is
//   a torn tail: recovery cuts it (and moves the bytes aside).
// - A torn last write: damage where the next needed lsn is E (E itself not
//   found), followed only by valid records with lsn > E whose batch_first
//   (log_record.hpp: the first lsn of the write() that wrote them) is <= E,
//   i.e. records of the same write as E.
//   The log writes nothing after a write until that write's sync succeeded,
//   and acknowledges nothing of it before, so none of these records was
//   acknowledged: this is a torn tail too, cut with those records.
// - Rot, not a torn write: tail damage that is one flipped bit away from a
//   valid frame of the next needed record. A crash tears a write at a byte or
//   sector, leaving zeros or garbage; it does not leave a complete frame that
//   a single bit spoils. That record was written and may have been synced and
//   acknowledged, so cutting it could lose an acknowledged write: this is
//   corruption, recovery refuses (`fatal`), and a repair keeps the log up to
//   it. (Damage of several bits in the last write cannot be told from a torn
//   write and is cut as one.) Only frames of up to 4 KiB are tried.
// - Damage followed by a valid needed record of a later write (or of unknown
//   write: a frame without batch_first), or a needed record missing
//   while a later one is present, is corruption in the middle: recovery
//   refuses to open (`fatal`). `repair` (an operator's explicit decision)
//   keeps the log up to `keep_end` and moves the rest aside.
// - If what recovery keeps ends at offset 0 of a segment right after a
//   skipped one, that skipped segment becomes the last one: it is read too,
//   and damage in its tail moves the end (bad_offset or keep_end) to the end
//   of its valid records, so that the next open finds nothing more to cut.
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/log_record.hpp"
#include "storage/api/file_system.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::store {

struct segment_scan {
  std::filesystem::path path;
  /// The lsn in the file name.
  lsn named;
  uint64_t bytes = 0;
  /// Bytes up to the end of the last valid record of this segment.
  uint64_t valid_bytes = 0;
  uint64_t records = 0;
  lsn first, last;
  /// Holds only covered records (by the name of the next segment): not read.
  bool skipped = false;
  /// Zero bytes at the end of the segment, after its last record or damage.
  uint64_t zero_tail = 0;
};

/// A stretch of a segment that holds no valid record.
struct log_damage {
  enum class kind {
    /// Only records the checkpoint covers are lost: harmless.
    covered,
    /// Valid needed records follow: recovery refuses.
    middle,
    /// Nothing valid follows: recovery cuts it.
    tail,
  };
  kind what = kind::tail;
  size_t segment = 0;
  uint64_t offset = 0;
  /// Damaged bytes from `offset` (zero bytes running to the segment's end are
  /// not counted).
  uint64_t bytes = 0;
  /// "corrupt record (checksum or format) in seg-....wal at byte 123".
  std::string reason;
  /// One flipped bit away from a valid frame of the next needed record
  /// (`rot_lsn`): rot of a written record, not a torn write.
  bool rot = false;
  lsn rot_lsn;
};

/// A point in the log: segment index and byte offset.
struct log_position {
  size_t segment = 0;
  uint64_t offset = 0;
};

struct log_scan {
  std::vector<segment_scan> segments;
  /// The lsn the caller's state covers.
  lsn base;
  /// Valid records read (covered ones included, skipped segments excluded).
  lsn first, last;
  uint64_t records = 0;
  /// The last needed record handed to `each` (base if none).
  lsn needed_last;

  std::vector<log_damage> damage;
  /// Covered records that are missing (deleted covered segments): harmless.
  std::vector<std::string> covered_gaps;

  /// A torn tail exists: the first tail damage, and the bytes recovery cuts
  /// (tail damage in all segments).
  bool ends_early = false;
  size_t bad_segment = 0;
  uint64_t bad_offset = 0;
  std::string reason;
  uint64_t bytes_after_end = 0;
  /// Valid records inside the torn tail: after its first damage, written by
  /// the same write() as the next needed record (same batch_first), never
  /// synced, so never acknowledged. Cut with the tail (counted in
  /// bytes_after_end).
  uint64_t torn_write_records = 0;

  /// Corruption in the middle: recovery refuses. `problem` names the file and
  /// byte offset of the first one.
  bool fatal = false;
  std::string problem;
  /// What a repair keeps: everything before this position. Valid records and
  /// bytes after it are what the repair drops.
  log_position keep_end;
  uint64_t drop_bytes = 0;
  uint64_t drop_records = 0;
  lsn drop_first, drop_last;
};

struct log_scan_options {
  /// Records <= base are covered.
  lsn base;
  /// Read segments that hold only covered records too (store check).
  bool read_covered = false;
};

/// Called for each needed record, in lsn order, with its frame's bytes.
using log_scan_fn =
    std::function<result<void>(const log_record&, std::string_view frame)>;

/// Scans dir/"log" (an absent directory is an empty log). An error from
/// `each` or a failed read stops the scan and is returned (a read error is
/// never taken for damage).
result<log_scan> scan_log(file_system& files, const std::filesystem::path& dir,
                          const log_scan_options& opts, const log_scan_fn& each);

/// The same on the disk.
result<log_scan> scan_log(const std::filesystem::path& dir, const log_scan_options& opts,
                          const log_scan_fn& each);

/// True if every byte of `bytes` is zero.
bool all_zero(std::string_view bytes);

/// The offset just past record `at` in one segment's bytes (`named`: the lsn
/// in the segment's name), reading past stretches that do not decode as the
/// scan does (damage among covered records stops nothing); npos if the
/// segment does not hold `at`.
size_t record_end(std::string_view bytes, lsn named, lsn at);

} // namespace conclave::store
