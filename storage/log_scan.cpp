#include "storage/log_scan.hpp"

#include "storage/file_util.hpp"
#include "storage/posix_file_system.hpp"

#include <algorithm>

namespace conclave::store {

namespace fs = std::filesystem;

namespace {

/// The offset of the next valid record at or after `from` whose lsn lies in
/// (after, upper], or npos. The lsn range check before the checksum keeps
/// this linear: a record of this segment has an lsn between the segment's
/// name and name + size / 25 (a frame is at least 25 bytes).
size_t resync(std::string_view bytes, size_t from, uint64_t after, uint64_t upper) {
  for (size_t q = from; q + record_header_size <= bytes.size(); ++q) {
    auto body = store::files::read_le(bytes, q, 4) & ~uint64_t{batch_flag};
    if (body == 0 || body > bytes.size() - q - record_header_size)
      continue;
    auto l = store::files::read_le(bytes, q + 8, 8);
    if (l <= after || l > upper)
      continue;
    if (decode_record(bytes.substr(q)).status == decode_status::ok)
      return q;
  }
  return std::string_view::npos;
}

/// Frames tried for a single flipped bit: at most this many bytes.
constexpr size_t rot_window = 4096;

/// True if flipping one bit of bytes[pos, pos + rot_window) gives a valid
/// frame at `pos` whose lsn is `want`, and a tear cannot explain that bit:
/// a write torn at a byte (or sector) reads as zeros from the tear on, so a
/// frame whose only nonzero byte from the tear on had one bit set (a batch
/// trailer's u64 lsn such as 256 or 280 ends in 01 00 ... 00) differs from
/// its torn copy in one bit. The bit set in the frame and clear in the copy,
/// with the copy zero from that byte to the frame's end, is such a tear.
bool one_bit_from(std::string_view bytes, size_t pos, uint64_t want) {
  auto n = std::min(bytes.size() - pos, rot_window);
  std::string copy{bytes.substr(pos, n)};
  for (size_t i = 0; i < n; ++i)
    for (unsigned b = 0; b < 8; ++b) {
      copy[i] = static_cast<char>(copy[i] ^ (1u << b));
      auto d = decode_record(copy);
      copy[i] = static_cast<char>(copy[i] ^ (1u << b));
      if (d.status == decode_status::ok && d.record.lsn.value == want) {
        bool torn_to_zeros =
            i < d.size && all_zero(std::string_view{copy}.substr(i, d.size - i));
        return !torn_to_zeros;
      }
    }
  return false;
}

std::string where(const segment_scan& seg, uint64_t offset) {
  return seg.path.filename().string() + " at byte " + std::to_string(offset);
}

} // namespace

size_t record_end(std::string_view bytes, lsn named, lsn at) {
  if (at < named)
    return std::string_view::npos;
  uint64_t prev = named.value - 1;
  for (size_t pos = 0; pos < bytes.size();) {
    auto d = decode_record(bytes.substr(pos));
    if (d.status != decode_status::ok || d.record.lsn.value <= prev
        || d.record.lsn > at) {
      // Not a record that can come next: look for the next one that can.
      pos = resync(bytes, pos + 1, prev, at.value);
      if (pos == std::string_view::npos)
        return pos;
      continue;
    }
    if (d.record.lsn == at)
      return pos + d.size;
    prev = d.record.lsn.value;
    pos += d.size;
  }
  return std::string_view::npos;
}

bool all_zero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

namespace {

/// Reads and classifies out.segments (listed, sorted, not yet read).
result<void> scan_segments(file_system& disk, log_scan& out, const log_scan_options& opts,
                           const log_scan_fn& each) {
  const uint64_t base = opts.base.value;
  uint64_t expected = base + 1; // the next needed lsn
  bool have_prev = false;
  uint64_t prev = 0;
  std::vector<size_t> open; // damage not followed by a valid record (yet)
  log_position last_good;   // just after the last valid record before `fatal`
  // Valid records after open damage that belong to the write holding the
  // next needed record (a torn last write): cut with the damage, unless a
  // record of a later write turns up (then they are dropped by a repair).
  uint64_t torn_records = 0, torn_bytes = 0;
  lsn torn_first, torn_last;

  auto refuse = [&](const std::string& why) {
    out.fatal = true;
    out.problem = why;
    out.keep_end = last_good;
  };

  for (size_t i = 0; i < out.segments.size(); ++i) {
    auto& seg = out.segments[i];
    bool covered =
        i + 1 < out.segments.size() && out.segments[i + 1].named.value <= base + 1;
    if (covered && !opts.read_covered) {
      seg.skipped = true;
      seg.bytes = files::value_or(disk.file_size(seg.path), uint64_t{0});
      if (!out.fatal)
        last_good = {i + 1, 0};
      continue;
    }
    auto data = disk.read_file(seg.path);
    if (!data)
      return data.error();
    std::string_view bytes = data.value();
    seg.bytes = bytes.size();
    const uint64_t upper = seg.named.value + bytes.size() / (record_header_size + 1);
    size_t pos = 0;
    while (pos < bytes.size()) {
      auto d = decode_record(bytes.substr(pos));
      std::string problem;
      if (d.status == decode_status::incomplete)
        problem = "torn record";
      else if (d.status == decode_status::corrupt)
        problem = "corrupt record (checksum or format)";
      else if (have_prev && d.record.lsn.value <= prev)
        problem = "lsn " + to_string(d.record.lsn) + " after " + std::to_string(prev);
      else if (pos == 0 && d.record.lsn != seg.named)
        problem = "first record " + to_string(d.record.lsn) + " does not match the name";
      if (problem.empty()) {
        auto l = d.record.lsn.value;
        auto bf = d.record.batch_first.value;
        bool rot = std::any_of(open.begin(), open.end(),
                               [&](size_t k) { return out.damage[k].rot; });
        if (!open.empty() && !out.fatal && l > base + 1 && l > expected && bf != 0
            && bf <= expected && !rot) {
          // Damage where the next needed record should be, then a record
          // written by the same write() as that missing record (its write
          // starts at or before it, and the record comes after it): if no
          // record of a later write follows, that write is the last one, torn
          // by a crash before its sync, and nothing in it was acknowledged
          // (the log writes nothing after a write until its sync succeeded).
          // Cut with the damage. (The needed record itself after damage,
          // l == expected, proves the damage lies in an earlier write.)
          if (torn_records++ == 0)
            torn_first = d.record.lsn;
          torn_last = d.record.lsn;
          torn_bytes += d.size;
          if (seg.records++ == 0)
            seg.first = d.record.lsn;
          seg.last = d.record.lsn;
          if (out.records++ == 0)
            out.first = d.record.lsn;
          out.last = d.record.lsn;
          prev = l;
          have_prev = true;
          pos += d.size;
          continue;
        }
        // Damage before this record: harmless if it can only have held
        // covered records.
        for (auto k : open) {
          auto& dmg = out.damage[k];
          if (l <= base + 1) {
            dmg.what = log_damage::kind::covered;
          } else {
            dmg.what = log_damage::kind::middle;
            if (!out.fatal)
              refuse(dmg.reason
                     + (dmg.rot ? ": lsn " + to_string(dmg.rot_lsn)
                                      + " with one bit flipped (rot, not a torn write)"
                                : std::string{})
                     + ", followed by valid records (lsn " + std::to_string(l) + " in "
                     + where(seg, pos)
                     + (bf != 0 && !rot ? ", written after the damaged write was synced)"
                                        : ")"));
          }
        }
        open.clear();
        if (torn_records > 0) {
          // A later write follows the torn one: its records are dropped too.
          if (out.drop_records == 0)
            out.drop_first = torn_first;
          out.drop_records += torn_records;
          out.drop_last = torn_last;
          torn_records = torn_bytes = 0;
        }
        if (l <= base) {
          if (have_prev && l != prev + 1)
            out.covered_gaps.push_back("lsn " + std::to_string(prev + 1) + ".."
                                       + std::to_string(l - 1) + " (before "
                                       + where(seg, pos) + ")");
        } else if (l != expected && !out.fatal) {
          refuse("lsn " + std::to_string(expected) + ".." + std::to_string(l - 1)
                 + " are missing: the log continues with lsn " + std::to_string(l)
                 + " in " + where(seg, pos));
        }
        if (out.fatal) {
          if (out.drop_records++ == 0)
            out.drop_first = d.record.lsn;
          out.drop_last = d.record.lsn;
        } else if (l > base) {
          if (auto r = each(d.record, bytes.substr(pos, d.size)); !r)
            return r.error();
          out.needed_last = d.record.lsn;
          ++expected;
        }
        if (seg.records++ == 0)
          seg.first = d.record.lsn;
        seg.last = d.record.lsn;
        if (out.records++ == 0)
          out.first = d.record.lsn;
        out.last = d.record.lsn;
        prev = l;
        have_prev = true;
        pos += d.size;
        seg.valid_bytes = pos;
        if (!out.fatal)
          last_good = {i, pos};
        continue;
      }
      auto rest = bytes.substr(pos);
      if (all_zero(rest)) {
        seg.zero_tail = rest.size();
        break;
      }
      auto next = resync(bytes, pos + 1, have_prev ? prev : seg.named.value - 1, upper);
      auto end = next == std::string_view::npos ? bytes.size() : next;
      log_damage dmg;
      dmg.segment = i;
      dmg.offset = pos;
      dmg.bytes = end - pos;
      if (next == std::string_view::npos) {
        // Zero bytes at the end (a preallocated segment) are not damage.
        auto last_nonzero = bytes.find_last_not_of('\0');
        dmg.bytes = last_nonzero + 1 - pos;
        seg.zero_tail = bytes.size() - last_nonzero - 1;
      }
      dmg.reason = problem + " in " + where(seg, pos);
      if (expected > base && problem.rfind("lsn ", 0) != 0
          && problem.rfind("first ", 0) != 0 && one_bit_from(bytes, pos, expected)) {
        dmg.rot = true;
        dmg.rot_lsn = lsn{expected};
      }
      open.push_back(out.damage.size());
      out.damage.push_back(std::move(dmg));
      pos = end;
    }
  }
  // Damage with nothing valid after it: the torn tail, unless it is rot of a
  // record that was written whole (then it may have been acknowledged).
  for (auto k : open) {
    auto& dmg = out.damage[k];
    if (dmg.rot && !out.fatal && torn_records == 0) {
      dmg.what = log_damage::kind::middle;
      refuse(dmg.reason + ": lsn " + to_string(dmg.rot_lsn)
             + " with one bit flipped, a record written whole (rot, not a torn write: it "
               "may have been acknowledged)");
      continue;
    }
    if (dmg.what == log_damage::kind::middle)
      continue;
    dmg.what = log_damage::kind::tail;
    if (!out.ends_early) {
      out.ends_early = true;
      out.bad_segment = dmg.segment;
      out.bad_offset = dmg.offset;
      out.reason = dmg.reason;
    }
    out.bytes_after_end += dmg.bytes;
  }
  if (torn_records > 0) {
    out.torn_write_records = torn_records;
    out.bytes_after_end += torn_bytes;
    out.reason += ", then " + std::to_string(torn_records)
                  + " record(s) of the same unsynced write (lsn " + to_string(torn_first)
                  + ".." + to_string(torn_last) + ")";
  }
  return outcome::success();
}

/// Where the log kept by recovery ends: the cut of a repair, the start of a
/// torn tail, or the first of the segments that hold no data at the end.
log_position kept_end(const log_scan& out) {
  if (out.fatal)
    return out.keep_end;
  if (out.ends_early)
    return {out.bad_segment, out.bad_offset};
  auto k = out.segments.size();
  while (k > 0 && !out.segments[k - 1].skipped && out.segments[k - 1].records == 0
         && out.segments[k - 1].bytes == out.segments[k - 1].zero_tail)
    --k;
  return {k, 0};
}

/// When what recovery keeps ends at the start of a segment right after a
/// skipped one, that skipped segment becomes the last one, and the next open
/// reads it: damage in its tail (say in its zero-filled, unwritten part)
/// would be cut then, a second cut. So read it now, as that open would, and
/// if it ends in damage, make the end of its valid records the end of the
/// log: one recovery or repair cuts all there is to cut.
result<void> read_tail_of_skipped(file_system& disk, log_scan& out,
                                  const log_scan_options& opts) {
  auto end = kept_end(out);
  if (end.offset != 0 || end.segment == 0 || end.segment > out.segments.size()
      || !out.segments[end.segment - 1].skipped)
    return outcome::success();
  auto k = end.segment - 1;
  log_scan alone;
  alone.base = out.base;
  alone.needed_last = out.base;
  segment_scan seg;
  seg.path = out.segments[k].path;
  seg.named = out.segments[k].named;
  alone.segments.push_back(std::move(seg));
  bool needed = false;
  if (auto r = scan_segments(disk, alone, opts,
                             [&](const log_record&, std::string_view) -> result<void> {
                               needed = true;
                               return outcome::success();
                             });
      !r)
    return r;
  // Only covered records can be there (the next segment's name is at most
  // base + 1); anything else is left to the next open, as before.
  if (needed || alone.fatal || !alone.ends_early)
    return outcome::success();
  out.segments[k] = alone.segments[0];
  auto at = std::find_if(out.damage.begin(), out.damage.end(),
                         [&](const log_damage& d) { return d.segment > k; });
  for (auto& d : alone.damage)
    d.segment = k;
  out.damage.insert(at, alone.damage.begin(), alone.damage.end());
  if (alone.records > 0) {
    if (out.records == 0 || alone.first < out.first)
      out.first = alone.first;
    if (out.records == 0 || out.last < alone.last)
      out.last = alone.last;
    out.records += alone.records;
  }
  log_position cut{k, alone.bad_offset};
  if (out.fatal) {
    out.keep_end = cut;
  } else {
    // A torn tail found after it (at offset 0 of the next segment) stays
    // counted in bytes_after_end.
    out.ends_early = true;
    out.bad_segment = cut.segment;
    out.bad_offset = cut.offset;
    out.reason = alone.reason;
    out.bytes_after_end += alone.bytes_after_end;
  }
  return outcome::success();
}

} // namespace

result<log_scan> scan_log(file_system& disk, const fs::path& dir,
                          const log_scan_options& opts, const log_scan_fn& each) {
  log_scan out;
  out.base = opts.base;
  out.needed_last = opts.base;
  auto log_dir = dir / "log";
  auto found = disk.exists(log_dir);
  if (!found)
    return found.error();
  if (!found.value())
    return out;
  auto names = disk.list_directory(log_dir);
  if (!names)
    return names.error();
  for (auto& name : names.value())
    if (auto named = files::parse_lsn_name(name, "seg-", ".wal")) {
      segment_scan s;
      s.path = log_dir / name;
      s.named = *named;
      out.segments.push_back(std::move(s));
    }
  std::sort(
      out.segments.begin(), out.segments.end(),
      [](const segment_scan& a, const segment_scan& b) { return a.named < b.named; });
  if (auto r = scan_segments(disk, out, opts, each); !r)
    return r.error();
  if (auto r = read_tail_of_skipped(disk, out, opts); !r)
    return r.error();
  if (out.fatal) {
    for (size_t i = out.keep_end.segment; i < out.segments.size(); ++i) {
      auto& seg = out.segments[i];
      auto used = seg.bytes - seg.zero_tail;
      auto from = i == out.keep_end.segment ? out.keep_end.offset : 0;
      if (used > from)
        out.drop_bytes += used - from;
    }
  }
  return out;
}

result<log_scan> scan_log(const fs::path& dir, const log_scan_options& opts,
                          const log_scan_fn& each) {
  return scan_log(*default_file_system(), dir, opts, each);
}

} // namespace conclave::store
