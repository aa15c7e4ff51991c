#include "runtime/cluster/cluster_init.hpp"

#include "runtime/cluster/certificates.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/node/status_file.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace conclave::cluster {

namespace fs = std::filesystem;

// Named, not anonymous: the unity build compiles this file with cluster.cpp.
namespace init_detail {

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_bad_input = 2;

std::string in_quotes(std::string_view s) {
  return "'" + std::string{s} + "'";
}

bool is_wildcard(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

/// A path written into config files and the unit: absolute, and nothing an
/// INI reader or systemd would split or take as a comment.
std::optional<std::string> path_problem(const std::string& path) {
  if (path.empty() || path.front() != '/')
    return std::string{"expected an absolute path on the hosts, got "} + in_quotes(path);
  for (char c : path)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '#' || c == ';' || c == '"'
        || c == '\'' || c == ',' || c == '%' || c == '\\'
        || std::iscntrl(static_cast<unsigned char>(c)))
      return "no spaces, quotes, ',', '#', ';', '%' or '\\' please, got "
             + in_quotes(path);
  return std::nullopt;
}

std::string node_name(uint64_t id) {
  return "node-" + std::to_string(id);
}

std::string on_host(const init_options& o, const std::string& file) {
  return (fs::path{o.config_dir} / file).string();
}

std::vector<member> members_of(const init_options& o,
                               const std::vector<init_host>& hosts) {
  std::vector<member> m;
  for (auto& h : hosts)
    m.push_back(
        {h.id, h.address.to_string(),
         o.metrics_port == 0
             ? std::string{}
             : node::address{h.address.host, static_cast<uint16_t>(o.metrics_port)}
                   .to_string()});
  return m;
}

} // namespace init_detail

node::result<std::vector<init_host>> parse_hosts(std::string_view text) {
  using namespace init_detail;
  // A node's own --listen may leave HOST out (loopback); another host cannot.
  if (auto at = text.find("@:"); at != std::string_view::npos) {
    auto from = text.rfind(',', at);
    from = from == std::string_view::npos ? 0 : from + 1;
    auto entry = text.substr(from, text.find(',', at) - from);
    while (!entry.empty() && entry.front() == ' ')
      entry.remove_prefix(1);
    return "in " + in_quotes(entry)
           + ": expected HOST:PORT with the address the other hosts reach it at";
  }
  auto members = node::parse_members(text);
  if (!members)
    return members.error();
  if (members.value().empty())
    return std::string{"expected ID@HOST:PORT,... (one entry per node), got nothing"};
  std::vector<init_host> hosts;
  std::map<std::string, uint64_t> by_address;
  for (auto& [id, addr] : members.value()) {
    if (is_wildcard(addr.host))
      return "in " + in_quotes(std::to_string(id) + "@" + addr.to_string()) + ": "
             + addr.host + " is a wildcard; give the address the other hosts reach it at";
    auto [i, fresh] = by_address.emplace(addr.to_string(), id);
    if (!fresh)
      return "nodes " + std::to_string(i->second) + " and " + std::to_string(id)
             + " share the address " + addr.to_string();
    hosts.push_back({id, addr});
  }
  return hosts;
}

std::string node_config_text(const init_options& o, const std::vector<init_host>& hosts,
                             const init_host& self) {
  using namespace init_detail;
  std::ostringstream peers;
  for (auto& h : hosts)
    peers << (&h == &hosts.front() ? "" : ",") << h.id << '@' << h.address.to_string();
  auto n = node_name(self.id);
  std::ostringstream ini;
  ini << "# written by conclave cluster init: node " << self.id << " of cluster '"
      << o.cluster << "'\n"
      << "# install as " << on_host(o, n + ".conf") << " on " << self.address.host
      << ", with " << n << ".pem, " << n << ".key and ca.pem next to it\n"
      << "id = " << self.id << "\n"
      << "cluster = " << o.cluster << "\n"
      << "listen = " << self.address.to_string() << "\n"
      << "peers = " << peers.str() << "\n";
  if (o.metrics_port != 0)
    ini << "metrics = "
        << node::address{self.address.host, static_cast<uint16_t>(o.metrics_port)}
               .to_string()
        << "\n";
  ini << "data-dir = " << (fs::path{o.data_dir} / n).string() << "\n"
      << "tls-ca = " << on_host(o, "ca.pem") << "\n"
      << "tls-cert = " << on_host(o, n + ".pem") << "\n"
      << "tls-key = " << on_host(o, n + ".key") << "\n";
  return ini.str();
}

std::string systemd_unit_text(const init_options& o) {
  using namespace init_detail;
  std::ostringstream u;
  u << "# conclave node, one instance per node id: conclave-node@ID.service\n"
    << "# written by conclave cluster init for cluster '" << o.cluster << "'.\n"
    << "# Install as /etc/systemd/system/conclave-node@.service, then\n"
    << "#   systemctl daemon-reload && systemctl enable --now conclave-node@ID\n"
    << "# It runs as user conclave, which must be able to read "
    << on_host(o, "node-ID.key") << "\n"
    << "# and write " << o.data_dir << "/node-ID (see docs/deploy.md).\n"
    << "[Unit]\n"
    << "Description=conclave node %i (cluster " << o.cluster << ")\n"
    << "Wants=network-online.target\n"
    << "After=network-online.target\n"
    << "\n"
    << "[Service]\n"
    << "Type=simple\n"
    << "User=conclave\n"
    << "Group=conclave\n"
    << "ExecStart=" << o.binary << " node --config " << on_host(o, "node-%i.conf") << "\n"
    << "# SIGTERM: a leader resigns first, the node exits 0.\n"
    << "KillSignal=SIGTERM\n"
    << "TimeoutStopSec=10\n"
    << "Restart=on-failure\n"
    << "RestartSec=2\n"
    << "# Exit 2 is bad input (a config or certificate problem): restarting\n"
    << "# would only fail again. Exit 4 (address in use) is retried.\n"
    << "RestartPreventExitStatus=2\n";
  // systemd makes /var/lib/NAME and gives it to the user; elsewhere the user does.
  std::string_view state{o.data_dir};
  if (state.rfind("/var/lib/", 0) == 0 && state.size() > 9)
    u << "StateDirectory=" << state.substr(9) << "\n"
      << "StateDirectoryMode=0700\n";
  u << "\n"
    << "[Install]\n"
    << "WantedBy=multi-user.target\n";
  return u.str();
}

node::result<init_plan> plan_init(const init_options& o) {
  using namespace init_detail;
  init_plan plan;
  if (o.hosts.find_first_not_of(" \t") == std::string::npos)
    return std::string{"--hosts: required, the nodes as ID@HOST:PORT,..."};
  auto hosts = parse_hosts(o.hosts);
  if (!hosts)
    return "--hosts: " + hosts.error();
  plan.hosts = hosts.value();
  if (o.dir.empty())
    return std::string{"--dir: required, the directory to write the files to"};
  if (o.cluster.empty() || o.cluster.size() > 64
      || o.cluster.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             "0123456789._-")
             != std::string::npos)
    return "--cluster: expected 1 to 64 letters, digits, '.', '_' or '-', got "
           + in_quotes(o.cluster);
  if (o.ca_cert.empty() != o.ca_key.empty())
    return std::string{o.ca_cert.empty() ? "--ca-key: given without --ca-cert"
                                         : "--ca-cert: given without --ca-key (the "
                                           "CA's private key signs the certificates)"};
  if (o.metrics_port > 65535)
    return "--metrics-port: expected 1 to 65535, got " + std::to_string(o.metrics_port);
  if (o.metrics_port != 0) {
    std::map<std::string, uint64_t> by_host;
    for (auto& h : plan.hosts) {
      if (h.address.port == o.metrics_port)
        return "--metrics-port: " + std::to_string(o.metrics_port)
               + " is also the peer port of node " + std::to_string(h.id);
      auto [i, fresh] = by_host.emplace(h.address.host, h.id);
      if (!fresh)
        return "--metrics-port: nodes " + std::to_string(i->second) + " and "
               + std::to_string(h.id) + " share the host " + h.address.host
               + " and cannot both serve metrics on port "
               + std::to_string(o.metrics_port);
    }
  }
  for (auto [value, flag] :
       {std::pair{&o.data_dir, "--data-dir"}, std::pair{&o.config_dir, "--config-dir"},
        std::pair{&o.binary, "--binary"}})
    if (auto why = path_problem(*value))
      return std::string{flag} + ": " + *why;
  if (o.days == 0 || o.days > 36500)
    return "--days: expected 1 to 36500, got " + std::to_string(o.days);

  auto members = members_of(o, plan.hosts);
  plan.files.push_back({"cluster.json", 0644, init_cluster_json(o.cluster, members), {}});
  if (o.metrics_port != 0)
    plan.files.push_back({"prometheus-targets.json",
                          0644,
                          prometheus_targets_json(o.cluster, members),
                          {}});
  for (auto& h : plan.hosts) {
    auto n = node_name(h.id);
    plan.files.push_back(
        {n + "/" + n + ".conf", 0644, node_config_text(o, plan.hosts, h), {}});
    plan.files.push_back({n + "/ca.pem", 0644, {}, "ca.pem"});
    plan.files.push_back({n + "/" + n + ".pem", 0644, {}, n + ".pem"});
    plan.files.push_back({n + "/" + n + ".key", 0600, {}, n + ".key"});
  }
  plan.files.push_back({"client/ca.pem", 0644, {}, "ca.pem"});
  plan.files.push_back({"client/client.pem", 0644, {}, "client.pem"});
  plan.files.push_back({"client/client.key", 0600, {}, "client.key"});
  plan.files.push_back({"conclave-node@.service", 0644, systemd_unit_text(o), {}});
  return plan;
}

int init(const init_options& o, std::ostream& out) {
  using namespace init_detail;
  auto bad = [](const std::string& what) {
    std::cerr << "conclave: error: " << what << '\n';
    return init_detail::exit_bad_input;
  };
  auto fail = [](const std::string& what) {
    std::cerr << "conclave: error: " << what << '\n';
    return init_detail::exit_failure;
  };
  auto plan = plan_init(o);
  if (!plan)
    return bad(plan.error());
  std::error_code ec;
  auto dir = fs::absolute(o.dir, ec).lexically_normal();
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec))
      return bad("--dir: " + dir.string() + " exists and is not a directory");
    if (fs::directory_iterator{dir, ec} != fs::directory_iterator{})
      return bad(
          "--dir: " + dir.string()
          + " is not empty; give a new or empty directory (nothing is overwritten)");
  }
  for (auto [file, flag] :
       {std::pair{&o.ca_cert, "--ca-cert"}, std::pair{&o.ca_key, "--ca-key"}})
    if (!file->empty() && ::access(file->c_str(), R_OK) != 0)
      return bad(std::string{flag} + ": cannot read " + in_quotes(*file));
  fs::create_directories(dir, ec);
  if (ec)
    return bad("--dir: cannot create " + dir.string() + ": " + ec.message());

  // One certificate step for every node and the client, in OUT/ca/.
  auto ca_dir = (dir / "ca").string();
  certificate_options certs;
  certs.days = o.days;
  certs.ca_days = o.days * 10;
  certs.ca_name = o.cluster + " CA";
  if (!o.ca_cert.empty()) {
    certs.ca_cert = fs::absolute(o.ca_cert, ec).string();
    certs.ca_key = fs::absolute(o.ca_key, ec).string();
  }
  std::vector<uint64_t> ids;
  for (auto& h : plan.value().hosts)
    ids.push_back(h.id);
  if (auto made = make_certificates(ca_dir, o.cluster, ids, certs); !made)
    return fail("certificates: " + made.error());

  for (auto& f : plan.value().files) {
    auto target = dir / f.path;
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      return fail("cannot create " + target.parent_path().string() + ": " + ec.message());
    if (!f.from_ca_dir.empty()) {
      fs::copy_file(fs::path{ca_dir} / f.from_ca_dir, target, ec);
      if (ec)
        return fail("cannot copy " + (fs::path{ca_dir} / f.from_ca_dir).string() + " to "
                    + target.string() + ": " + ec.message());
    } else if (auto w = node::write_file_atomically(target.string(), f.content); !w) {
      return fail(w.error());
    }
    if (::chmod(target.c_str(), f.mode) != 0)
      return fail("cannot set the mode of " + target.string() + ": "
                  + std::strerror(errno));
  }
  // The node and client keys now live in their own directories only; OUT/ca/
  // keeps the CA (its key only if made here), the serials and the tool's log.
  for (auto& entry : fs::directory_iterator{ca_dir, ec}) {
    auto name = entry.path().filename().string();
    if (name != "ca.pem" && name != "ca.key" && name != "ca.srl" && name != "openssl.log")
      fs::remove(entry.path(), ec);
  }

  if (o.json) {
    auto nodes = nlohmann::json::array();
    for (auto& h : plan.value().hosts) {
      auto n = node_name(h.id);
      nodes.push_back({{"id", h.id},
                       {"address", h.address.to_string()},
                       {"files", (dir / n).string()},
                       {"install_to", o.config_dir},
                       {"unit", "conclave-node@" + std::to_string(h.id)}});
    }
    auto files = nlohmann::json::array();
    for (auto& f : plan.value().files)
      files.push_back((dir / f.path).string());
    out << nlohmann::json{{"cluster", o.cluster},
                          {"dir", dir.string()},
                          {"nodes", nodes},
                          {"client", (dir / "client").string()},
                          {"systemd_unit", (dir / "conclave-node@.service").string()},
                          {"ca_key", o.ca_cert.empty() ? nlohmann::json(
                                         (dir / "ca" / "ca.key").string())
                                                       : nlohmann::json(nullptr)},
                          {"files", files}}
               .dump(2)
        << '\n';
    return init_detail::exit_ok;
  }
  out << "cluster '" << o.cluster << "': files for " << plan.value().hosts.size()
      << " node(s) in " << dir.string() << "\n";
  for (auto& h : plan.value().hosts) {
    auto n = node_name(h.id);
    out << "  " << h.address.host << ": copy " << (dir / n).string() << "/* to "
        << o.config_dir << "/, then: systemctl enable --now conclave-node@" << h.id
        << "\n";
  }
  out << "  every host: " << (dir / "conclave-node@.service").string()
      << " to /etc/systemd/system/\n"
      << "  clients: conclave kv --dir " << dir.string() << " get KEY\n";
  if (o.ca_cert.empty())
    out << "  keep " << (dir / "ca" / "ca.key").string()
        << " off the nodes: it signs new members' certificates\n";
  return init_detail::exit_ok;
}

} // namespace conclave::cluster
