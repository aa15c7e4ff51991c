// node_probe: every metric of a node (prometheus-cpp registry) and its
// status.json, fed by the candidate (election_probe hooks) and by the transport
// (links up and down, rejected handshakes). Thread-safe: prometheus-cpp metrics
// are atomic, the status writer has its own lock, the rest is guarded here.
//
// Metric names: docs/metrics.md.
#pragma once

#include "actors/election/election_probe.hpp"
#include "runtime/node/status_file.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace conclave::node {

class node_probe final : public election::election_probe {
public:
  node_probe(const node_config& cfg, std::shared_ptr<status_writer> status);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  /// Where leadership events are logged (one line each); none by default.
  void set_log(std::function<void(const std::string&)> log) { log_ = std::move(log); }

  // -- election_probe -------------------------------------------------------
  void event(const election::election_event& e, election::timestamp now) override;
  void message_sent(size_t type) override;
  void message_received(size_t type) override;
  void message_rejected(std::string_view reason) override;
  void state(const election::candidate_core& core, election::timestamp now) override;

  // -- transport ------------------------------------------------------------
  void peer_link(uint64_t peer, bool up);

private:
  prometheus::Counter& elections(std::string_view reason);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<status_writer> status_;
  std::string algorithm_;
  std::vector<uint64_t> peers_;

  prometheus::Gauge* is_leader_;
  prometheus::Gauge* acting_;
  prometheus::Gauge* term_;
  prometheus::Family<prometheus::Counter>* elections_;
  prometheus::Histogram* election_duration_;
  std::vector<prometheus::Counter*> sent_;
  std::vector<prometheus::Counter*> received_;
  prometheus::Family<prometheus::Gauge>* peer_up_;
  prometheus::Histogram* rtt_;
  prometheus::Family<prometheus::Gauge>* phi_;
  prometheus::Counter* leader_changes_;
  prometheus::Family<prometheus::Counter>* rejected_;

  std::function<void(const std::string&)> log_;
  std::mutex mtx_;
  std::optional<election::timestamp> election_started_;
};

} // namespace conclave::node
