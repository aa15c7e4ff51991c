// See cluster_dir.hpp.
#include "runtime/cluster/cluster_dir.hpp"

#include "runtime/cluster/certificates.hpp"
#include "runtime/node/status_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace conclave::cluster {

namespace fs = std::filesystem;
using nlohmann::json;

namespace files {

std::string read_file(const fs::path& p) {
  std::ifstream in{p};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tls_dir(const std::string& dir) {
  return (fs::path{dir} / "tls").string();
}

fs::path node_dir(const std::string& dir, uint64_t id) {
  return fs::path{dir} / ("node-" + std::to_string(id));
}

std::optional<cluster_file> load_cluster(const std::string& dir) try {
  auto text = read_file(fs::path{dir} / "cluster.json");
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return std::nullopt;
  cluster_file c;
  c.name = j.value("cluster", "");
  c.algorithm = j.value("algorithm", "");
  c.binary = j.value("binary", "");
  c.program = j.value("program", false);
  c.program_args = j.value("program_args", std::vector<std::string>{});
  c.made_by_init = j.value("made_by", "") == made_by_init_mark;
  for (auto& n : j.value("nodes", json::array()))
    c.nodes.push_back({n.value("id", uint64_t{0}), n.value("listen", ""),
                       n.value("metrics", ""), n.value("http", "")});
  return c;
} catch (const json::exception&) {
  return std::nullopt; // a field of another type than `up` writes
}

} // namespace files

using namespace files;

std::optional<client_access> client_access_of(const std::string& dir) {
  auto c = load_cluster(dir);
  if (!c || c->nodes.empty())
    return std::nullopt;
  client_access a;
  a.cluster = c->name;
  for (auto& n : c->nodes) {
    a.peers += (a.peers.empty() ? "" : ",") + std::to_string(n.id) + "@" + n.listen;
    if (!n.http.empty())
      a.http[n.id] = n.http;
  }
  // The client certificate `up` makes (DIR/tls/) or `init` (DIR/client/); a
  // directory `up` made before client certificates has only the nodes' (then
  // the first node's is used, as before).
  auto certs = client_certificate_of(tls_dir(dir));
  std::error_code ec;
  if (!fs::exists(certs.cert, ec) && c->made_by_init)
    certs = client_certificate_of((fs::path{dir} / "client").string());
  else if (!fs::exists(certs.cert, ec))
    certs = certificate_of(tls_dir(dir), c->nodes.front().id);
  if (fs::exists(certs.ca, ec)) {
    a.tls = true;
    a.ca = certs.ca;
    a.cert = certs.cert;
    a.key = certs.key;
  }
  return a;
}

uint64_t leader_named_in(const std::string& dir) {
  auto c = load_cluster(dir);
  if (!c)
    return 0;
  uint64_t leader = 0, term = 0;
  for (auto& n : c->nodes) {
    auto s = node::status_from_json(read_file(node_dir(dir, n.id) / "status.json"));
    if (s && s->running && s->leader != 0 && (leader == 0 || s->term > term)) {
      leader = s->leader;
      term = s->term;
    }
  }
  return leader;
}

} // namespace conclave::cluster
