#include "runtime/node/tls_metrics.hpp"

#include "runtime/node/handshake_guard.hpp"
#include "runtime/node/tls_error_queue.hpp"
#include "runtime/node/write_parking.hpp"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

namespace conclave::node {

namespace {

/// A family of one unlabelled counter or gauge.
prometheus::MetricFamily single(const char* name, const char* help,
                                prometheus::MetricType type, double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  (type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value) = value;
  f.metric.push_back(m);
  return f;
}

class tls_collectable final : public prometheus::Collectable {
public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily f;
    f.name = "conclave_tls_handshakes_refused_total";
    f.help = "TLS handshakes that failed (no or an untrusted certificate, "
             "plaintext or garbage, closed midway), by this node's side";
    f.type = prometheus::MetricType::Counter;
    for (auto [side, label] : {std::pair{tls_side::accepting, "accepting"},
                               std::pair{tls_side::dialing, "dialing"}}) {
      prometheus::ClientMetric m;
      m.label.push_back({"side", label});
      m.counter.value = static_cast<double>(tls_handshakes_refused(side));
      f.metric.push_back(m);
    }
    prometheus::MetricFamily frames;
    frames.name = "conclave_tls_frames_refused_total";
    frames.help = "TLS sessions closed because their BASP frames named another node "
                  "than the session's own as source, or another destination, by reason";
    frames.type = prometheus::MetricType::Counter;
    for (auto reason : tls_frame_refusals) {
      prometheus::ClientMetric m;
      m.label.push_back({"reason", std::string{reason}});
      m.counter.value = static_cast<double>(tls_frames_refused(reason));
      frames.metric.push_back(m);
    }
    auto g = handshake_guard_stats();
    prometheus::MetricFamily guarded;
    guarded.name = "conclave_tls_handshakes_guarded_total";
    guarded.help = "Accepted TLS handshakes this node shut down unfinished: over_budget "
                   "(too many pending, in all or from one address), timeout (pending "
                   "too long)";
    guarded.type = prometheus::MetricType::Counter;
    for (auto [reason, value] :
         {std::pair{"over_budget", g.refused}, std::pair{"timeout", g.timed_out}}) {
      prometheus::ClientMetric m;
      m.label.push_back({"reason", reason});
      m.counter.value = static_cast<double>(value);
      guarded.metric.push_back(m);
    }
    auto pending = single("conclave_tls_handshakes_pending",
                          "Accepted TLS handshakes not finished yet",
                          prometheus::MetricType::Gauge, static_cast<double>(g.pending));
    auto abandoned = single(
        "conclave_tls_dials_abandoned_total",
        "Dialed TLS handshakes this node closed unanswered after the middleman had "
        "given them up (a stopped or overloaded peer)",
        prometheus::MetricType::Counter, static_cast<double>(tls_dials_abandoned()));
    auto parks = single(
        "conclave_tls_write_parks_total",
        "Times a TLS handshake waiting for its peer had its socket's write interest "
        "held back, so that the I/O thread does not retry it while the peer is silent",
        prometheus::MetricType::Counter, static_cast<double>(tls_write_parks()));
    return {f, frames, guarded, pending, abandoned, parks};
  }
};

} // namespace

std::shared_ptr<prometheus::Collectable> tls_handshake_metrics() {
  return std::make_shared<tls_collectable>();
}

} // namespace conclave::node
