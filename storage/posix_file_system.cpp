#include "storage/posix_file_system.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace conclave::store {

namespace fs = std::filesystem;

namespace {

class posix_file final : public writable_file {
public:
  posix_file(int fd, files::sync_fn sync) : fd_(fd), sync_(std::move(sync)) {}

  ~posix_file() override {
    if (fd_ >= 0)
      ::close(fd_);
  }

  result<void> write(std::string_view data) override {
    if (fd_ < 0)
      return std::error_code{EBADF, std::system_category()};
    return files::write_all(fd_, data);
  }

  result<void> write_at(uint64_t offset, std::string_view data) override {
    if (fd_ < 0)
      return std::error_code{EBADF, std::system_category()};
    while (!data.empty()) {
      auto n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR)
          continue;
        return files::last_error();
      }
      data.remove_prefix(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
    return outcome::success();
  }

  result<void> truncate(uint64_t size) override {
    if (fd_ < 0)
      return std::error_code{EBADF, std::system_category()};
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
      return files::last_error();
    return outcome::success();
  }

  result<void> sync() override {
    if (fd_ < 0)
      return std::error_code{EBADF, std::system_category()};
    if ((sync_ ? sync_(fd_) : ::fdatasync(fd_)) != 0)
      return files::last_error();
    return outcome::success();
  }

  result<void> close() override {
    if (fd_ < 0)
      return std::error_code{EBADF, std::system_category()};
    auto rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0)
      return files::last_error();
    return outcome::success();
  }

private:
  int fd_;
  files::sync_fn sync_;
};

class posix_lock final : public file_lock {
public:
  explicit posix_lock(int fd) : fd_(fd) {}
  ~posix_lock() override { ::close(fd_); } // releases the flock

private:
  int fd_;
};

class posix_fs final : public file_system {
public:
  explicit posix_fs(files::sync_fn sync) : sync_(std::move(sync)) {}

  result<std::unique_ptr<writable_file>> open_for_write(const fs::path& file,
                                                        open_mode mode) override {
    int flags = O_WRONLY | O_CLOEXEC;
    if (mode == open_mode::create_truncate)
      flags |= O_CREAT | O_TRUNC;
    int fd = ::open(file.c_str(), flags, 0644);
    if (fd < 0)
      return files::last_error();
    return std::unique_ptr<writable_file>{new posix_file(fd, sync_)};
  }

  result<std::string> read_file(const fs::path& file) override {
    return files::read_file(file);
  }

  result<uint64_t> file_size(const fs::path& file) override {
    std::error_code ec;
    auto n = fs::file_size(file, ec);
    if (ec)
      return ec;
    return static_cast<uint64_t>(n);
  }

  result<bool> exists(const fs::path& path) override {
    std::error_code ec;
    auto found = fs::exists(path, ec);
    if (ec)
      return ec;
    return found;
  }

  result<std::vector<std::string>> list_directory(const fs::path& dir) override {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(dir, ec))
      out.push_back(e.path().filename().string());
    if (ec)
      return ec;
    return out;
  }

  result<void> create_directories(const fs::path& dir) override {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return ec;
    return outcome::success();
  }

  result<void> rename(const fs::path& from, const fs::path& to) override {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec)
      return ec;
    return outcome::success();
  }

  result<void> remove(const fs::path& path) override {
    std::error_code ec;
    fs::remove(path, ec);
    if (ec)
      return ec;
    return outcome::success();
  }

  result<void> remove_all(const fs::path& path) override {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec)
      return ec;
    return outcome::success();
  }

  result<void> sync_directory(const fs::path& dir) override {
    return files::sync_dir(dir, sync_);
  }

  result<std::unique_ptr<file_lock>> lock_exclusive(const fs::path& file) override {
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return files::last_error();
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return errc::directory_in_use;
    }
    return std::unique_ptr<file_lock>{new posix_lock(fd)};
  }

private:
  files::sync_fn sync_;
};

} // namespace

std::shared_ptr<file_system> make_posix_file_system(files::sync_fn sync) {
  return std::make_shared<posix_fs>(std::move(sync));
}

const std::shared_ptr<file_system>& default_file_system() {
  static const std::shared_ptr<file_system> fs =
      make_posix_file_system(files::default_sync());
  return fs;
}

} // namespace conclave::store
