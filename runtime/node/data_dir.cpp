#include "runtime/node/data_dir.hpp"

#include "runtime/node/status_file.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace conclave::node {

namespace fs = std::filesystem;

data_dir_claim claim_data_dir(const std::string& dir, const std::string& cluster,
                              uint64_t id) {
  data_dir_claim out;
  auto fail = [&](data_dir_problem p, std::string msg) {
    out.problem = p;
    out.message = "--data-dir " + dir + ": " + std::move(msg);
    return out;
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return fail(data_dir_problem::io, "cannot create it: " + ec.message());
  auto path = fs::path{dir} / "identity.json";
  if (!fs::exists(path, ec)) {
    nlohmann::json j{{"cluster", cluster}, {"id", id}};
    if (auto r = write_file_atomically(path.string(), j.dump() + "\n"); !r)
      return fail(data_dir_problem::io, "cannot write identity.json: " + r.error());
    out.fresh = true;
    return out;
  }
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    return fail(data_dir_problem::corrupt, "cannot read identity.json");
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("cluster") || !j.contains("id")
      || !j["cluster"].is_string() || !j["id"].is_number_unsigned())
    return fail(data_dir_problem::corrupt,
                "identity.json is not a conclave identity file (corrupt?)");
  auto had_cluster = j["cluster"].get<std::string>();
  auto had_id = j["id"].get<uint64_t>();
  if (had_cluster != cluster || had_id != id)
    return fail(data_dir_problem::other_owner, "belongs to node " + std::to_string(had_id)
                                                   + " of cluster '" + had_cluster
                                                   + "', not node " + std::to_string(id)
                                                   + " of cluster '" + cluster + "'");
  return out;
}

} // namespace conclave::node
