#include "runtime/node/status_file.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace conclave::node {

std::string to_json(const node_status& s) {
  nlohmann::json peers = nlohmann::json::array();
  for (auto& p : s.peers)
    peers.push_back({{"id", p.id},
                     {"address", p.address},
                     {"connected", p.connected},
                     {"state", p.state}});
  nlohmann::json j{{"id", s.id},
                   {"cluster", s.cluster},
                   {"address", s.address},
                   {"pid", s.pid},
                   {"running", s.running},
                   {"leader", s.leader},
                   {"term", s.term},
                   {"term_leader", s.term_leader},
                   {"is_leader", s.is_leader},
                   {"acting", s.acting},
                   {"leader_since_us", s.leader_since_us},
                   {"acting_since_us", s.acting_since_us},
                   {"peers", peers}};
  if (s.replica) {
    auto& r = *s.replica;
    char digest[17];
    std::snprintf(digest, sizeof(digest), "%016llx",
                  static_cast<unsigned long long>(r.digest));
    j["replica"] = {{"role", r.role},
                    {"serving", r.serving},
                    {"commit_lsn", r.commit_lsn},
                    {"applied_lsn", r.applied_lsn},
                    {"durable_lsn", r.durable_lsn},
                    {"last_lsn", r.last_lsn},
                    {"digest", std::string{digest}},
                    {"durable_storage", r.durable_storage},
                    {"checkpoint_lsn", r.checkpoint_lsn},
                    {"checkpoints_written", r.checkpoints_written},
                    {"snapshots_sent", r.snapshots_sent},
                    {"snapshots_installed", r.snapshots_installed},
                    {"session_duplicates", r.session_duplicates},
                    {"healing", r.healing}};
  }
  if (s.last_suspicion) {
    auto& v = *s.last_suspicion;
    j["last_suspicion"] = {{"peer", v.peer},
                           {"outcome", v.outcome},
                           {"silence_ms", v.silence_ms},
                           {"threshold_ms", v.threshold_ms},
                           {"timer_late_ms", v.timer_late_ms},
                           {"at_us", v.at_us}};
  }
  return j.dump(2) + "\n";
}

std::optional<node_status> status_from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return std::nullopt;
  try {
    node_status s;
    s.id = j.at("id").get<uint64_t>();
    s.cluster = j.value("cluster", "");
    s.address = j.value("address", "");
    s.pid = j.value("pid", 0);
    s.running = j.value("running", true);
    s.leader = j.value("leader", uint64_t{0});
    s.term = j.value("term", uint64_t{0});
    s.term_leader = j.value("term_leader", uint64_t{0});
    s.is_leader = j.value("is_leader", false);
    s.acting = j.value("acting", false);
    s.leader_since_us = j.value("leader_since_us", int64_t{0});
    s.acting_since_us = j.value("acting_since_us", int64_t{0});
    for (auto& p : j.value("peers", nlohmann::json::array()))
      s.peers.push_back({p.value("id", uint64_t{0}), p.value("address", ""),
                         p.value("connected", false), p.value("state", "")});
    if (j.contains("replica") && j["replica"].is_object()) {
      auto& r = j["replica"];
      replica_summary out;
      out.role = r.value("role", "");
      out.serving = r.value("serving", false);
      out.commit_lsn = r.value("commit_lsn", uint64_t{0});
      out.applied_lsn = r.value("applied_lsn", uint64_t{0});
      out.durable_lsn = r.value("durable_lsn", uint64_t{0});
      out.last_lsn = r.value("last_lsn", uint64_t{0});
      out.digest = std::stoull(r.value("digest", std::string{"0"}), nullptr, 16);
      out.durable_storage = r.value("durable_storage", false);
      out.checkpoint_lsn = r.value("checkpoint_lsn", uint64_t{0});
      out.checkpoints_written = r.value("checkpoints_written", uint64_t{0});
      out.snapshots_sent = r.value("snapshots_sent", uint64_t{0});
      out.snapshots_installed = r.value("snapshots_installed", uint64_t{0});
      out.session_duplicates = r.value("session_duplicates", uint64_t{0});
      out.healing = r.value("healing", false);
      s.replica = out;
    }
    if (j.contains("last_suspicion") && j["last_suspicion"].is_object()) {
      auto& v = j["last_suspicion"];
      s.last_suspicion =
          suspicion_view{v.value("peer", uint64_t{0}),  v.value("outcome", ""),
                         v.value("silence_ms", 0.0),    v.value("threshold_ms", 0.0),
                         v.value("timer_late_ms", 0.0), v.value("at_us", int64_t{0})};
    }
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  } catch (const std::logic_error&) { // a digest that is not hex
    return std::nullopt;
  }
}

result<void> write_file_atomically(const std::string& path, const std::string& content) {
  auto tmp = path + ".tmp";
  {
    std::ofstream out{tmp, std::ios::trunc | std::ios::binary};
    if (!out)
      return "cannot write " + tmp;
    out << content;
    out.flush();
    if (!out)
      return "cannot write " + tmp;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return "cannot replace " + path;
  return outcome::success();
}

int64_t wall_clock_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

status_writer::status_writer(std::string path, node_status initial)
    : path_(std::move(path)), status_(std::move(initial)) {
  std::lock_guard<std::mutex> guard{mtx_};
  write_locked();
}

void status_writer::update_leadership(
    uint64_t leader, uint64_t term, uint64_t term_leader, bool is_leader, bool acting,
    const std::map<uint64_t, std::string>& peer_states) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& s = status_;
  // Called after every input of the candidate (each heartbeat and ack): when
  // nothing changed, skip rendering the JSON to find that out.
  bool same = s.leader == leader && s.term == term && s.term_leader == term_leader
              && s.is_leader == is_leader && s.acting == acting;
  for (auto& p : s.peers)
    if (auto i = peer_states.find(p.id); same && i != peer_states.end())
      same = p.state == i->second;
  if (same)
    return;
  if (s.leader != leader || s.term != term || s.term_leader != term_leader
      || s.is_leader != is_leader)
    s.leader_since_us = wall_clock_us();
  if (acting && !s.acting)
    s.acting_since_us = wall_clock_us();
  s.leader = leader;
  s.term = term;
  s.term_leader = term_leader;
  s.is_leader = is_leader;
  s.acting = acting;
  for (auto& p : s.peers)
    if (auto i = peer_states.find(p.id); i != peer_states.end())
      p.state = i->second;
  write_locked();
}

void status_writer::set_connected(uint64_t peer, bool connected) {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& p : status_.peers)
    if (p.id == peer)
      p.connected = connected;
  write_locked();
}

void status_writer::set_running(bool running) {
  std::lock_guard<std::mutex> guard{mtx_};
  status_.running = running;
  if (!running) {
    status_.is_leader = false;
    status_.acting = false;
  }
  write_locked();
}

void status_writer::update_replica(const replica_summary& r) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (status_.replica == r)
    return;
  status_.replica = r;
  write_locked();
}

void status_writer::set_last_suspicion(const suspicion_view& v) {
  std::lock_guard<std::mutex> guard{mtx_};
  status_.last_suspicion = v;
  write_locked();
}

node_status status_writer::snapshot() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return status_;
}

void status_writer::set_listener(std::function<void(const node_status&)> listener) {
  std::lock_guard<std::mutex> guard{mtx_};
  listener_ = std::move(listener);
}

void status_writer::write_locked() {
  if (listener_)
    listener_(status_);
  if (path_.empty())
    return;
  auto text = to_json(status_);
  if (text == last_written_)
    return;
  if (write_file_atomically(path_, text))
    last_written_ = std::move(text);
}

} // namespace conclave::node
