// Leadership → replica role. The node's election candidate decides who leads;
// its replica follows: the acting leader of term t is the primary of term t
// (docs/design/replication.md, "Model"). The node observes the candidate through its
// probe (state() runs after every input of the candidate), so the relay is an
// election_probe that forwards everything to the node's probe and, when the
// leadership it sees changes, tells the replica host:
//
//   acting leader of term t          -> become_primary_msg{t}   (once per term)
//   no longer acting, or another     -> leader_is_msg{current term}
//   node leads a term not yet told      (once per term and kind)
//
// The decision is a pure function of what the candidate reports
// (leadership_tracker), tested with plain calls.
//
// The relay also publishes whether the candidate acts, and in which term, on
// a leadership_board shared with the node's replica front (replica_front.hpp),
// and tells the front (replica_refresh_atom) after each signal to the host.
// The front reads it twice: a host whose promised term is above the term the
// candidate acts in (a candidate restarted without memory lags behind the
// replicas' term files; its sync phase is fenced) makes the front send the
// candidate that epoch (observe_atom), so it leads and acts above it
// (lead_above_epoch); and a read answered by the host as primary is passed on
// only while the candidate acts in the same term before and after it.
#pragma once

#include "actors/election/election_probe.hpp"
#include "actors/replication/messages.hpp"

#include <caf/actor.hpp>
#include <caf/atom.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <variant>

namespace conclave::node {

/// What the candidate says after an input.
struct leadership_view {
  election::node_id self;
  bool is_leader = false;
  bool acting = false;
  election::term t;
  election::node_id leader;
};

using replica_signal =
    std::variant<replication::become_primary_msg, replication::leader_is_msg>;

/// Turns a sequence of candidate views into the messages the replica host
/// needs: each become_primary once per term, each leader_is once per
/// (term, reason), nothing while nothing changed.
class leadership_tracker {
public:
  std::optional<replica_signal> observe(const leadership_view& v);

private:
  /// The term we last made the host primary of (while it may still be).
  std::optional<election::term> primary_of_;
  /// The term of the last leader_is sent.
  std::optional<election::term> told_leader_;
};

/// Sent to the replica front after the host was told of a leadership change:
/// the front asks the host's status now instead of at its next poll.
using replica_refresh_atom = caf::atom_constant<caf::atom("cn_rrefr")>;

/// Whether the node's candidate acts, and in which term: written by the
/// relay (candidate's thread), read by the front (its own). Also holds the
/// candidate's handle, set by the node once it is spawned.
class leadership_board {
public:
  /// The candidate acts in `t` (none: it does not) until `until` on its
  /// clock unless it renews its lease (no bound: until told otherwise).
  void set_acting(std::optional<election::term> t,
                  std::optional<election::timestamp> until = std::nullopt) {
    std::lock_guard<std::mutex> g{mtx_};
    acting_ = t;
    until_ = until;
  }
  /// The term the candidate acts in, none while it does not act, as it last
  /// reported.
  std::optional<election::term> acting() const {
    std::lock_guard<std::mutex> g{mtx_};
    return acting_;
  }
  /// The same at time `now` on the candidate's clock: none once the lease it
  /// last reported has run out, even if the candidate has not run since (a
  /// node resumed after SIGSTOP: its front may run before its candidate sees
  /// that the lease ended).
  std::optional<election::term> acting_at(election::timestamp now) const {
    std::lock_guard<std::mutex> g{mtx_};
    if (until_ && now >= *until_)
      return std::nullopt;
    return acting_;
  }
  void set_candidate(caf::actor c) {
    std::lock_guard<std::mutex> g{mtx_};
    candidate_ = std::move(c);
  }
  caf::actor candidate() const {
    std::lock_guard<std::mutex> g{mtx_};
    return candidate_;
  }
  /// The node's replica front, told by the relay when it signals the host
  /// (replica_refresh_atom) so that its status follows at once.
  void set_front(caf::actor f) {
    std::lock_guard<std::mutex> g{mtx_};
    front_ = std::move(f);
  }
  caf::actor front() const {
    std::lock_guard<std::mutex> g{mtx_};
    return front_;
  }

private:
  mutable std::mutex mtx_;
  std::optional<election::term> acting_;
  std::optional<election::timestamp> until_;
  caf::actor candidate_;
  caf::actor front_;
};

/// The epoch the candidate must lead above, if any: it acts in `acting`
/// while its (working) host promised a higher term, so the host cannot serve
/// in the candidate's term (its sync phase is fenced) and nobody else leads.
std::optional<uint64_t> lead_above_epoch(const std::optional<election::term>& acting,
                                         const replication::replica_status& s);

/// The candidate's probe in a node that hosts a replica: forwards to `inner`
/// and sends the tracker's signals to `host` (from the candidate's thread).
class leadership_relay final : public election::election_probe {
public:
  leadership_relay(std::shared_ptr<election::election_probe> inner, caf::actor host,
                   std::shared_ptr<leadership_board> board = nullptr)
      : inner_(std::move(inner)), host_(std::move(host)), board_(std::move(board)) {}

  void event(const election::election_event& e, election::timestamp now) override {
    inner_->event(e, now);
  }
  void message_sent(size_t type) override { inner_->message_sent(type); }
  void message_received(size_t type) override { inner_->message_received(type); }
  void timer_fired(election::duration lateness, bool leader) override {
    inner_->timer_fired(lateness, leader);
  }
  void message_rejected(std::string_view reason) override {
    inner_->message_rejected(reason);
  }
  void state(const election::candidate_core& core, election::timestamp now) override;

private:
  std::shared_ptr<election::election_probe> inner_;
  caf::actor host_;
  std::shared_ptr<leadership_board> board_;
  leadership_tracker tracker_;
};

} // namespace conclave::node
