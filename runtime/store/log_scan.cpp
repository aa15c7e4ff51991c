#include "runtime/store/log_scan.hpp"

#include "runtime/store/file_util.hpp"

#include <algorithm>

namespace conclave::store {

namespace fs = std::filesystem;

result<log_scan> scan_log(const fs::path& dir,
                          const std::function<result<void>(const log_record&)>& each) {
  log_scan out;
  std::error_code ec;
  auto log_dir = dir / "log";
  if (!fs::exists(log_dir, ec))
    return out;
  for (auto& e : fs::directory_iterator(log_dir, ec))
    if (auto named =
            files::parse_lsn_name(e.path().filename().string(), "seg-", ".wal")) {
      segment_scan s;
      s.path = e.path();
      s.named = *named;
      out.segments.push_back(std::move(s));
    }
  if (ec)
    return ec;
  std::sort(
      out.segments.begin(), out.segments.end(),
      [](const segment_scan& a, const segment_scan& b) { return a.named < b.named; });
  bool have_prev = false;
  lsn prev;
  for (size_t i = 0; i < out.segments.size(); ++i) {
    auto& seg = out.segments[i];
    auto data = files::read_file(seg.path);
    if (!data)
      return data.error();
    std::string_view bytes = data.value();
    seg.bytes = bytes.size();
    if (out.ends_early) {
      out.bytes_after_end += seg.bytes;
      continue;
    }
    size_t pos = 0;
    while (pos < bytes.size()) {
      auto d = decode_record(bytes.substr(pos));
      std::string reason;
      if (d.status == decode_status::incomplete)
        reason = "torn record";
      else if (d.status == decode_status::corrupt)
        reason = "corrupt record (checksum or format)";
      else if (have_prev && d.record.lsn.value != prev.value + 1)
        reason = "lsn " + to_string(d.record.lsn) + " after " + to_string(prev);
      else if (pos == 0 && d.record.lsn != seg.named)
        reason = "first record " + to_string(d.record.lsn) + " does not match the name";
      if (!reason.empty()) {
        out.ends_early = true;
        out.bad_segment = i;
        out.bad_offset = pos;
        out.reason = reason + " in " + seg.path.filename().string() + " at byte "
                     + std::to_string(pos);
        out.bytes_after_end += bytes.size() - pos;
        break;
      }
      if (auto r = each(d.record); !r)
        return r.error();
      if (seg.records++ == 0)
        seg.first = d.record.lsn;
      seg.last = d.record.lsn;
      if (out.records++ == 0)
        out.first = d.record.lsn;
      out.last = d.record.lsn;
      prev = d.record.lsn;
      have_prev = true;
      pos += d.size;
    }
    seg.valid_bytes = pos;
  }
  return out;
}

} // namespace conclave::store
