#include "storage/checkpoint_file.hpp"

#include "protocols/store/byte_codec.hpp"
#include "protocols/store/crc32c.hpp"

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

result<void> write_checkpoint(const fs::path& dir, lsn at, std::string_view image,
                              const files::sync_fn& sync) {
  auto ckdir = dir / "checkpoints";
  std::error_code ec;
  fs::create_directories(ckdir, ec);
  if (ec)
    return ec;
  // Leftovers of a checkpoint interrupted by a crash.
  for (auto& e : fs::directory_iterator(ckdir, ec))
    if (e.path().extension() == ".tmp")
      fs::remove(e.path(), ec);
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
  if (auto r = files::write_file_synced(tmp, file, sync); !r)
    return r.error();
  fs::rename(tmp, ckdir / name, ec);
  if (ec)
    return ec;
  if (auto r = files::sync_dir(ckdir, sync); !r)
    return r.error();
  auto all = list_checkpoints(dir);
  bool removed = false;
  for (size_t i = keep; i < all.size(); ++i) {
    fs::remove(all[i], ec);
    removed = true;
  }
  if (removed)
    return files::sync_dir(ckdir, sync);
  return outcome::success();
}

std::vector<fs::path> list_checkpoints(const fs::path& dir) {
  std::vector<std::pair<lsn, fs::path>> found;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir / "checkpoints", ec))
    if (auto l = files::parse_lsn_name(e.path().filename().string(), prefix, suffix))
      found.emplace_back(*l, e.path());
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> out;
  for (auto& f : found)
    out.push_back(f.second);
  return out;
}

result<checkpoint_image> read_checkpoint(const fs::path& file) {
  auto data = files::read_file(file);
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
