#include "runtime/node/peer_connector.hpp"

#include "runtime/node/liveness_watch.hpp"

#include "runtime/node/gate_actor.hpp"
#include "runtime/node/replica_link.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <set>

namespace conclave::node {

namespace {

struct connector_state {
  static inline const char* name = "conclave.connector";
  std::shared_ptr<peer_links> links;
  connector_options opts;
  std::optional<redial_schedule> schedule;
  uint64_t generation = 0;
  bool dialing = false;
  caf::actor remote; ///< the peer's candidate while linked
  gate_actor gate;   ///< the peer's gate while linked
  std::string last_failure;
};

using self_ptr = caf::stateful_actor<connector_state>*;

void dial(self_ptr self);

/// After the hello: give the gate our replica host and take the peer's. A
/// failure is retried while the same link is up (the replica is useless to
/// the peer without it).
void exchange_replicas(self_ptr self, const gate_actor& gate, uint64_t link) {
  auto& st = self->state;
  auto replica = st.links->replica();
  if (!replica)
    return;
  auto& m = st.links->members();
  self->request(gate, st.opts.step_timeout, replica_hello_atom::value, m.cluster, m.self,
                replica->host)
      .then(
          [self, replica](const caf::actor& host, const std::string& refused) {
            auto& st = self->state;
            if (!refused.empty() || !host) {
              st.links->warn("node " + std::to_string(st.opts.peer)
                             + " has no replica for us ("
                             + (refused.empty() ? "no handle" : refused) + ")");
              return;
            }
            // The gate's host must live on the node of the candidate this
            // connector linked (and, with TLS, verified) in the hello.
            if (auto why = replica_peer_refusal(st.remote, host); !why.empty()) {
              st.links->probe().message_rejected(why);
              st.links->warn("refused the replica host of node "
                             + std::to_string(st.opts.peer) + ": " + why);
              return;
            }
            replica->transport->set_peer(st.opts.peer, host);
          },
          [self, gate, link](caf::error& err) {
            auto& st = self->state;
            if (link != st.generation || !st.remote)
              return; // the link dropped meanwhile; the next hello retries
            st.links->warn("replica exchange with node " + std::to_string(st.opts.peer)
                           + " failed (" + self->system().render(err) + "), retrying");
            exchange_replicas(self, gate, link);
          });
}

/// With proofs of death on: a ticket for a liveness connection to the gate's
/// node, then the connection (liveness_watch.hpp). Once per incarnation of
/// the peer: a link that drops and comes back finds it still open.
void exchange_liveness(self_ptr self, const gate_actor& gate) {
  auto& st = self->state;
  auto watch = st.links->liveness();
  if (!watch)
    return;
  auto& m = st.links->members();
  self->request(gate, st.opts.step_timeout, liveness_atom::value, m.cluster, m.self,
                st.links->incarnation())
      .then(
          [self, watch](uint64_t port, const std::string& nonce, uint64_t incarnation,
                        const std::string& refused) {
            auto& st = self->state;
            if (!refused.empty()) {
              if (refused != "off")
                st.links->warn("node " + std::to_string(st.opts.peer)
                               + " refused a liveness connection: " + refused);
              return;
            }
            if (port == 0 || port > 65535 || incarnation == 0)
              return;
            watch->dial(st.opts.where.host, static_cast<uint16_t>(port), nonce,
                        st.opts.peer, incarnation);
          },
          [](caf::error&) {
            // The link dropped meanwhile: the next hello asks again.
          });
}

/// The next link check, after `after` (default: check_interval).
void schedule_check(self_ptr self, std::optional<std::chrono::milliseconds> after = {}) {
  auto& st = self->state;
  if (st.opts.repair || st.opts.check_interval.count() <= 0)
    return;
  self->delayed_send(self, after.value_or(st.opts.check_interval),
                     check_timer_atom::value, st.generation);
}

/// While linked: does the gate still hold our link? CAF keeps the peer's
/// proxies (and so our monitor) alive while any connection to its node is
/// open, e.g. one its store client dialed, so the end of our link's own
/// connection can go unseen here while the gate unlinked us. Then link again:
/// the middleman reuses the open connection, and the hello restores the link.
void check_link(self_ptr self) {
  auto& st = self->state;
  auto& m = st.links->members();
  auto generation = st.generation;
  auto timing = link_check_timing_for(st.opts, st.links->just_resumed(st.opts.now()));
  self->request(st.gate, timing.timeout, link_check_atom::value, m.cluster, m.self,
                caf::actor_cast<caf::actor>(st.links->candidate()))
      .then(
          [self, generation](bool held) {
            auto& st = self->state;
            if (generation != st.generation || !st.remote)
              return;
            if (held) {
              schedule_check(self);
              return;
            }
            st.links->forget(st.opts.peer, st.remote);
            self->demonitor(st.remote);
            st.remote = nullptr;
            st.gate = nullptr;
            st.schedule->reset();
            ++st.generation;
            dial(self);
          },
          [self, generation, timing](caf::error&) {
            // No answer (a frozen peer: the link timeout ends that link; or,
            // just after our own pause, a check lost with the connection the
            // peer closed meanwhile) or an old gate: ask again.
            if (generation == self->state.generation && self->state.remote)
              schedule_check(self, timing.retry_after);
          });
}

/// A handshake request's timeout (gate_request_timeout).
std::chrono::milliseconds handshake_timeout(const connector_state& st) {
  return gate_request_timeout(st.opts, st.links->just_resumed(st.opts.now()));
}

void retry(self_ptr self, const std::string& why, bool tick_cut = false) {
  auto& st = self->state;
  st.dialing = false;
  if (why != st.last_failure) { // log each new kind of failure once
    st.links->warn("cannot reach node " + std::to_string(st.opts.peer) + " at "
                   + st.opts.where.to_string() + " (" + why + "), retrying");
    st.last_failure = why;
  }
  auto delay = tick_cut ? st.schedule->after_tick_cut(st.opts.now())
                        : st.schedule->after_failure(st.opts.now());
  if (!delay) {
    self->quit(); // repair mode: the member's own connector will reach us
    return;
  }
  self->delayed_send(self, *delay, dial_atom::value, ++st.generation);
}

/// The hello: our id and candidate (and, with TLS, our proof for the gate's
/// nonce); the answer names the gate's member and candidate. With TLS,
/// `expected_candidate` is the candidate identity the gate's proof signed.
void hello(self_ptr self, const gate_actor& gate, const std::string& gate_nonce,
           const identity_proof& proof, const std::string& expected_candidate) {
  auto& st = self->state;
  auto& m = st.links->members();
  self->request(gate, handshake_timeout(st), hello_atom::value, m.cluster, m.self,
                caf::actor_cast<caf::actor>(st.links->candidate()), gate_nonce,
                proof.certificate_pem, proof.signature)
      .then(
          [self, gate, expected_candidate](const std::string& cluster, uint64_t id,
                                           const caf::actor& remote,
                                           const std::string& refused) {
            auto& st = self->state;
            auto& links = *st.links;
            if (!refused.empty()) {
              retry(self, "refused our handshake: " + refused);
              return;
            }
            auto r = links.members().accept_answer(cluster, id, st.opts.peer);
            if (r == rejection::none && !remote)
              r = rejection::unknown_node;
            if (r != rejection::none) {
              links.probe().message_rejected(to_string(r));
              retry(self, "answered as node " + std::to_string(id) + " of cluster '"
                              + cluster + "': " + std::string{to_string(r)});
              return;
            }
            if (links.authenticator() != nullptr
                && handle_identity(remote) != expected_candidate) {
              // Not the candidate the gate's proof signed: a relay swapped it.
              auto why = to_string(identity_refusal::bad_signature);
              links.probe().message_rejected(why);
              retry(self, "answered with a candidate its proof does not cover: "
                              + std::string{why});
              return;
            }
            if (links.authenticator() != nullptr
                && (gate.node() != remote.node()
                    || !links.session_is_member(remote.node(), st.opts.peer))) {
              // The answer did not come over a TLS session of the member's
              // certificate: a relay, or a session of another member.
              auto why = to_string(identity_refusal::wrong_session);
              links.probe().message_rejected(why);
              retry(self, "its identity proof: " + std::string{why});
              return;
            }
            st.dialing = false;
            st.last_failure.clear();
            st.schedule->reset();
            st.remote = remote;
            st.gate = gate;
            self->monitor(remote);
            links.up(st.opts.peer, remote);
            schedule_check(self);
            exchange_replicas(self, gate, st.generation);
            exchange_liveness(self, gate);
          },
          [self](caf::error& err) {
            retry(self, "handshake: " + self->system().render(err));
          });
}

/// With TLS, before the hello: the gate proves it is the member we dialed, for
/// our fresh nonce, and hands out its own nonce for our proof.
void challenge(self_ptr self, const gate_actor& gate) {
  auto& st = self->state;
  auto& m = st.links->members();
  auto nonce = make_nonce();
  self->request(gate, handshake_timeout(st), challenge_atom::value, m.cluster, m.self,
                nonce)
      .then(
          [self, gate, nonce](const std::string& refused, const std::string& gate_nonce,
                              const std::string& cert, const std::string& signature,
                              const std::string& candidate) {
            auto& st = self->state;
            auto& links = *st.links;
            auto& m = links.members();
            auto& auth = *links.authenticator();
            if (!refused.empty()) {
              retry(self, "refused our handshake: " + refused);
              return;
            }
            auto why = auth.verifier.verify(
                {cert, signature}, {proof_role::accepting, m.cluster, st.opts.peer,
                                    m.self, nonce, gate_nonce, candidate});
            if (why != identity_refusal::none) {
              auto reason = std::string{to_string(why)};
              links.probe().message_rejected(reason);
              retry(self, "its identity proof: " + reason);
              return;
            }
            auto mine = handle_identity(caf::actor_cast<caf::actor>(links.candidate()));
            auto proof = auth.self.prove({proof_role::dialing, m.cluster, m.self,
                                          st.opts.peer, gate_nonce, nonce, mine});
            hello(self, gate, gate_nonce, proof, candidate);
          },
          [self](caf::error& err) {
            retry(self, "challenge: " + self->system().render(err));
          });
}

void handshake(self_ptr self, const gate_actor& gate) {
  if (self->state.links->authenticator() == nullptr)
    hello(self, gate, std::string{}, identity_proof{}, std::string{});
  else
    challenge(self, gate);
}

void dial(self_ptr self) {
  auto& st = self->state;
  if (st.dialing || st.remote)
    return;
  st.dialing = true;
  // With TLS configured (node.cpp loads the openssl module), dial through its
  // middleman actor: same interface, TLS transport with peer verification.
  auto& sys = self->system();
  auto mm = sys.has_openssl_manager() ? sys.openssl_manager().actor_handle()
                                      : sys.middleman().actor_handle();
  self->request(mm, st.opts.step_timeout, caf::connect_atom::value, st.opts.where.host,
                st.opts.where.port)
      .then(
          [self](const caf::node_id&, caf::strong_actor_ptr& ptr,
                 const std::set<std::string>& ifs) {
            if (!ptr) {
              retry(self, "nothing published there");
              return;
            }
            auto expected =
                self->system().message_types(caf::detail::type_list<gate_actor>{});
            if (ifs != expected) {
              self->state.links->probe().message_rejected("protocol_mismatch");
              retry(self, "not a conclave node of this version");
              return;
            }
            handshake(self, caf::actor_cast<gate_actor>(ptr));
          },
          [self](caf::error& err) {
            retry(self, self->system().render(err), err == caf::sec::connection_timeout);
          });
}

caf::behavior connector_impl(self_ptr self, std::shared_ptr<peer_links> links,
                             connector_options opts) {
  auto& st = self->state;
  st.links = std::move(links);
  st.opts = opts;
  st.schedule.emplace(opts, opts.now());
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (!st.remote || dm.source != st.remote.address())
      return;
    st.links->down(dm.source);
    st.remote = nullptr;
    st.gate = nullptr;
    if (st.opts.repair) {
      self->quit();
      return;
    }
    st.schedule->reset();
    self->delayed_send(self, st.schedule->initial(), dial_atom::value, ++st.generation);
  });
  self->set_default_handler([self](caf::scheduled_actor*, caf::message_view&) {
    self->state.links->probe().message_rejected("unexpected_message");
    return caf::result<caf::message>{caf::sec::unexpected_message};
  });
  dial(self);
  return {
      [self](dial_atom, uint64_t generation) {
        if (generation == self->state.generation)
          dial(self);
      },
      [self](check_timer_atom, uint64_t generation) {
        if (generation == self->state.generation && self->state.remote)
          check_link(self);
      },
  };
}

} // namespace

std::chrono::milliseconds gate_request_timeout(const connector_options& o,
                                               bool just_resumed) {
  if (!just_resumed)
    return o.step_timeout;
  return std::max(std::min(o.resumed_request_timeout, o.step_timeout),
                  std::chrono::milliseconds{1});
}

link_check_timing link_check_timing_for(const connector_options& o, bool just_resumed) {
  return {gate_request_timeout(o, just_resumed),
          just_resumed ? std::chrono::milliseconds{0} : o.check_interval};
}

redial_schedule::redial_schedule(const connector_options& o,
                                 std::chrono::steady_clock::time_point start)
    : initial_(o.initial_backoff), max_(std::max(o.max_backoff, o.initial_backoff)),
      cut_max_(std::max(o.cut_max_backoff, max_)), next_(o.initial_backoff) {
  if (o.repair)
    give_up_ = start + o.repair_for;
}

std::optional<std::chrono::milliseconds>
redial_schedule::after_failure(std::chrono::steady_clock::time_point now) {
  cuts_ = 0;
  next_ = std::min(next_, max_);
  return next_wait(now, max_);
}

std::optional<std::chrono::milliseconds>
redial_schedule::after_tick_cut(std::chrono::steady_clock::time_point now) {
  if (cuts_ >= 2)
    return next_wait(now, cut_max_);
  if (give_up_ && now >= *give_up_)
    return std::nullopt;
  ++cuts_;
  return std::chrono::milliseconds{0};
}

std::optional<std::chrono::milliseconds>
redial_schedule::next_wait(std::chrono::steady_clock::time_point now,
                           std::chrono::milliseconds cap) {
  if (give_up_ && now >= *give_up_)
    return std::nullopt;
  auto wait = next_;
  next_ = std::min(next_ * 2, cap);
  return wait;
}

caf::actor spawn_connector(caf::actor_system& sys, std::shared_ptr<peer_links> links,
                           connector_options opts) {
  return sys.spawn(connector_impl, std::move(links), std::move(opts));
}

} // namespace conclave::node
