#include "runtime/node/replica_front.hpp"

#include "actors/election/candidate_actor.hpp"
#include "actors/replication/type_ids.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <map>

namespace conclave::node {

namespace {

namespace rp = conclave::replication;

using tick_atom = caf::atom_constant<caf::atom("cn_rtick")>;

struct front_state {
  static inline const char* name = "conclave.replica_front";
  replica_front_options opts;
  /// A quick re-poll while syncing is armed.
  bool refresh_pending = false;
  /// Client transactions passed to the host and not answered yet, by
  /// arrival (ids increase): the front times them out itself on its tick
  /// instead of giving each request a CAF timeout (a request timeout is an
  /// event for CAF's clock thread per commit, measured at ~10 % of a busy
  /// primary's CPU).
  struct pending_txn {
    caf::typed_response_promise<rp::txn_result> promise;
    caf::actor_clock::time_point start; ///< on the actor clock (virtual in tests)
    bool strong = false;
  };
  std::map<uint64_t, pending_txn> txns;
  uint64_t next_txn = 1;
};

using front_ptr = caf::stateful_actor<front_state>*;

node_probe::replica_report report_of(const rp::replica_status& s, const front_state& st) {
  node_probe::replica_report r;
  // A primary whose sync phase has not committed its new_primary record
  // does not serve yet: it reports as syncing (as its reads do).
  auto shown = s.replica_role == rp::role::primary && !s.serving ? rp::role::syncing
                                                                 : s.replica_role;
  r.summary.role = std::string{rp::to_string(shown)};
  r.summary.serving = s.serving;
  r.summary.commit_lsn = s.commit.value;
  r.summary.applied_lsn = s.applied.value;
  r.summary.durable_lsn = s.durable.value;
  r.summary.last_lsn = s.last.value;
  r.summary.digest = s.digest;
  r.summary.durable_storage = st.opts.durable_storage;
  r.summary.checkpoint_lsn = s.checkpoint_lsn.value;
  r.summary.checkpoints_written = s.checkpoints_written;
  r.summary.snapshots_sent = s.snapshots_sent;
  r.summary.snapshots_installed = s.snapshots_installed;
  r.summary.session_duplicates = s.session_duplicates;
  r.summary.healing = s.amnesiac;
  for (auto& l : s.lag)
    r.lag.push_back(
        {l.peer.value, l.records, l.bytes, static_cast<double>(l.behind_us) / 1e6});
  for (size_t i = 0; i < s.dropped.size(); ++i)
    r.dropped[std::string{rp::to_string(static_cast<rp::drop_reason>(i))}] = s.dropped[i];
  r.dropped["unknown_type"] = s.unknown_messages;
  r.syncs = s.syncs;
  r.last_sync_seconds = static_cast<double>(s.last_sync_us) / 1e6;
  if (st.opts.transport) {
    r.records_shipped = st.opts.transport->records_shipped();
    r.messages_lost = st.opts.transport->lost();
  }
  return r;
}

/// A read or list that the candidate's leadership does not allow.
template <class Answer>
Answer refused_read() {
  Answer a;
  a.code = rp::errc::not_primary;
  a.replica_role = rp::role::secondary;
  a.primary = rp::no_node;
  return a;
}

/// Passes a read or list to the host; refuses a primary's answer given
/// outside one acting term (read_allowed).
template <class Answer, class Request>
caf::result<Answer> checked_read(front_ptr self, Request& req) {
  auto& st = self->state;
  std::optional<election::term> before;
  if (st.opts.board)
    before = st.opts.board->acting_at(clock_now(st.opts.clock.get(), self));
  auto rpromise = self->make_response_promise<Answer>();
  // No request timeout: the host answers a read or list at once, from its
  // applied state (a dead host answers with an error at once), and in CAF
  // 0.17 every request timeout stays in the clock's schedule until it fires,
  // answered or not: a list of 100,000 jobs read through this front held
  // 100,000 of them, about 16 MB, for host_timeout.
  self->request(st.opts.host, caf::infinite, std::move(req))
      .then(
          [self, rpromise, before](Answer& a) mutable {
            auto& board = self->state.opts.board;
            if (board && !self->state.opts.unsafe_reads_without_lease
                && !read_allowed(
                    a.replica_role, before,
                    board->acting_at(clock_now(self->state.opts.clock.get(), self)))) {
              self->state.opts.probe->message_rejected("read_without_lease");
              rpromise.deliver(refused_read<Answer>());
              return;
            }
            rpromise.deliver(std::move(a));
          },
          [rpromise](caf::error& e) mutable { rpromise.deliver(std::move(e)); });
  return rpromise;
}

void follow_promise(front_ptr self, const rp::replica_status& s);

/// The host answered transaction `id` (or failed to): answer the client,
/// unless the transaction timed out already.
void settle(front_ptr self, uint64_t id, rp::txn_result r) {
  auto& st = self->state;
  auto i = st.txns.find(id);
  if (i == st.txns.end())
    return;
  if (i->second.strong && r.code == rp::errc::ok)
    st.opts.probe->quorum_commit(
        std::chrono::duration<double>(self->clock().now() - i->second.start).count());
  i->second.promise.deliver(std::move(r));
  st.txns.erase(i);
}

/// Answers primary_changed (outcome unknown) to every transaction the host
/// has not answered within host_timeout.
void expire_txns(front_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  while (!st.txns.empty()
         && now - st.txns.begin()->second.start >= st.opts.host_timeout) {
    st.txns.begin()->second.promise.deliver(
        rp::txn_result{rp::errc::primary_changed, rp::lsn{}, rp::no_node, {}});
    st.txns.erase(st.txns.begin());
  }
}

/// Asks the host's status and reports it. While the host is syncing (a new
/// primary's sync phase, a few milliseconds) it asks again after
/// refresh_period, so that `primary` shows as soon as it serves.
void poll(front_ptr self) {
  auto& st = self->state;
  self->request(st.opts.host, st.opts.status_period * 5, replication_atoms::status_atom_v)
      .then(
          [self](rp::replica_status& s) {
            auto& st = self->state;
            st.opts.probe->replica(report_of(s, st));
            follow_promise(self, s);
            bool syncing = s.replica_role == rp::role::syncing
                           || (s.replica_role == rp::role::primary && !s.serving);
            if (syncing && !st.refresh_pending) {
              st.refresh_pending = true;
              self->delayed_send(self, st.opts.refresh_period,
                                 replica_refresh_atom::value);
            }
          },
          [](caf::error&) {});
}

/// The candidate acts below the host's promised term: have it lead above.
void follow_promise(front_ptr self, const rp::replica_status& s) {
  auto& board = self->state.opts.board;
  if (!board)
    return;
  if (auto epoch = lead_above_epoch(board->acting(), s))
    if (auto c = board->candidate())
      caf::anon_send(c, election_atoms::observe_atom::value, *epoch);
}

caf::behavior front_impl(front_ptr self, replica_front_options opts) {
  self->state.opts = std::move(opts);
  self->set_default_handler([self](caf::scheduled_actor*, caf::message_view&) {
    self->state.opts.probe->message_rejected("unexpected_message");
    return caf::result<caf::message>{caf::sec::unexpected_message};
  });
  self->set_down_handler([](caf::down_msg&) {});
  self->send(self, tick_atom::value);
  return {
      [self](rp::txn_request& req) -> caf::result<rp::txn_result> {
        auto& st = self->state;
        auto id = st.next_txn++;
        auto rpromise = self->make_response_promise<rp::txn_result>();
        st.txns.emplace(id,
                        front_state::pending_txn{rpromise, self->clock().now(),
                                                 req.mode == rp::commit_mode::strong});
        // No CAF timeout: expire_txns answers those the host keeps too long.
        self->request(st.opts.host, caf::infinite, std::move(req))
            .then([self, id](rp::txn_result& r) { settle(self, id, std::move(r)); },
                  [self, id](caf::error&) {
                    // Outcome unknown (the host is gone).
                    settle(self, id,
                           rp::txn_result{
                               rp::errc::primary_changed, rp::lsn{}, rp::no_node, {}});
                  });
        return rpromise;
      },
      [self](rp::read_request& req) { return checked_read<rp::read_result>(self, req); },
      [self](rp::list_request& req) { return checked_read<rp::list_result>(self, req); },
      [self](tick_atom) {
        poll(self);
        expire_txns(self);
        self->delayed_send(self, self->state.opts.status_period, tick_atom::value);
      },
      // The host was just told of a leadership change: report its new role
      // now, not at the next tick (cluster status showed a new leader's
      // replica as secondary for up to status_period).
      [self](replica_refresh_atom) {
        self->state.refresh_pending = false;
        poll(self);
      },
  };
}

} // namespace

bool read_allowed(replication::role answered_as,
                  const std::optional<election::term>& before,
                  const std::optional<election::term>& after) {
  if (answered_as != rp::role::primary)
    return true;
  return before && after && *before == *after;
}

caf::actor spawn_replica_front(caf::actor_system& sys, replica_front_options opts) {
  return sys.spawn(front_impl, std::move(opts));
}

} // namespace conclave::node
