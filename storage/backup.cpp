#include "storage/backup.hpp"

#include "protocols/store/crc32c.hpp"
#include "protocols/store/log_record.hpp"
#include "storage/checkpoint_file.hpp"
#include "storage/file_util.hpp"
#include "storage/log_scan.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace conclave::store {

namespace fs = std::filesystem;

namespace {

using manifest = backup_manifest;

struct backup_entry {
  uint64_t seq = 0;
  fs::path path;
};

std::string render(const manifest& m) {
  std::ostringstream out;
  out << "conclave-backup 1\nkind " << m.kind << "\nfrom " << m.from.value << "\nto "
      << m.to.value << '\n';
  for (auto& f : m.files) {
    char crc[16];
    std::snprintf(crc, sizeof(crc), "%08x", f.crc);
    out << "file " << f.name << ' ' << f.size << ' ' << crc << '\n';
  }
  return out.str();
}

result<manifest> parse_manifest(const fs::path& dir) {
  auto text = files::read_file(dir / "MANIFEST");
  if (!text)
    return errc::corrupt_data;
  return parse_backup_manifest(text.value());
}

/// Backups in `dir`, oldest first.
std::vector<backup_entry> list_backups(const fs::path& dir) {
  std::vector<backup_entry> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    auto name = e.path().filename().string();
    if (name.size() < 8 || name[6] != '-')
      continue;
    auto digits = name.substr(0, 6);
    if (!std::all_of(digits.begin(), digits.end(),
                     [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    out.push_back({std::stoull(digits), e.path()});
  }
  std::sort(out.begin(), out.end(),
            [](const backup_entry& a, const backup_entry& b) { return a.seq < b.seq; });
  return out;
}

/// Frames of the log records with from < lsn <= upto, checked and dense.
/// Segments holding only records <= from are not read (log_scan.hpp), so
/// damage there does not stop a backup; damage among the records needed is
/// backup_gap. The tail being written may look torn: it is after `upto`.
result<std::string> log_frames(const fs::path& data_dir, lsn from, lsn upto) {
  std::string out;
  lsn next{from.value + 1};
  log_scan_options so;
  so.base = from;
  auto scanned = scan_log(
      data_dir, so, [&](const log_record& r, std::string_view frame) -> result<void> {
        if (r.lsn <= upto && r.lsn == next) {
          out.append(frame);
          ++next.value;
        }
        return outcome::success();
      });
  if (!scanned)
    return scanned.error();
  if (next <= upto)
    return errc::backup_gap;
  return out;
}

result<backup_info>
write_backup(const fs::path& backup_dir, manifest m,
             const std::vector<std::pair<std::string, std::string>>& contents) {
  std::error_code ec;
  fs::create_directories(backup_dir, ec);
  if (ec)
    return ec;
  auto existing = list_backups(backup_dir);
  uint64_t seq = existing.empty() ? 1 : existing.back().seq + 1;
  char name[32];
  std::snprintf(name, sizeof(name), "%06llu-%s", static_cast<unsigned long long>(seq),
                m.kind == "full" ? "full" : "incr");
  // Written under a hidden temporary name and renamed when complete, so a
  // crash never leaves a half backup that restore would take for the newest.
  auto target = backup_dir / name;
  auto tmp = backup_dir / ("." + std::string{name} + ".tmp");
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec)
    return ec;
  backup_info info{m.kind, m.from, m.to, target, 0};
  auto sync = files::default_sync();
  for (auto& [file, bytes] : contents) {
    if (auto w = files::write_file_synced(tmp / file, bytes, sync); !w)
      return w.error();
    m.files.push_back({file, bytes.size(), crc32c(bytes)});
    info.bytes += bytes.size();
  }
  if (auto w = files::write_file_synced(tmp / "MANIFEST", render(m), sync); !w)
    return w.error();
  if (auto s = files::sync_dir(tmp, sync); !s)
    return s.error();
  fs::rename(tmp, target, ec);
  if (ec)
    return ec;
  if (auto s = files::sync_dir(backup_dir, sync); !s)
    return s.error();
  return info;
}

} // namespace

result<backup_manifest> parse_backup_manifest(std::string_view text) {
  std::istringstream in{std::string{text}};
  std::string word;
  int version = 0;
  manifest m;
  if (!(in >> word >> version) || word != "conclave-backup" || version != 1)
    return errc::corrupt_data;
  uint64_t from = 0, to = 0;
  std::string k1, k2, k3;
  if (!(in >> k1 >> m.kind >> k2 >> from >> k3 >> to) || k1 != "kind" || k2 != "from"
      || k3 != "to" || (m.kind != "full" && m.kind != "incremental") || to < from)
    return errc::corrupt_data;
  m.from = lsn{from};
  m.to = lsn{to};
  while (in >> word) {
    manifest::file f;
    std::string size, crc;
    if (word != "file" || !(in >> f.name >> size >> crc) || f.name == "."
        || f.name == ".." || f.name.find('/') != std::string::npos)
      return errc::corrupt_data;
    // Digits only, parsed by hand: no sign, no exception, no overflow.
    if (size.empty() || size.size() > 19 || crc.size() != 8)
      return errc::corrupt_data;
    for (char c : size) {
      if (c < '0' || c > '9')
        return errc::corrupt_data;
      f.size = f.size * 10 + static_cast<uint64_t>(c - '0');
    }
    for (char c : crc) {
      uint32_t digit = 0;
      if (c >= '0' && c <= '9')
        digit = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        digit = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        digit = static_cast<uint32_t>(c - 'A' + 10);
      else
        return errc::corrupt_data;
      f.crc = (f.crc << 4) | digit;
    }
    m.files.push_back(f);
  }
  return m;
}

result<backup_info> backup_full(const fs::path& data_dir, const fs::path& backup_dir,
                                lsn upto) {
  std::vector<std::pair<std::string, std::string>> contents;
  lsn from;
  for (auto& file : list_checkpoints(data_dir)) {
    auto image = read_checkpoint(file);
    if (!image)
      continue; // a corrupt newest checkpoint: back up from the previous one
    if (image.value().at > upto)
      continue;
    auto bytes = files::read_file(file);
    if (!bytes)
      return bytes.error();
    from = image.value().at;
    contents.emplace_back(file.filename().string(), std::move(bytes.value()));
    break;
  }
  auto frames = log_frames(data_dir, from, upto);
  if (!frames)
    return frames.error();
  if (!frames.value().empty())
    contents.emplace_back("log.wal", std::move(frames.value()));
  return write_backup(backup_dir, manifest{"full", from, upto, {}}, contents);
}

result<backup_info> backup_incremental(const fs::path& data_dir,
                                       const fs::path& backup_dir, lsn upto) {
  auto existing = list_backups(backup_dir);
  if (existing.empty())
    return errc::bad_argument;
  auto prev = parse_manifest(existing.back().path);
  if (!prev)
    return prev.error();
  auto from = prev.value().to;
  if (upto < from)
    return errc::bad_argument;
  if (upto == from) // nothing new: an empty backup would only add clutter
    return backup_info{"incremental", from, upto, {}, 0};
  auto frames = log_frames(data_dir, from, upto);
  if (!frames)
    return frames.error();
  std::vector<std::pair<std::string, std::string>> contents;
  if (!frames.value().empty())
    contents.emplace_back("log.wal", std::move(frames.value()));
  return write_backup(backup_dir, manifest{"incremental", from, upto, {}}, contents);
}

result<backup_info> restore_backup(const fs::path& backup_dir,
                                   const fs::path& new_data_dir) {
  std::error_code ec;
  if (fs::exists(new_data_dir, ec) && !fs::is_empty(new_data_dir, ec))
    return errc::bad_argument;
  auto all = list_backups(backup_dir);
  // The newest full backup and the incrementals after it.
  std::vector<std::pair<manifest, fs::path>> chain;
  for (auto i = all.rbegin(); i != all.rend(); ++i) {
    auto m = parse_manifest(i->path);
    if (!m)
      return m.error();
    chain.emplace_back(m.value(), i->path);
    if (m.value().kind == "full")
      break;
  }
  if (chain.empty() || chain.back().first.kind != "full")
    return errc::bad_argument; // no full backup to start from
  std::reverse(chain.begin(), chain.end());
  std::string checkpoint_name, checkpoint_bytes, log;
  lsn to = chain.front().first.from;
  for (auto& [m, dir] : chain) {
    if (m.from != to)
      return errc::corrupt_data; // not continuous
    for (auto& f : m.files) {
      auto bytes = files::read_file(dir / f.name);
      if (!bytes || bytes.value().size() != f.size || crc32c(bytes.value()) != f.crc)
        return errc::corrupt_data;
      if (f.name == "log.wal")
        log += bytes.value();
      else if (m.kind == "full")
        checkpoint_name = f.name, checkpoint_bytes = std::move(bytes.value());
    }
    to = m.to;
  }
  // The log must be exactly the records after the checkpoint up to `to`.
  lsn next{chain.front().first.from.value + 1};
  for (size_t pos = 0; pos < log.size();) {
    auto d = decode_record(std::string_view{log}.substr(pos));
    if (d.status != decode_status::ok || d.record.lsn != next)
      return errc::corrupt_data;
    ++next.value;
    pos += d.size;
  }
  if (next.value != to.value + 1)
    return errc::corrupt_data;
  auto sync = files::default_sync();
  fs::create_directories(new_data_dir / "log", ec);
  fs::create_directories(new_data_dir / "checkpoints", ec);
  if (ec)
    return ec;
  if (!checkpoint_name.empty()) {
    if (auto w = files::write_file_synced(new_data_dir / "checkpoints" / checkpoint_name,
                                          checkpoint_bytes, sync);
        !w)
      return w.error();
  }
  if (!log.empty()) {
    auto seg = files::lsn_name("seg-", lsn{chain.front().first.from.value + 1}, ".wal");
    if (auto w = files::write_file_synced(new_data_dir / "log" / seg, log, sync); !w)
      return w.error();
  }
  for (auto d : {new_data_dir / "log", new_data_dir / "checkpoints", new_data_dir})
    if (auto s = files::sync_dir(d, sync); !s)
      return s.error();
  return backup_info{"restore", chain.front().first.from, to, new_data_dir,
                     checkpoint_bytes.size() + log.size()};
}

} // namespace conclave::store
