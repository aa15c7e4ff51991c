#include "runtime/node/tls_metrics.hpp"

#include "runtime/node/tls_error_queue.hpp"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

namespace conclave::node {

namespace {

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
    return {f, frames};
  }
};

} // namespace

std::shared_ptr<prometheus::Collectable> tls_handshake_metrics() {
  return std::make_shared<tls_collectable>();
}

} // namespace conclave::node
