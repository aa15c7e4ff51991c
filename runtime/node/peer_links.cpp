#include "runtime/node/peer_links.hpp"

#include "protocols/election/type_ids.hpp"

#include "runtime/node/tls_error_queue.hpp"

#include <caf/actor_cast.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/node_id.hpp>
#include <caf/send.hpp>

#include <chrono>

namespace conclave::node {

namespace el = conclave::election;

std::string handle_identity(const caf::actor& a) {
  if (!a)
    return {};
  return to_string(a.node()) + "/" + std::to_string(a.id());
}

std::string basp_node_bytes(const caf::node_id& n) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  if (sink(n))
    return {};
  return std::string{buf.begin(), buf.end()};
}

bool tls_session_is_member(const caf::node_id& n, uint64_t member) {
  auto cert = tls_certificate_of_node(basp_node_bytes(n));
  return cert && *cert == "node-" + std::to_string(member);
}

peer_links::peer_links(membership m, std::shared_ptr<node_probe> probe,
                       std::shared_ptr<el::directory_transport> directory,
                       std::shared_ptr<const node_log> log, steady_now_fn now)
    : members_(std::move(m)), probe_(std::move(probe)), directory_(std::move(directory)),
      log_(std::move(log)), now_(std::move(now)) {}

void peer_links::up(uint64_t peer, const caf::actor& remote) {
  el::node_id id{peer};
  bool fresh = !directory_->get(id);
  directory_->put(id, caf::actor_cast<el::candidate_actor>(remote));
  if (fresh)
    ++linked_;
  probe_->peer_link(peer, true);
  log("link to node " + std::to_string(peer) + " up");
  if (candidate_)
    caf::anon_send(candidate_, conclave::election_atoms::peer_up_atom::value, id);
}

std::optional<uint64_t> peer_links::down(const caf::actor_addr& remote) {
  auto id = directory_->node_of(remote);
  if (!id)
    return std::nullopt;
  directory_->erase(*id);
  --linked_;
  probe_->peer_link(id->value, false);
  if (just_resumed(now_())) {
    log("link to node " + std::to_string(id->value)
        + " down after this process was paused: not reported as a failure");
    if (repair_ && id->value < members_.self) {
      std::lock_guard<std::mutex> guard{repair_mtx_};
      if (!repairs_stopped_)
        repairs_.push_back(repair_(id->value));
    }
    return id->value;
  }
  warn("link to node " + std::to_string(id->value) + " down");
  if (candidate_)
    caf::anon_send(candidate_, conclave::election_atoms::peer_down_atom::value, *id);
  return id->value;
}

bool peer_links::holds(uint64_t peer, const caf::actor& remote) const {
  auto linked = caf::actor_cast<caf::actor>(directory_->get(el::node_id{peer}));
  return linked && remote && linked.address() == remote.address();
}

void peer_links::forget(uint64_t peer, const caf::actor& remote) {
  if (!holds(peer, remote))
    return;
  directory_->erase(el::node_id{peer});
  --linked_;
  probe_->peer_link(peer, false);
  warn("node " + std::to_string(peer)
       + " no longer holds our link (its connection ended while another kept CAF's "
         "route): linking again");
}

std::vector<caf::actor> peer_links::stop_repairs() {
  std::lock_guard<std::mutex> guard{repair_mtx_};
  repairs_stopped_ = true;
  return std::move(repairs_);
}

namespace {
int64_t ns_of(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch())
      .count();
}
} // namespace

void peer_links::set_pause_guard(std::chrono::milliseconds threshold,
                                 std::chrono::milliseconds window) {
  pause_threshold_ = threshold;
  pause_window_ = window;
}

void peer_links::tick(std::chrono::steady_clock::time_point now) {
  auto prev = last_tick_ns_.exchange(ns_of(now));
  auto gap = std::chrono::nanoseconds{ns_of(now) - prev};
  if (prev != 0 && gap > pause_threshold_) {
    resumed_ns_ = ns_of(now);
    warn("was paused for "
         + std::to_string(
             std::chrono::duration_cast<std::chrono::milliseconds>(gap).count())
         + " ms");
  }
}

bool peer_links::just_resumed(std::chrono::steady_clock::time_point now) const {
  auto n = ns_of(now);
  auto last = last_tick_ns_.load();
  if (last != 0 && std::chrono::nanoseconds{n - last} > pause_threshold_)
    return true; // the main thread has not run since the pause yet
  return std::chrono::nanoseconds{n - resumed_ns_.load()} < pause_window_;
}

} // namespace conclave::node
