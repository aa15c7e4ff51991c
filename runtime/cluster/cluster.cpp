#include "runtime/cluster/cluster.hpp"

#include "runtime/cluster/certificates.hpp"
#include "runtime/cluster/child_stdio.hpp"
#include "runtime/cluster/cluster_dir.hpp"
#include "runtime/cluster/listen_ports.hpp"

#include "runtime/node/node.hpp"
#include "runtime/node/status_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <netinet/in.h>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace conclave::cluster {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_bad_input = 2;

using node_entry = member;
using files::cluster_file;
using files::load_cluster;
using files::made_by_init_mark;
using files::node_dir;
using files::read_file;
using files::tls_dir;

int bad_input(const std::string& what) {
  std::cerr << "conclave: error: " << what << '\n';
  return exit_bad_input;
}

int failure(const std::string& what) {
  std::cerr << "conclave: error: " << what << '\n';
  return exit_failure;
}

std::string cluster_json_text(const cluster_file& c) {
  json nodes = json::array();
  for (auto& n : c.nodes) {
    nodes.push_back({{"id", n.id}, {"listen", n.listen}, {"metrics", n.metrics}});
    if (!n.http.empty())
      nodes.back()["http"] = n.http;
  }
  json j{{"cluster", c.name},
         {"algorithm", c.algorithm},
         {"binary", c.binary},
         {"nodes", nodes}};
  if (c.program) {
    j["program"] = true;
    j["program_args"] = c.program_args;
  }
  if (c.made_by_init)
    j["made_by"] = made_by_init_mark;
  return j.dump(2) + "\n";
}

/// Prometheus file-based discovery (examples/prometheus/prometheus.yml): the
/// members that serve metrics.
std::string targets_json_text(const cluster_file& c) {
  json targets = json::array();
  for (auto& n : c.nodes)
    if (!n.metrics.empty())
      targets.push_back(
          {{"targets", {n.metrics}},
           {"labels", {{"cluster", c.name}, {"node", std::to_string(n.id)}}}});
  return targets.dump(2) + "\n";
}

/// Writes cluster.json and prometheus-targets.json; the error names the file.
node::result<void> save_cluster(const std::string& dir, const cluster_file& c) {
  if (auto w = node::write_file_atomically((fs::path{dir} / "cluster.json").string(),
                                           cluster_json_text(c));
      !w)
    return w;
  return node::write_file_atomically((fs::path{dir} / "prometheus-targets.json").string(),
                                     targets_json_text(c));
}

/// The commands that drive local processes refuse a `cluster init` directory.
std::optional<int> refuse_init_dir(const std::string& dir, const cluster_file& c,
                                   const std::string& command) {
  if (!c.made_by_init)
    return std::nullopt;
  return bad_input(dir
                   + " was made by `conclave cluster init` for nodes on other "
                     "hosts; `cluster "
                   + command
                   + "` works only on nodes that `cluster up` "
                     "started on this machine (see docs/deploy.md)");
}

/// State letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...), 0 if gone.
char proc_state(int pid) {
  if (pid <= 0)
    return 0;
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size())
    return 0;
  return stat[close + 2];
}

/// Whether `pid` still runs node `id` of this cluster (not a reused pid): its
/// command line passes this node's config file (`conclave node --config FILE`,
/// or `PROGRAM --config FILE ...` for `up --program`).
bool runs_node(int pid, const std::string& dir, uint64_t id) {
  auto cmd = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  auto cfg = (node_dir(dir, id) / "config.ini").string();
  return cmd.find(" --config " + cfg + " ") != std::string::npos;
}

int read_pid(const std::string& dir, uint64_t id) {
  auto text = read_file(node_dir(dir, id) / "node.pid");
  try {
    return text.empty() ? 0 : std::stoi(text);
  } catch (...) {
    return 0;
  }
}

bool alive(int pid, const std::string& dir, uint64_t id) {
  auto s = proc_state(pid);
  return s != 0 && s != 'Z' && s != 'X' && runs_node(pid, dir, id);
}

/// Reaps any child of ours that exited (the nodes `up` and `restart` started).
void reap_children() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

std::vector<node_view> views_of(const std::string& dir, const cluster_file& c) {
  std::vector<node_view> views;
  for (auto& n : c.nodes) {
    node_view v;
    v.id = n.id;
    v.address = n.listen;
    v.metrics = n.metrics;
    v.http = n.http;
    v.pid = read_pid(dir, n.id);
    v.alive = alive(v.pid, dir, n.id);
    v.stopped = v.alive && proc_state(v.pid) == 'T';
    if (auto s = node::status_from_json(read_file(node_dir(dir, n.id) / "status.json"))) {
      v.leaving = v.alive && s->pid == v.pid && !s->running;
      if (s->pid == v.pid && s->running && v.alive && !v.stopped) {
        v.reported = true;
        v.leader = s->leader;
        v.term = s->term;
        v.term_leader = s->term_leader;
        v.is_leader = s->is_leader;
        v.acting = s->acting;
        v.leader_since_us = s->leader_since_us;
        v.acting_since_us = s->acting_since_us;
        if (s->replica) {
          v.has_replica = true;
          v.replica_role = s->replica->role;
          v.commit_lsn = s->replica->commit_lsn;
          v.applied_lsn = s->replica->applied_lsn;
          v.replica_digest = s->replica->digest;
        }
      }
    }
    views.push_back(v);
  }
  return views;
}

std::string self_binary() {
  char buf[PATH_MAX];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return "conclave";
  return std::string(buf, static_cast<size_t>(n));
}

/// Starts node `id`: own session, stdio to node.log, no CONCLAVE_* variables.
/// Returns its pid, or an error (then no process is left running): without
/// node.pid nothing could stop the node later.
node::result<int> spawn_node(const std::string& dir, const cluster_file& c, uint64_t id) {
  auto nd = node_dir(dir, id);
  auto cfg = (nd / "config.ini").string();
  auto log = (nd / "node.log").string();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "CONCLAVE_", 9) != 0)
      env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args;
  if (c.program)
    args = {c.binary, "--config", cfg};
  else
    args = {"conclave", "node", "--config", cfg};
  for (auto& a : c.program_args)
    args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto pid = ::fork();
  if (pid < 0)
    return "cannot start node " + std::to_string(id) + ": " + std::strerror(errno);
  if (pid == 0) {
    ::setsid();
    redirect_child_stdio(log.c_str(), 0644);
    ::execve(c.binary.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  if (auto w = node::write_file_atomically((nd / "node.pid").string(),
                                           std::to_string(pid) + "\n");
      !w) {
    ::kill(pid, SIGKILL); // our own child, just forked
    ::waitpid(pid, nullptr, 0);
    return "node " + std::to_string(id) + " not started: " + w.error();
  }
  return static_cast<int>(pid);
}

node::result<void> write_config(const std::string& dir, const cluster_file& c,
                                const node_entry& n,
                                const std::vector<std::string>& extra, bool tls) {
  std::ostringstream peers;
  for (auto& p : c.nodes)
    peers << (&p == &c.nodes.front() ? "" : ",") << p.id << '@' << p.listen;
  std::ostringstream peers_http;
  for (auto& p : c.nodes)
    if (!p.http.empty())
      peers_http << (peers_http.tellp() > 0 ? "," : "") << p.id << '@' << p.http;
  std::ostringstream ini;
  ini << "# written by conclave cluster up\n"
      << "id = " << n.id << "\n"
      << "cluster = " << c.name << "\n"
      << "listen = " << n.listen << "\n"
      << "peers = " << peers.str() << "\n"
      << "metrics = " << n.metrics << "\n"
      << (n.http.empty() ? "" : "http = " + n.http + "\n")
      << (peers_http.tellp() > 0 ? "peers-http = " + peers_http.str() + "\n" : "")
      << "algorithm = " << c.algorithm << "\n"
      << "data-dir = " << node_dir(dir, n.id).string() << "\n";
  if (tls) {
    auto files = certificate_of(tls_dir(dir), n.id);
    ini << "tls-ca = " << files.ca << "\n"
        << "tls-cert = " << files.cert << "\n"
        << "tls-key = " << files.key << "\n";
  }
  for (auto& line : extra)
    ini << line << "\n";
  auto nd = node_dir(dir, n.id);
  std::error_code ec;
  fs::create_directories(nd, ec);
  if (ec)
    return "cannot create " + nd.string() + ": " + ec.message();
  return node::write_file_atomically((nd / "config.ini").string(), ini.str());
}

/// Sends `sig` to node `id` if it is still ours. Returns false if it is not alive.
bool signal_node(const std::string& dir, uint64_t id, int sig) {
  auto pid = read_pid(dir, id);
  if (!alive(pid, dir, id))
    return false;
  return ::kill(pid, sig) == 0;
}

/// Stops nodes: SIGCONT to the stopped, SIGTERM to all, SIGKILL after `grace`.
void stop_nodes(const std::string& dir, const cluster_file& c,
                std::chrono::milliseconds grace) {
  std::vector<uint64_t> pending;
  for (auto& n : c.nodes) {
    auto pid = read_pid(dir, n.id);
    if (!alive(pid, dir, n.id))
      continue;
    ::kill(pid, SIGCONT);
    ::kill(pid, SIGTERM);
    pending.push_back(n.id);
  }
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (!pending.empty()) {
    reap_children();
    pending.erase(
        std::remove_if(pending.begin(), pending.end(),
                       [&](uint64_t id) { return !alive(read_pid(dir, id), dir, id); }),
        pending.end());
    if (pending.empty())
      break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (auto id : pending)
        signal_node(dir, id, SIGKILL);
      deadline = std::chrono::steady_clock::now() + 2s;
      grace = 0ms;
    }
    std::this_thread::sleep_for(10ms);
  }
}

std::string last_line(const fs::path& p) {
  auto text = read_file(p);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

std::string signal_name(int sig) {
  switch (sig) {
  case SIGKILL:
    return "SIGKILL";
  case SIGSTOP:
    return "SIGSTOP";
  case SIGCONT:
    return "SIGCONT";
  case SIGTERM:
    return "SIGTERM";
  case SIGINT:
    return "SIGINT";
  default:
    return "signal " + std::to_string(sig);
  }
}

/// One notation for a term everywhere it is shown: EPOCH/LEADER (docs/design/node.md).
std::string term_text(uint64_t epoch, uint64_t leader) {
  return std::to_string(epoch) + "/" + std::to_string(leader);
}

std::string digest_text(uint64_t digest) {
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << digest;
  return out.str();
}

json view_json(const node_view& v) {
  return {{"id", v.id},
          {"address", v.address},
          {"pid", v.pid},
          {"alive", v.alive && !v.stopped},
          {"running", v.alive},
          {"stopped", v.stopped},
          {"leader", v.reported ? json(v.leader) : json(nullptr)},
          {"term", v.reported ? json(v.term) : json(nullptr)},
          {"term_leader", v.reported ? json(v.term_leader) : json(nullptr)},
          {"leaving", v.leaving},
          {"is_leader", v.reported && v.is_leader},
          {"acting", v.reported && v.acting},
          {"metrics_url", "http://" + v.metrics + "/metrics"},
          {"http", v.http.empty() ? json(nullptr) : json(v.http)},
          {"replica", v.has_replica ? json{{"role", v.replica_role},
                                           {"commit_lsn", v.commit_lsn},
                                           {"applied_lsn", v.applied_lsn},
                                           {"digest", digest_text(v.replica_digest)}}
                                    : json(nullptr)}};
}

void print_table(const std::vector<node_view>& views, std::ostream& out) {
  out << std::left << std::setw(6) << "node" << std::setw(18) << "address" << std::setw(9)
      << "pid" << std::setw(9) << "state" << std::setw(8) << "leader" << std::setw(8)
      << "term" << std::setw(12) << "role" << std::setw(11) << "replica" << std::setw(9)
      << "commit" << std::setw(9) << "applied"
      << "metrics\n";
  for (auto& v : views) {
    std::string state = !v.alive    ? "dead"
                        : v.stopped ? "stopped"
                        : v.leaving ? "leaving"
                                    : "running";
    // A leader outside its lease (quorum guard) claims the role but does not act.
    std::string role = !v.reported    ? "-"
                       : !v.is_leader ? "follower"
                       : v.acting     ? "LEADER"
                                      : "leader-idle";
    out << std::left << std::setw(6) << v.id << std::setw(18) << v.address << std::setw(9)
        << v.pid << std::setw(9) << state << std::setw(8)
        << (v.reported && v.leader ? std::to_string(v.leader) : "-") << std::setw(8)
        << (v.reported ? term_text(v.term, v.term_leader) : "-") << std::setw(12) << role
        << std::setw(11) << (v.has_replica ? v.replica_role : "-") << std::setw(9)
        << (v.has_replica ? std::to_string(v.commit_lsn) : "-") << std::setw(9)
        << (v.has_replica ? std::to_string(v.applied_lsn) : "-") << "http://" << v.metrics
        << "/metrics\n";
  }
}

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

} // namespace

std::string init_cluster_json(const std::string& cluster,
                              const std::vector<member>& members) {
  cluster_file c;
  c.name = cluster;
  c.algorithm = "bully";
  c.nodes = members;
  c.made_by_init = true;
  return cluster_json_text(c);
}

std::string prometheus_targets_json(const std::string& cluster,
                                    const std::vector<member>& members) {
  cluster_file c;
  c.name = cluster;
  c.nodes = members;
  return targets_json_text(c);
}

std::optional<agreement> agreed_leader(const std::vector<node_view>& nodes,
                                       const std::vector<uint64_t>& ignore) {
  agreement a;
  bool leader_claims = false;
  for (auto& v : nodes) {
    if (std::find(ignore.begin(), ignore.end(), v.id) != ignore.end())
      continue;
    if (!v.alive || v.stopped || v.leaving)
      continue;
    if (!v.reported || v.leader == 0)
      return std::nullopt;
    if (a.members == 0) {
      a.leader = v.leader;
      a.term = v.term;
      a.term_leader = v.term_leader;
    } else if (v.leader != a.leader || v.term != a.term
               || v.term_leader != a.term_leader) {
      return std::nullopt;
    }
    // The leader must also act (quorum guard: hold a majority's lease), so an
    // agreement is a leader that can do its work, not one waiting for acks.
    if (v.id == v.leader && v.is_leader && v.acting) {
      leader_claims = true;
      // A failover ends when the new leader acts, not when it was elected.
      a.latest_change_us = std::max(a.latest_change_us, v.acting_since_us);
    }
    a.latest_change_us = std::max(a.latest_change_us, v.leader_since_us);
    ++a.members;
  }
  if (a.members == 0 || !leader_claims)
    return std::nullopt;
  return a;
}

int parse_signal(const std::string& name) {
  auto n = name;
  std::transform(n.begin(), n.end(), n.begin(), ::toupper);
  if (n.rfind("SIG", 0) == 0)
    n = n.substr(3);
  static const std::map<std::string, int> names{
      {"KILL", SIGKILL}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}, {"TERM", SIGTERM},
      {"INT", SIGINT},   {"9", SIGKILL},    {"19", SIGSTOP},   {"18", SIGCONT},
      {"15", SIGTERM},   {"2", SIGINT}};
  auto i = names.find(n);
  return i == names.end() ? 0 : i->second;
}

std::vector<node_view> read_views(const std::string& dir) {
  auto c = load_cluster(dir);
  return c ? views_of(dir, *c) : std::vector<node_view>{};
}

int up(const up_options& o, std::ostream& out) {
  if (o.nodes < 1 || o.nodes > 64)
    return bad_input("--nodes: expected 1 to 64, got " + std::to_string(o.nodes));
  if (o.algorithm != "bully" && o.algorithm != "ring" && o.algorithm != "lease")
    return bad_input("--algorithm: expected bully, ring or lease, got '" + o.algorithm
                     + "'");
  if (o.dir.empty())
    return bad_input("--dir: required, the directory for configs, pids and logs");
  std::error_code ec;
  auto dir = fs::absolute(o.dir, ec).lexically_normal().string();
  if (!dir.empty() && dir.back() == '/')
    dir.pop_back();
  if (auto old = load_cluster(dir); old && old->made_by_init)
    return *refuse_init_dir(dir, *old, "up");
  if (auto old = load_cluster(dir))
    for (auto& v : views_of(dir, *old))
      if (v.alive)
        return bad_input(dir + " holds a running cluster (node " + std::to_string(v.id)
                         + " is alive); run `conclave cluster down --dir " + dir
                         + "` first");
  fs::create_directories(dir, ec);
  if (ec)
    return bad_input("--dir: cannot create " + dir + ": " + ec.message());

  cluster_file c;
  c.name = o.cluster;
  c.algorithm = o.algorithm;
  c.binary = self_binary();
  if (!o.program.empty()) {
    auto path = fs::absolute(o.program, ec);
    if (ec || ::access(path.c_str(), X_OK) != 0 || fs::is_directory(path, ec))
      return bad_input("--program: " + o.program + " is not an executable file");
    c.binary = path.lexically_normal().string();
    c.program = true;
    c.program_args = o.program_args;
  } else if (!o.program_args.empty()) {
    return bad_input("arguments after -- are for --program: give --program PATH");
  }
  auto started = std::chrono::steady_clock::now();
  if (!o.insecure) {
    std::vector<uint64_t> ids;
    for (size_t i = 0; i < o.nodes; ++i)
      ids.push_back(i + 1);
    if (auto m = make_certificates(tls_dir(dir), o.cluster, ids); !m)
      return failure(
          "certificates: " + m.error()
          + (m.error().rfind("cannot run", 0) == 0 ? "; or give --insecure" : ""));
  }
  for (int attempt = 1; attempt <= 3; ++attempt) {
    // Outside the ephemeral range, so that a node's port stays free for its
    // restart; a node that still finds its port taken exits with status 2
    // and `up` tries again.
    auto ports = free_listen_ports(3 * o.nodes);
    if (ports.size() != 3 * o.nodes)
      return failure("cannot find free loopback ports");
    c.nodes.clear();
    for (size_t i = 0; i < o.nodes; ++i)
      c.nodes.push_back({i + 1, "127.0.0.1:" + std::to_string(ports[3 * i]),
                         "127.0.0.1:" + std::to_string(ports[3 * i + 1]),
                         "127.0.0.1:" + std::to_string(ports[3 * i + 2])});
    if (auto w = save_cluster(dir, c); !w)
      return failure(w.error());
    for (auto& n : c.nodes) {
      if (auto w = write_config(dir, c, n, o.node_settings, !o.insecure); !w)
        return failure(w.error());
      fs::remove(node_dir(dir, n.id) / "status.json", ec);
      std::ofstream{node_dir(dir, n.id) / "node.log", std::ios::app}
          << "--- conclave cluster up (attempt " << attempt << ")\n";
    }
    std::map<int, uint64_t> children;
    for (auto& n : c.nodes) {
      auto pid = spawn_node(dir, c, n.id);
      if (!pid) {
        stop_nodes(dir, c, 2s);
        return failure(pid.error());
      }
      children[pid.value()] = n.id;
    }
    auto deadline = std::chrono::steady_clock::now() + o.timeout;
    bool retry = false;
    while (!retry) {
      int st = 0;
      auto pid = ::waitpid(-1, &st, WNOHANG);
      if (pid > 0 && children.count(pid)) {
        auto id = children[pid];
        auto why = last_line(node_dir(dir, id) / "node.log");
        stop_nodes(dir, c, 2s);
        if (WIFEXITED(st) && WEXITSTATUS(st) == node::exit_address_in_use
            && attempt < 3) {
          retry = true; // a port was taken between choosing and binding it
          break;
        }
        return failure("node " + std::to_string(id) + " exited during start-up: " + why
                       + " (log: " + (node_dir(dir, id) / "node.log").string() + ")");
      }
      auto views = views_of(dir, c);
      if (auto a = agreed_leader(views); a && a->members == o.nodes) {
        if (o.json) {
          json nodes = json::array();
          for (auto& v : views)
            nodes.push_back(view_json(v));
          out << json{{"cluster", c.name},
                      {"dir", dir},
                      {"leader", a->leader},
                      {"term", a->term},
                      {"term_leader", a->term_leader},
                      {"elapsed_ms",
                       ms_between(started, std::chrono::steady_clock::now())},
                      {"nodes", nodes}}
                     .dump(2)
              << '\n';
        } else {
          out << "cluster '" << c.name << "' up: " << o.nodes << " node(s) in " << dir
              << ", leader " << a->leader << " (term "
              << term_text(a->term, a->term_leader) << ") after " << std::fixed
              << std::setprecision(0)
              << ms_between(started, std::chrono::steady_clock::now()) << " ms\n";
          print_table(views, out);
        }
        return exit_ok;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        stop_nodes(dir, c, 2s);
        return failure("the nodes did not agree on a leader within "
                       + std::to_string(o.timeout.count()) + " ms; they were stopped "
                       + "(logs: " + dir + "/node-*/node.log)");
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  return failure("could not bind free ports after 3 attempts");
}

int status(const std::string& dir, bool json_out, std::ostream& out) {
  auto c = load_cluster(dir);
  if (!c)
    return bad_input("--dir: no cluster in " + dir + " (no readable cluster.json)");
  if (auto refused = refuse_init_dir(dir, *c, "status"))
    return *refused;
  auto views = views_of(dir, *c);
  auto a = agreed_leader(views);
  if (json_out) {
    json nodes = json::array();
    for (auto& v : views)
      nodes.push_back(view_json(v));
    out << json{{"cluster", c->name},
                {"dir", dir},
                {"algorithm", c->algorithm},
                {"leader", a ? json(a->leader) : json(nullptr)},
                {"term", a ? json(a->term) : json(nullptr)},
                {"term_leader", a ? json(a->term_leader) : json(nullptr)},
                {"nodes", nodes}}
               .dump(2)
        << '\n';
  } else {
    out << "cluster '" << c->name << "' in " << dir << ": ";
    if (a)
      out << "leader " << a->leader << " (term " << term_text(a->term, a->term_leader)
          << "), agreed by " << a->members << " live node(s)\n";
    else
      out << "no agreed leader right now\n";
    print_table(views, out);
  }
  return a ? exit_ok : exit_failure; // usable as a health check
}

int kill(const std::string& dir, uint64_t id, int sig, bool wait,
         std::chrono::milliseconds timeout, bool json_out, std::ostream& out) {
  auto c = load_cluster(dir);
  if (!c)
    return bad_input("--dir: no cluster in " + dir + " (no readable cluster.json)");
  if (auto refused = refuse_init_dir(dir, *c, "kill"))
    return *refused;
  auto before = agreed_leader(views_of(dir, *c));
  if (id == 0) { // --leader
    if (!before)
      return failure(
          "the nodes do not agree on a leader right now; name one with --node");
    id = before->leader;
  }
  if (std::none_of(c->nodes.begin(), c->nodes.end(),
                   [&](const node_entry& n) { return n.id == id; }))
    return bad_input("--node: no node " + std::to_string(id) + " in " + dir);
  auto t0_us = node::wall_clock_us();
  auto t0 = std::chrono::steady_clock::now();
  if (!signal_node(dir, id, sig))
    return failure("node " + std::to_string(id) + " is not running");
  if (!wait) {
    if (json_out)
      out << json{{"node", id}, {"signal", signal_name(sig)}}.dump() << '\n';
    else
      out << "sent " << signal_name(sig) << " to node " << id << '\n';
    return exit_ok;
  }
  // Wait until the live nodes agree on a leader exactly as `status` judges it
  // (so a `status` right after agrees); if the signal took the leader out, on a
  // new one with a higher term, and only once the old leader is gone, stopped
  // or leaving (until then it still claims the old term, and `status` would
  // see no agreement).
  bool takes_out = sig == SIGKILL || sig == SIGSTOP || sig == SIGTERM || sig == SIGINT;
  bool was_leader = before && before->leader == id && takes_out;
  auto deadline = t0 + timeout;
  for (;;) {
    auto views = views_of(dir, *c);
    auto a = agreed_leader(views);
    bool done = a && (!was_leader || (a->leader != id && a->term > before->term));
    if (sig == SIGCONT && done) // the resumed node must have caught up too
      done = std::any_of(views.begin(), views.end(), [&](const node_view& v) {
        return v.id == id && v.reported && v.leader == a->leader && v.term == a->term
               && v.term_leader == a->term_leader;
      });
    if (done) {
      auto observed = ms_between(t0, std::chrono::steady_clock::now());
      double failover = was_leader ? (a->latest_change_us - t0_us) / 1000.0 : 0.0;
      if (json_out) {
        out << json{{"node", id},
                    {"signal", signal_name(sig)},
                    {"old_leader", before ? json(before->leader) : json(nullptr)},
                    {"old_term", before ? json(before->term) : json(nullptr)},
                    {"old_term_leader",
                     before ? json(before->term_leader) : json(nullptr)},
                    {"leader", a->leader},
                    {"term", a->term},
                    {"term_leader", a->term_leader},
                    {"leader_changed", was_leader},
                    {"failover_ms", was_leader ? json(failover) : json(nullptr)},
                    {"observed_ms", observed}}
                   .dump()
            << '\n';
      } else {
        out << "sent " << signal_name(sig) << " to node " << id;
        if (was_leader)
          out << " (the leader); new leader " << a->leader << " (term "
              << term_text(a->term, a->term_leader) << "), agreed by all live nodes "
              << std::fixed << std::setprecision(1) << failover
              << " ms after the signal\n";
        else
          out << "; leader " << a->leader << " (term "
              << term_text(a->term, a->term_leader) << ")\n";
      }
      return exit_ok;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return failure("sent " + signal_name(sig) + " to node " + std::to_string(id)
                     + ", but the live nodes did not agree on a leader within "
                     + std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(1ms);
  }
}

int restart(const std::string& dir, uint64_t id, std::chrono::milliseconds timeout,
            bool json_out, std::ostream& out) {
  auto c = load_cluster(dir);
  if (!c)
    return bad_input("--dir: no cluster in " + dir + " (no readable cluster.json)");
  if (auto refused = refuse_init_dir(dir, *c, "restart"))
    return *refused;
  auto entry = std::find_if(c->nodes.begin(), c->nodes.end(),
                            [&](const node_entry& n) { return n.id == id; });
  if (entry == c->nodes.end())
    return bad_input("--node: no node " + std::to_string(id) + " in " + dir);
  cluster_file one = *c;
  one.nodes = {*entry};
  stop_nodes(dir, one, 3s);
  auto spawned = spawn_node(dir, *c, id);
  if (!spawned)
    return failure(spawned.error());
  auto pid = spawned.value();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      // Its port may be held a while longer by someone else (a cluster made
      // before ports were chosen outside the ephemeral range, where any
      // outgoing connection may take it): try again until the timeout.
      if (WIFEXITED(st) && WEXITSTATUS(st) == node::exit_address_in_use
          && std::chrono::steady_clock::now() + 200ms < deadline) {
        std::this_thread::sleep_for(200ms);
        auto again = spawn_node(dir, *c, id);
        if (!again)
          return failure(again.error());
        pid = again.value();
        continue;
      }
      return failure("node " + std::to_string(id) + " exited during start-up: "
                     + last_line(node_dir(dir, id) / "node.log"));
    }
    auto views = views_of(dir, *c);
    auto a = agreed_leader(views);
    auto me = std::find_if(views.begin(), views.end(),
                           [&](const node_view& v) { return v.id == id; });
    if (a && me != views.end() && me->reported && me->leader == a->leader) {
      if (json_out)
        out << json{{"node", id},
                    {"pid", pid},
                    {"leader", a->leader},
                    {"term", term_text(a->term, a->term_leader)}}
                   .dump()
            << '\n';
      else
        out << "node " << id << " restarted (pid " << pid << "); leader " << a->leader
            << " (term " << term_text(a->term, a->term_leader) << ")\n";
      return exit_ok;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return failure("node " + std::to_string(id) + " restarted (pid "
                     + std::to_string(pid) + ") but did not agree on a leader within "
                     + std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(10ms);
  }
}

int down(const std::string& dir, bool json_out, std::ostream& out) {
  auto c = load_cluster(dir);
  if (!c)
    return bad_input("--dir: no cluster in " + dir + " (no readable cluster.json)");
  if (auto refused = refuse_init_dir(dir, *c, "down"))
    return *refused;
  size_t running = 0;
  for (auto& v : views_of(dir, *c))
    running += v.alive ? 1 : 0;
  stop_nodes(dir, *c, 5s);
  if (json_out)
    out << json{{"cluster", c->name}, {"stopped", running}, {"dir", dir}}.dump() << '\n';
  else
    out << "cluster '" << c->name << "' down: stopped " << running
        << " node(s); logs stay in " << dir << '\n';
  return exit_ok;
}

} // namespace conclave::cluster
