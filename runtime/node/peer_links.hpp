// The node's transport state: which members are linked (handshake done) and
// through which remote candidate handle. The gate (accepting side) and the
// connectors (dialing side) call up()/down(); this fills the candidate's
// directory_transport and tells the candidate (peer_up / peer_down), the
// metrics and status.json. Thread-safe (the directory has its own lock).
#pragma once

#include "actors/election/candidate_actor.hpp"
#include "actors/election/directory_transport.hpp"
#include "runtime/node/membership.hpp"
#include "runtime/node/node_probe.hpp"
#include "runtime/node/peer_identity.hpp"

#include <caf/actor.hpp>
#include <caf/node_id.hpp>

#include <atomic>
#include <chrono>
#include <climits>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace conclave::node {

/// Handshake atoms (plain atom constants: built-in types only on this link).
using hello_atom = caf::atom_constant<caf::atom("cn_hello")>;
using dial_atom = caf::atom_constant<caf::atom("cn_dial")>;
/// Identity challenge before the hello, with TLS only (peer_identity.hpp).
using challenge_atom = caf::atom_constant<caf::atom("cn_chall")>;

/// What an identity proof says about a candidate handle: its CAF node id and
/// actor id ("" for none). The same on both ends of a connection.
std::string handle_identity(const caf::actor& a);

/// `n` as CAF 0.17's BASP serializes it (what tls_certificate_of_node looks up).
std::string basp_node_bytes(const caf::node_id& n);

/// With TLS: whether the TLS session that speaks for CAF node `n` holds the
/// certificate of member `member` (subject CN "node-<member>"). Messages from
/// that node arrive over that session (basp_source_guard.hpp).
bool tls_session_is_member(const caf::node_id& n, uint64_t member);
/// Replica host exchange between members, and a client asking for the replica
/// (gate_actor.hpp).
using replica_hello_atom = caf::atom_constant<caf::atom("cn_rhello")>;
using client_hello_atom = caf::atom_constant<caf::atom("cn_chello")>;
/// A ticket for a liveness connection (liveness_watch.hpp), after the hello.
using liveness_atom = caf::atom_constant<caf::atom("cn_live")>;
/// The dialer asks the gate whether it still holds the dialer's link
/// (gate_actor.hpp), and its connector's timer for asking.
using link_check_atom = caf::atom_constant<caf::atom("cn_lcheck")>;
using check_timer_atom = caf::atom_constant<caf::atom("cn_ctimer")>;

struct replica_endpoint; // replica_link.hpp
class liveness_watch;    // liveness_watch.hpp

/// The candidate's transport in a node: sends through the directory, but leaves
/// watching to the links (gate and connectors monitor the remote candidates and
/// apply the pause guard before reporting peer_down).
class node_transport final : public election::transport {
public:
  explicit node_transport(std::shared_ptr<election::directory_transport> d)
      : directory_(std::move(d)) {}
  void send(caf::local_actor* self, election::node_id to,
            const election::message& m) override {
    directory_->send(self, to, m);
  }
  void watch(caf::local_actor*, election::node_id) override {}
  std::optional<election::node_id> node_of(const caf::actor_addr&) const override {
    return std::nullopt; // down messages of peers are the links' business
  }
  /// Only the candidate a member's identity proof named speaks for it.
  bool admits(const caf::strong_actor_ptr& sender,
              election::node_id from) const override {
    return directory_->admits(sender, from);
  }

private:
  std::shared_ptr<election::directory_transport> directory_;
};

class peer_links {
public:
  /// `now` is the pause guard's clock (a seam for tests).
  peer_links(
      membership m, std::shared_ptr<node_probe> probe,
      std::shared_ptr<election::directory_transport> directory,
      std::shared_ptr<const node_log> log,
      steady_now_fn now = [] { return std::chrono::steady_clock::now(); });

  const membership& members() const { return members_; }
  node_probe& probe() { return *probe_; }
  std::shared_ptr<election::directory_transport> directory() const { return directory_; }

  void set_candidate(election::candidate_actor c) { candidate_ = std::move(c); }
  const election::candidate_actor& candidate() const { return candidate_; }

  /// With TLS: this node's certificate and key and the CA, for the identity
  /// proofs of the handshake (set once, before start). None: plaintext, no proofs.
  void set_authenticator(std::shared_ptr<const peer_authenticator> a) {
    auth_ = std::move(a);
  }
  /// With TLS: whether the TLS session speaking for CAF node `n` holds member
  /// `member`'s certificate (tls_session_is_member; tests replace it).
  bool session_is_member(const caf::node_id& n, uint64_t member) const {
    return session_check_(n, member);
  }
  void set_session_check(std::function<bool(const caf::node_id&, uint64_t)> f) {
    session_check_ = std::move(f);
  }
  const peer_authenticator* authenticator() const { return auth_.get(); }
  /// The node's replica (set once, before the gate and connectors run); null
  /// when the node hosts none.
  void set_replica(std::shared_ptr<replica_endpoint> r) { replica_ = std::move(r); }
  const std::shared_ptr<replica_endpoint>& replica() const { return replica_; }
  /// This node's incarnation (its candidate's; set once, before start).
  void set_incarnation(uint64_t i) { incarnation_ = i; }
  uint64_t incarnation() const { return incarnation_; }
  /// The liveness connections (set once, before the gate and connectors run);
  /// null when proofs of death are off.
  void set_liveness(std::shared_ptr<liveness_watch> w) { liveness_ = std::move(w); }
  const std::shared_ptr<liveness_watch>& liveness() const { return liveness_; }

  /// The handshake with `peer` succeeded; `remote` is its candidate.
  void up(uint64_t peer, const caf::actor& remote);
  /// A monitored remote candidate went down: if it is the current handle of a
  /// member, unlink it. Returns the member's id, if it was one.
  std::optional<uint64_t> down(const caf::actor_addr& remote);
  /// Whether `remote` is the candidate linked as member `peer` here.
  bool holds(uint64_t peer, const caf::actor& remote) const;
  /// The dialer's side of a link the peer no longer holds (its gate said so)
  /// while CAF kept the connection's proxies alive: unlink it without telling
  /// the candidate (the connector links again at once).
  void forget(uint64_t peer, const caf::actor& remote);

  /// Pause guard. The main thread calls this every few milliseconds; a gap much
  /// longer than its period means this process was frozen (SIGSTOP, a VM pause).
  /// Its links then drop one after another as it reads what piled up: the peers
  /// closed them during the pause. Such drops say nothing about the peers, so for
  /// `window` after a pause (or while the main thread has not yet noticed one)
  /// they are not reported to the candidate as peer_down; the peers redial, and
  /// the heartbeat detector judges the leader as usual.
  void tick(std::chrono::steady_clock::time_point now);
  void set_pause_guard(std::chrono::milliseconds threshold,
                       std::chrono::milliseconds window);
  bool just_resumed(std::chrono::steady_clock::time_point now) const;

  /// Called (with the member's id) when the link to a lower-id member drops
  /// right after a pause. Such a member normally dials us, but its new
  /// connection may have come up while we were still reading the old one's
  /// close, which then takes the shared proxy with it; the node dials back once
  /// (peer_connector's repair mode) instead of waiting for the member's retry.
  void set_repair(std::function<caf::actor(uint64_t)> f) { repair_ = std::move(f); }
  /// No more repairs; returns the repair connectors still running (to stop them).
  std::vector<caf::actor> stop_repairs();

  /// Members currently linked.
  size_t linked() const { return linked_.load(); }

  /// Logs one line (level info, or warning) through the node's log.
  void log(const std::string& line) const { log_->info(line); }
  void warn(const std::string& line) const { log_->warn(line); }
  const std::shared_ptr<const node_log>& logger() const { return log_; }

private:
  membership members_;
  std::shared_ptr<node_probe> probe_;
  std::shared_ptr<election::directory_transport> directory_;
  std::shared_ptr<const node_log> log_;
  steady_now_fn now_;
  election::candidate_actor candidate_;
  std::function<bool(const caf::node_id&, uint64_t)> session_check_ =
      tls_session_is_member;
  std::shared_ptr<const peer_authenticator> auth_;
  std::shared_ptr<replica_endpoint> replica_;
  std::shared_ptr<liveness_watch> liveness_;
  uint64_t incarnation_ = 0;
  std::atomic<size_t> linked_{0};
  std::function<caf::actor(uint64_t)> repair_; ///< set once, before start
  std::mutex repair_mtx_;
  bool repairs_stopped_ = false;
  std::vector<caf::actor> repairs_;
  std::chrono::milliseconds pause_threshold_{250};
  std::chrono::milliseconds pause_window_{1500};
  std::atomic<int64_t> last_tick_ns_{0};
  std::atomic<int64_t> resumed_ns_{INT64_MIN / 2};
};

} // namespace conclave::node
