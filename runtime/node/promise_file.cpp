#include "runtime/node/promise_file.hpp"

#include "protocols/store/crc32c.hpp"
#include "storage/file_util.hpp"

namespace conclave::node {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view magic = "CPRM";
constexpr uint32_t version = 1;
constexpr size_t file_size = 20;

} // namespace

std::string file_promise_record::encode(election::duration value) {
  std::string out{magic};
  store::files::append_le(out, version, 4);
  store::files::append_le(out, static_cast<uint64_t>(std::max<int64_t>(0, value.count())),
                          8);
  store::files::append_le(out, store::crc32c(out), 4);
  return out;
}

std::optional<election::duration> file_promise_record::decode(std::string_view bytes) {
  if (bytes.size() != file_size || bytes.substr(0, 4) != magic
      || store::files::read_le(bytes, 4, 4) != version
      || store::files::read_le(bytes, 16, 4) != store::crc32c(bytes.substr(0, 16)))
    return std::nullopt;
  auto ns = store::files::read_le(bytes, 8, 8);
  if (ns > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return election::duration{static_cast<int64_t>(ns)};
}

std::shared_ptr<file_promise_record>
file_promise_record::open(const fs::path& dir, std::shared_ptr<store::file_system> disk,
                          election::duration unreadable_as, std::string& problem) {
  std::shared_ptr<file_promise_record> f{new file_promise_record(dir, std::move(disk))};
  auto path = dir / file_name;
  auto tmp = path;
  tmp += ".tmp";
  // A write that never returned: nothing was promised on its strength.
  (void)f->files_->remove(tmp);
  auto data = f->files_->read_file(path);
  if (!data && data.error() == std::errc::no_such_file_or_directory)
    return f;
  std::optional<election::duration> v;
  if (data)
    v = decode(data.value());
  if (v) {
    f->value_ = *v;
    return f;
  }
  // Never over an earlier damaged copy: each is kept (.damaged, .damaged.1, ...).
  auto aside = path;
  aside += ".damaged";
  for (int n = 1; store::files::value_or(f->files_->exists(aside), false); ++n) {
    aside = path;
    aside += ".damaged." + std::to_string(n);
  }
  auto moved = f->files_->rename(path, aside);
  problem = path.string() + " cannot be read ("
            + (data ? std::string{"damaged"} : data.error().message()) + "); "
            + (moved ? "moved aside to " + aside.string() : std::string{"left in place"})
            + "; this member refuses other leaders for "
            + std::to_string(unreadable_as.count() / 1000000) + " ms from now";
  f->value_ = unreadable_as;
  return f;
}

bool file_promise_record::store(election::duration value) {
  auto path = dir_ / file_name;
  auto tmp = path;
  tmp += ".tmp";
  if (!store::files::write_file_synced(*files_, tmp, encode(value)))
    return false;
  if (!files_->rename(tmp, path) || !files_->sync_directory(dir_))
    return false;
  value_ = value;
  return true;
}

} // namespace conclave::node
