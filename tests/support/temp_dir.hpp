// A fresh directory under $TMPDIR (or /tmp) for one test, removed with
// everything in it when the object goes away.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace conclave::test {

class temp_dir {
public:
  explicit temp_dir(const std::string& prefix = "conclave") {
    auto base = std::filesystem::temp_directory_path() / (prefix + "-XXXXXX");
    std::string buf = base.string();
    if (::mkdtemp(buf.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed for " + buf);
    path_ = buf;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
  std::filesystem::path path_;
};

} // namespace conclave::test
