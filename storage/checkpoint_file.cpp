#include "storage/checkpoint_file.hpp"

#include "protocols/store/byte_codec.hpp"
#include "protocols/store/crc32c.hpp"
#include "storage/posix_file_system.hpp"

#include <algorithm>

namespace conclave::store {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view magic = "CNCLCKPT";
constexpr uint32_t version = 1;
constexpr size_t header_size = 8 + 4 + 8 + 8 + 4;
const std::string prefix = "ckpt-";
const std::string suffix = ".ckpt";
constexpr size_t keep = 2;

} // namespace

result<void> write_checkpoint(file_system& disk, const fs::path& dir, lsn at,
                              std::string_view image) {
  auto ckdir = dir / "checkpoints";
  if (auto c = disk.create_directories(ckdir); !c)
    return c.error();
  // Leftovers of a checkpoint interrupted by a crash.
  if (auto names = disk.list_directory(ckdir))
    for (auto& name : names.value())
      if (fs::path{name}.extension() == ".tmp")
        (void)disk.remove(ckdir / name);
  std::string file;
  file.reserve(header_size + image.size());
  file.append(magic);
  byte_writer w{file};
  w.u32(version);
  w.u64(at.value);
  w.u64(image.size());
  w.u32(crc32c(image));
  file.append(image);
  auto name = files::lsn_name(prefix, at, suffix);
  auto tmp = ckdir / (name + ".tmp");
  if (auto r = files::write_file_synced(disk, tmp, file); !r)
    return r.error();
  if (auto r = disk.rename(tmp, ckdir / name); !r)
    return r.error();
  if (auto r = disk.sync_directory(ckdir); !r)
    return r.error();
  auto all = list_checkpoints(disk, dir);
  bool removed = false;
  for (size_t i = keep; i < all.size(); ++i) {
    (void)disk.remove(all[i]);
    removed = true;
  }
  if (removed)
    return disk.sync_directory(ckdir);
  return outcome::success();
}

result<void> write_checkpoint(const fs::path& dir, lsn at, std::string_view image,
                              const files::sync_fn& sync) {
  return write_checkpoint(*make_posix_file_system(sync), dir, at, image);
}

std::vector<fs::path> list_checkpoints(file_system& disk, const fs::path& dir) {
  std::vector<std::pair<lsn, fs::path>> found;
  auto ckdir = dir / "checkpoints";
  if (auto names = disk.list_directory(ckdir))
    for (auto& name : names.value())
      if (auto l = files::parse_lsn_name(name, prefix, suffix))
        found.emplace_back(*l, ckdir / name);
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> out;
  for (auto& f : found)
    out.push_back(f.second);
  return out;
}

std::vector<fs::path> list_checkpoints(const fs::path& dir) {
  return list_checkpoints(*default_file_system(), dir);
}

result<checkpoint_image> read_checkpoint(const fs::path& file) {
  return read_checkpoint(*default_file_system(), file);
}

result<checkpoint_image> read_checkpoint(file_system& disk, const fs::path& file) {
  auto data = disk.read_file(file);
  if (!data)
    return data.error();
  std::string_view bytes = data.value();
  if (bytes.size() < header_size || bytes.substr(0, magic.size()) != magic)
    return errc::corrupt_data;
  byte_reader r{bytes.substr(magic.size(), header_size - magic.size())};
  auto v = r.u32();
  lsn at{r.u64()};
  auto size = r.u64();
  auto crc = r.u32();
  if (v != version || size != bytes.size() - header_size)
    return errc::corrupt_data;
  auto image = bytes.substr(header_size);
  if (crc32c(image) != crc)
    return errc::corrupt_data;
  if (auto named = files::parse_lsn_name(file.filename().string(), prefix, suffix);
      named && *named != at)
    return errc::corrupt_data;
  return checkpoint_image{at, std::string{image}};
}

} // namespace conclave::store
