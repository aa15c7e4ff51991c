// conclave_tls_handshakes_refused_total{side}: the TLS handshakes that failed
// in this process, and conclave_tls_frames_refused_total{reason}: the TLS
// sessions closed for frames naming another node (basp_source_guard.hpp);
// tls_error_queue.hpp counts both inside CAF's OpenSSL transport; read at
// scrape time. Names: docs/reference/metrics.md.
#pragma once

#include <prometheus/collectable.h>

#include <memory>

namespace conclave::node {

/// Register beside the node probe's registry on the /metrics exposer.
std::shared_ptr<prometheus::Collectable> tls_handshake_metrics();

} // namespace conclave::node
