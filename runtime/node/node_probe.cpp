#include "runtime/node/node_probe.hpp"

#include <caf/config.hpp>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

namespace conclave::node {

namespace el = conclave::election;

namespace {

double seconds(el::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string caf_version() {
  return std::to_string(CAF_MAJOR_VERSION) + "." + std::to_string(CAF_MINOR_VERSION) + "."
         + std::to_string(CAF_PATCH_VERSION);
}

} // namespace

node_probe::node_probe(const node_config& cfg, std::shared_ptr<status_writer> status)
    : registry_(std::make_shared<prometheus::Registry>()), status_(std::move(status)),
      algorithm_(el::to_string(cfg.election.algo)) {
  using namespace prometheus;
  auto& reg = *registry_;
  for (auto& [id, addr] : cfg.peers)
    peers_.push_back(id);
  BuildGauge()
      .Name("conclave_build_info")
      .Help("Build of this conclave node (always 1)")
      .Register(reg)
      .Add({{"version", CONCLAVE_VERSION},
            {"caf_version", caf_version()},
            {"algorithm", algorithm_}})
      .Set(1);
  is_leader_ = &BuildGauge()
                    .Name("conclave_is_leader")
                    .Help("1 while this node believes it leads, else 0")
                    .Register(reg)
                    .Add({});
  acting_ = &BuildGauge()
                 .Name("conclave_acting")
                 .Help("1 while this node may act as leader (inside its lease)")
                 .Register(reg)
                 .Add({});
  term_ = &BuildGauge()
               .Name("conclave_term")
               .Help("Epoch of the term this node currently knows")
               .Register(reg)
               .Add({});
  elections_ = &BuildCounter()
                    .Name("conclave_elections_total")
                    .Help("Elections this node started, by algorithm and reason")
                    .Register(reg);
  election_duration_ =
      &BuildHistogram()
           .Name("conclave_election_duration_seconds")
           .Help("From the start of an election at this node to its adopting a leader")
           .Register(reg)
           .Add({}, Histogram::BucketBoundaries{0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                0.1, 0.2, 0.5, 1, 2, 5});
  auto& sent = BuildCounter()
                   .Name("conclave_messages_sent_total")
                   .Help("Election messages sent, by type")
                   .Register(reg);
  auto& received = BuildCounter()
                       .Name("conclave_messages_received_total")
                       .Help("Election messages received, by type")
                       .Register(reg);
  for (auto name : el::message_type_names) {
    sent_.push_back(&sent.Add({{"type", std::string{name}}}));
    received_.push_back(&received.Add({{"type", std::string{name}}}));
  }
  peer_up_ = &BuildGauge()
                  .Name("conclave_peer_up")
                  .Help("1 while the link to a peer is up (handshake done), else 0")
                  .Register(reg);
  for (auto p : peers_)
    peer_up_->Add({{"peer", std::to_string(p)}}).Set(0);
  rtt_ = &BuildHistogram()
              .Name("conclave_heartbeat_rtt_seconds")
              .Help("Leader: round-trip time of heartbeats to their acknowledgements")
              .Register(reg)
              .Add({}, Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                   0.005, 0.01, 0.025, 0.05, 0.1});
  phi_ = &BuildGauge()
              .Name("conclave_detector_phi")
              .Help("Follower: suspicion level of the leader (phi, or silence over "
                    "timeout for the fixed detector); 0 for other peers")
              .Register(reg);
  for (auto p : peers_)
    phi_->Add({{"peer", std::to_string(p)}}).Set(0);
  leader_changes_ = &BuildCounter()
                         .Name("conclave_leader_changes_total")
                         .Help("Times this node adopted a different leader")
                         .Register(reg)
                         .Add({});
  rejected_ = &BuildCounter()
                   .Name("conclave_rejected_messages_total")
                   .Help("Handshakes and messages dropped, by reason")
                   .Register(reg);
  for (auto r : {"wrong_cluster", "unknown_node", "same_id", "wrong_node",
                 "protocol_mismatch", "unexpected_message", "stale_term"})
    rejected_->Add({{"reason", r}});
  elections("startup"); // make the family visible before the first election
}

prometheus::Counter& node_probe::elections(std::string_view reason) {
  return elections_->Add({{"algorithm", algorithm_}, {"reason", std::string{reason}}});
}

void node_probe::event(const el::election_event& e, el::timestamp now) {
  using el::event_kind;
  if (log_) {
    switch (e.kind) {
    case event_kind::election_started:
      log_("election started (" + std::string{el::to_string(e.reason)} + "), last term "
           + el::to_string(e.t));
      break;
    case event_kind::became_leader:
      log_("became leader, term " + el::to_string(e.t));
      break;
    case event_kind::lost_leadership:
      log_("lost leadership of term " + el::to_string(e.t) + " ("
           + std::string{el::to_string(e.why)} + ")");
      break;
    case event_kind::leader_changed:
      log_("following node " + el::to_string(e.peer) + ", term " + el::to_string(e.t));
      break;
    case event_kind::peer_suspected:
      log_("suspects node " + el::to_string(e.peer));
      break;
    case event_kind::stale_claim_rejected:
      log_("rejected a stale claim of node " + el::to_string(e.peer) + ", term "
           + el::to_string(e.t));
      break;
    default:
      break;
    }
  }
  switch (e.kind) {
  case event_kind::election_started: {
    elections(el::to_string(e.reason)).Increment();
    std::lock_guard<std::mutex> guard{mtx_};
    if (!election_started_)
      election_started_ = now;
    break;
  }
  case event_kind::became_leader:
  case event_kind::leader_changed: {
    if (e.kind == event_kind::leader_changed)
      leader_changes_->Increment();
    std::lock_guard<std::mutex> guard{mtx_};
    if (election_started_) {
      election_duration_->Observe(seconds(now - *election_started_));
      election_started_.reset();
    }
    break;
  }
  case event_kind::stale_claim_rejected:
    rejected_->Add({{"reason", "stale_term"}}).Increment();
    break;
  case event_kind::heartbeat_rtt:
    rtt_->Observe(seconds(e.rtt));
    break;
  default:
    break;
  }
}

void node_probe::message_sent(size_t type) {
  if (type < sent_.size())
    sent_[type]->Increment();
}

void node_probe::message_received(size_t type) {
  if (type < received_.size())
    received_[type]->Increment();
}

void node_probe::message_rejected(std::string_view reason) {
  rejected_->Add({{"reason", std::string{reason}}}).Increment();
}

void node_probe::state(const el::candidate_core& core, el::timestamp now) {
  is_leader_->Set(core.is_leader() ? 1 : 0);
  acting_->Set(core.acting() ? 1 : 0);
  auto t = core.current_term();
  term_->Set(static_cast<double>(t.epoch));
  auto leader = core.leader();
  double phi = core.is_leader() ? 0.0 : core.leader_phi(now);
  for (auto p : peers_)
    phi_->Add({{"peer", std::to_string(p)}}).Set(p == leader.value ? phi : 0.0);
  std::map<uint64_t, std::string> states;
  for (auto& p : core.participants(now))
    states[p.id.value] = std::string{el::to_string(p.state)};
  status_->update_leadership(leader.value, t.epoch, t.leader.value, core.is_leader(),
                             core.acting(), states);
}

void node_probe::peer_link(uint64_t peer, bool up) {
  peer_up_->Add({{"peer", std::to_string(peer)}}).Set(up ? 1 : 0);
  status_->set_connected(peer, up);
}

} // namespace conclave::node
