#include "runtime/node/http_watch.hpp"

#include "protocols/workflow/records.hpp"
#include "protocols/workflow/store_layout.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace conclave::node {

using nlohmann::json;

std::optional<watch_position> parse_event_id(const std::string& text) {
  auto dash = text.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == text.size())
    return std::nullopt;
  watch_position p;
  auto* b = text.data();
  auto* e = b + text.size();
  auto r1 = std::from_chars(b, b + dash, p.boot);
  if (r1.ec != std::errc{} || r1.ptr != b + dash)
    return std::nullopt;
  auto r2 = std::from_chars(b + dash + 1, e, p.seq);
  if (r2.ec != std::errc{} || r2.ptr != e)
    return std::nullopt;
  return p;
}

std::string event_id(int64_t boot, uint64_t seq) {
  return std::to_string(boot) + "-" + std::to_string(seq);
}

watch_ring::watch_ring(int64_t boot, size_t capacity, size_t max_streams)
    : boot_{boot}, capacity_{std::max<size_t>(capacity, 1)}, max_streams_{max_streams} {}

uint64_t watch_ring::publish(std::string type, std::string data) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    seq = next_seq_++;
    if (events_.size() == capacity_)
      events_.pop_front();
    events_.push_back({seq, std::move(type), std::move(data)});
  }
  cv_.notify_all();
  return seq;
}

uint64_t watch_ring::last_seq() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return next_seq_ - 1;
}

watch_batch watch_ring::read_locked(const std::optional<watch_position>& from,
                                    size_t max) const {
  watch_batch b;
  b.closed = closed_;
  if (!from)
    return b;
  uint64_t last = next_seq_ - 1;
  uint64_t oldest = events_.empty() ? next_seq_ : events_.front().seq;
  uint64_t after = from->seq;
  // Another life of the node, a position it never handed out, or events
  // between the position and the oldest one kept that were dropped.
  if (from->boot != boot_ || after > last || after + 1 < oldest) {
    b.gap = true;
    after = oldest - 1;
  }
  // Sequence numbers in the deque are consecutive: index by offset.
  size_t start = static_cast<size_t>(after + 1 - oldest);
  for (size_t i = start; i < events_.size() && b.events.size() < max; ++i)
    b.events.push_back(events_[i]);
  return b;
}

watch_batch watch_ring::read(const std::optional<watch_position>& from,
                             size_t max) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return read_locked(from, max);
}

watch_batch watch_ring::wait(const std::optional<watch_position>& from, size_t max,
                             std::chrono::steady_clock::time_point until) const {
  std::unique_lock<std::mutex> lock{mtx_};
  watch_batch b;
  cv_.wait_until(lock, until, [&] {
    b = read_locked(from, max);
    return b.closed || b.gap || !b.events.empty();
  });
  return b;
}

void watch_ring::close() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    closed_ = true;
  }
  cv_.notify_all();
}

bool watch_ring::try_open_stream() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (streams_ >= max_streams_ || closed_)
    return false;
  ++streams_;
  ever_watched_.store(true, std::memory_order_relaxed);
  return true;
}

void watch_ring::close_stream() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (streams_ > 0)
    --streams_;
}

size_t watch_ring::open_streams() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return streams_;
}

std::vector<std::pair<std::string, std::string>>
status_events(const node_status& before, const node_status& after, int64_t now_us) {
  std::vector<std::pair<std::string, std::string>> out;
  if (before.leader != after.leader || before.term != after.term
      || before.term_leader != after.term_leader || before.is_leader != after.is_leader
      || before.acting != after.acting) {
    json j{{"node", after.id},
           {"leader", after.leader},
           {"term", {{"epoch", after.term}, {"leader", after.term_leader}}},
           {"is_leader", after.is_leader},
           {"acting", after.acting},
           {"at_us", now_us}};
    out.emplace_back("leader", j.dump());
  }
  for (auto& p : after.peers) {
    auto was = std::find_if(before.peers.begin(), before.peers.end(),
                            [&](const peer_view& b) { return b.id == p.id; });
    if (was != before.peers.end() && was->connected == p.connected
        && was->state == p.state)
      continue;
    json j{{"node", after.id},      {"id", p.id},
           {"address", p.address},  {"state", p.state},
           {"linked", p.connected}, {"at_us", now_us}};
    out.emplace_back("member", j.dump());
  }
  if (before.running && !after.running)
    out.emplace_back(
        "running",
        json{{"node", after.id}, {"running", false}, {"at_us", now_us}}.dump());
  return out;
}

std::vector<std::pair<std::string, std::string>>
store_events(const replication::committed_changes& c, uint64_t node, int64_t now_us) {
  namespace wf = conclave::workflow;
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& w : c.writes) {
    if (w.collection != wf::layout::jobs || !w.after)
      continue;
    auto after = wf::decode_doc(*w.after);
    if (!after)
      continue;
    std::optional<wf::job_view> before;
    if (w.before)
      if (auto b = wf::decode_doc(*w.before))
        before = std::move(b.value());
    auto& now = after.value();
    if (before && before->job.state == now.job.state
        && before->job.current.value == now.job.current.value)
      continue;
    // The step the job is at; a finished job (current == step count) names
    // its last step.
    uint32_t step = now.job.current.value;
    uint64_t attempt = 0;
    if (!now.steps.empty()) {
      auto i = std::min<size_t>(step, now.steps.size() - 1);
      attempt = now.steps[i].attempt.value;
    }
    json j{{"node", node},
           {"id", now.job.id.value},
           {"state", wf::to_string(now.job.state)},
           {"previous", before ? json(wf::to_string(before->job.state)) : json(nullptr)},
           {"step", step},
           {"steps", now.job.step_count},
           {"attempt", attempt},
           {"lsn", c.at.value},
           {"at_us", now_us}};
    out.emplace_back("job", j.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  for (auto& l : c.leases) {
    json j{{"node", node},
           {"name", l.name},
           {"holder", l.holder},
           {"token", l.token},
           {"event", replication::to_string(l.kind)},
           {"lsn", c.at.value},
           {"at_us", now_us}};
    out.emplace_back("lease", j.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return out;
}

std::string sse_frame(int64_t boot, const watch_event& e) {
  // data is one line of JSON (json::dump escapes newlines).
  return "id: " + event_id(boot, e.seq) + "\nevent: " + e.type + "\ndata: " + e.data
         + "\n\n";
}

} // namespace conclave::node
