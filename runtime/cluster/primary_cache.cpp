// See primary_cache.hpp.
#include "runtime/cluster/primary_cache.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace conclave::cluster {

namespace fs = std::filesystem;

std::string default_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/')
    return (fs::path{xdg} / "conclave").string();
  const char* home = std::getenv("HOME");
  if (home && *home != '\0')
    return (fs::path{home} / ".cache" / "conclave").string();
  return {};
}

std::string primary_cache_file(const std::string& cache_dir, const std::string& cluster,
                               const std::string& peers) {
  if (cache_dir.empty())
    return {};
  // FNV-1a over the name and the member list: another cluster, or the same
  // name with other members, gets another file.
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(cluster);
  mix(std::string(1, '\0'));
  mix(peers);
  char name[32];
  std::snprintf(name, sizeof name, "primary-%016llx", static_cast<unsigned long long>(h));
  return (fs::path{cache_dir} / name).string();
}

uint64_t read_primary_cache(const std::string& file) {
  if (file.empty())
    return 0;
  std::ifstream in{file};
  std::string text;
  if (!in || !std::getline(in, text))
    return 0;
  uint64_t id = 0;
  auto end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, id);
  if (ec != std::errc{} || ptr != end)
    return 0;
  return id;
}

void write_primary_cache(const std::string& file, uint64_t id) {
  if (file.empty() || id == 0)
    return;
  std::error_code ec;
  fs::path path{file};
  fs::create_directories(path.parent_path(), ec);
  auto tmp = file + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out{tmp, std::ios::trunc};
    out << id << '\n';
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec)
    fs::remove(tmp, ec);
}

} // namespace conclave::cluster
