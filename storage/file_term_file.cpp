#include "storage/file_term_file.hpp"

#include "protocols/store/crc32c.hpp"
#include "storage/file_util.hpp"
#include "storage/posix_file_system.hpp"

namespace conclave::storage {

namespace fs = std::filesystem;
using replication::term;
using store::errc;
using store::result;
namespace outcome = store::outcome;
namespace files = store::files;

namespace {

constexpr std::string_view magic = "CTRM";
constexpr uint32_t version = 1;
constexpr size_t file_size = 36;

} // namespace

file_term_file::file_term_file(fs::path dir, std::shared_ptr<store::file_system> disk)
    : files_(std::move(disk)), dir_(std::move(dir)), path_(dir_ / "term") {}

std::string file_term_file::encode(const term& t) {
  std::string out{magic};
  store::files::append_le(out, version, 4);
  store::files::append_le(out, t.epoch, 8);
  store::files::append_le(out, t.leader.value, 8);
  store::files::append_le(out, t.incarnation, 8);
  store::files::append_le(out, store::crc32c(out), 4);
  return out;
}

result<term> file_term_file::decode(std::string_view bytes) {
  if (bytes.size() != file_size || bytes.substr(0, 4) != magic
      || store::files::read_le(bytes, 4, 4) != version
      || store::files::read_le(bytes, 32, 4) != store::crc32c(bytes.substr(0, 32)))
    return errc::corrupt_data;
  term t;
  t.epoch = store::files::read_le(bytes, 8, 8);
  t.leader.value = store::files::read_le(bytes, 16, 8);
  t.incarnation = store::files::read_le(bytes, 24, 8);
  return t;
}

result<std::shared_ptr<file_term_file>> file_term_file::open(const fs::path& dir) {
  return open(dir, store::default_file_system());
}

result<std::shared_ptr<file_term_file>>
file_term_file::open(const fs::path& dir, std::shared_ptr<store::file_system> disk) {
  if (auto c = disk->create_directories(dir); !c)
    return c.error();
  std::shared_ptr<file_term_file> f{new file_term_file(dir, std::move(disk))};
  auto tmp = f->path_;
  tmp += ".tmp";
  if (auto r = f->files_->remove(tmp); !r)
    return r.error();
  auto data = f->files_->read_file(f->path_);
  if (!data) {
    if (data.error() == std::errc::no_such_file_or_directory)
      return f; // never saved: term zero
    return data.error();
  }
  auto t = decode(data.value());
  if (!t)
    return t.error();
  f->t_ = t.value();
  return f;
}

result<void> file_term_file::save(const term& t) {
  auto tmp = path_;
  tmp += ".tmp";
  if (auto w = files::write_file_synced(*files_, tmp, encode(t)); !w)
    return w.error();
  if (auto r = files_->rename(tmp, path_); !r)
    return r.error();
  if (auto s = files_->sync_directory(dir_); !s)
    return s.error();
  t_ = t;
  return outcome::success();
}

result<std::shared_ptr<replication::term_file>> open_term_file(const fs::path& dir) {
  return open_term_file(dir, store::default_file_system());
}

result<std::shared_ptr<replication::term_file>>
open_term_file(const fs::path& dir, std::shared_ptr<store::file_system> disk) {
  auto f = file_term_file::open(dir, std::move(disk));
  if (!f)
    return f.error();
  return std::shared_ptr<replication::term_file>{std::move(f.value())};
}

} // namespace conclave::storage
