// Reading a log directory without changing it: the segments in lsn order,
// every valid record, and where (if anywhere) the valid log ends early. The
// write-ahead log's recovery (wal::open) acts on this scan by cutting the
// invalid tail; `conclave store check` only reports it.
//
// The log ends at the first record that is incomplete (torn write), fails its
// CRC or parse, breaks the lsn sequence, or does not match its segment's name.
// Empty segment files (created just before a crash) are listed with 0 records.
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/log_record.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace conclave::store {

struct segment_scan {
  std::filesystem::path path;
  /// The lsn in the file name.
  lsn named;
  uint64_t bytes = 0;
  /// Bytes up to the end of the last valid record (== bytes unless the log
  /// ends early in this segment).
  uint64_t valid_bytes = 0;
  uint64_t records = 0;
  lsn first, last;
};

struct log_scan {
  std::vector<segment_scan> segments;
  lsn first, last;
  uint64_t records = 0;
  /// The valid log ends early: in segments[bad_segment] at bad_offset.
  bool ends_early = false;
  size_t bad_segment = 0;
  uint64_t bad_offset = 0;
  /// Why, and how many bytes lie after the end (this segment and later ones).
  std::string reason;
  uint64_t bytes_after_end = 0;
};

/// Scans dir/"log" (an absent directory is an empty log). `each` sees every
/// valid record in order; an error from it stops the scan and is returned.
result<log_scan> scan_log(const std::filesystem::path& dir,
                          const std::function<result<void>(const log_record&)>& each);

} // namespace conclave::store
