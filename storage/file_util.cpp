#include "storage/file_util.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace conclave::store::files {

std::error_code last_error() {
  return {errno, std::system_category()};
}

sync_fn default_sync() {
  return [](int fd) { return ::fdatasync(fd); };
}

result<void> write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return last_error();
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return outcome::success();
}

result<void> sync_dir(const std::filesystem::path& dir, const sync_fn& sync) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return last_error();
  auto rc = sync ? sync(fd) : ::fsync(fd);
  auto err = rc != 0 ? last_error() : std::error_code{};
  ::close(fd);
  if (err)
    return err;
  return outcome::success();
}

result<std::string> read_file(const std::filesystem::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return last_error();
  std::string out;
  char buf[1 << 16];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      auto err = last_error();
      ::close(fd);
      return err;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

result<void> write_file_synced(const std::filesystem::path& file, std::string_view data,
                               const sync_fn& sync) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return last_error();
  auto w = write_all(fd, data);
  if (w && (sync ? sync(fd) : ::fdatasync(fd)) != 0)
    w = last_error();
  if (::close(fd) != 0 && w)
    w = last_error();
  return w;
}

result<void> write_file_synced(file_system& fs, const std::filesystem::path& file,
                               std::string_view data) {
  auto f = fs.open_for_write(file, file_system::open_mode::create_truncate);
  if (!f)
    return f.error();
  auto w = f.value()->write(data);
  if (w)
    w = f.value()->sync();
  if (auto c = f.value()->close(); !c && w)
    w = c.error();
  return w;
}

std::string lsn_name(const std::string& prefix, lsn l, const std::string& suffix) {
  char digits[32];
  std::snprintf(digits, sizeof(digits), "%020llu",
                static_cast<unsigned long long>(l.value));
  return prefix + digits + suffix;
}

std::optional<lsn> parse_lsn_name(const std::string& name, const std::string& prefix,
                                  const std::string& suffix) {
  if (name.size() != prefix.size() + 20 + suffix.size()
      || name.compare(0, prefix.size(), prefix) != 0
      || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  uint64_t x = 0;
  for (size_t i = prefix.size(); i < prefix.size() + 20; ++i) {
    if (name[i] < '0' || name[i] > '9')
      return std::nullopt;
    x = x * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return lsn{x};
}

} // namespace conclave::store::files
