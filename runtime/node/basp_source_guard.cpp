#include "runtime/node/basp_source_guard.hpp"

#include "protocols/store/log_record.hpp"

#include <algorithm>

namespace conclave::node {

namespace {

// CAF 0.17.6 atoms (caf::atom("default"), caf::atom("")): pinned against CAF
// in basp_source_guard.test.cpp.
constexpr uint64_t default_node_atom = 0x3e9aab9bac79;
constexpr uint64_t no_node_atom = 0xF;

// BASP operations (caf/io/basp/message_type.hpp).
constexpr uint8_t server_handshake = 0x00;
constexpr uint8_t client_handshake = 0x01;
constexpr uint8_t routed_message = 0x03;
constexpr uint8_t monitor_message = 0x04;
constexpr uint8_t down_message = 0x05;

/// Two node ids of the default kind: all a checked payload prefix needs.
constexpr size_t max_prefix = 64;

uint64_t be(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

bool names_nodes(uint8_t op) {
  return op == server_handshake || op == client_handshake || op == routed_message
         || op == monitor_message || op == down_message;
}

} // namespace

const uint32_t basp_source_guard::max_payload = store::max_record_body + (1u << 20);

size_t basp_node_id_size(const char* p, size_t avail) {
  if (avail < 8)
    return 0;
  auto atom = be(p, 8);
  size_t n = atom == no_node_atom ? 8 : atom == default_node_atom ? 32 : 0;
  return n <= avail ? n : 0;
}

basp_source_guard::refusal basp_source_guard::check_prefix() {
  const char* p = buf_.data();
  auto n = basp_node_id_size(p, buf_.size());
  if (n == 0)
    return refusal::malformed;
  std::string_view first{p, n};
  if (op_ == server_handshake || op_ == client_handshake) {
    if (n == 8)
      return refusal::malformed; // a handshake for no node
    if (peer_.empty())
      peer_ = std::string{first};
    else if (peer_ != first)
      return refusal::changed_node;
    return refusal::none;
  }
  // routed, monitor, down: (source node, destination node, ...).
  if (peer_.empty() || first != peer_)
    return refusal::forged_source;
  auto m = basp_node_id_size(p + n, buf_.size() - n);
  if (m == 0)
    return refusal::malformed;
  if (!local_.empty() && std::string_view{p + n, m} != local_)
    return refusal::foreign_destination;
  return refusal::none;
}

basp_source_guard::refusal basp_source_guard::feed(const char* data, size_t size) {
  while (size > 0 && refused_ == refusal::none) {
    if (skip_ > 0) {
      auto k = static_cast<size_t>(std::min<uint64_t>(skip_, size));
      skip_ -= k;
      data += k;
      size -= k;
      if (skip_ == 0) {
        in_header_ = true;
        want_ = header_size;
      }
      continue;
    }
    auto k = std::min(size, want_ - buf_.size());
    buf_.append(data, k);
    data += k;
    size -= k;
    if (buf_.size() < want_)
      break;
    if (in_header_) {
      op_ = static_cast<uint8_t>(buf_[0]);
      payload_len_ = static_cast<uint32_t>(be(buf_.data() + 4, 4));
      buf_.clear();
      if (payload_len_ > max_payload) {
        refused_ = refusal::oversized;
        continue;
      }
      if (payload_len_ == 0) {
        if (op_ == routed_message || op_ == monitor_message || op_ == down_message
            || op_ == server_handshake || op_ == client_handshake)
          refused_ = refusal::malformed; // CAF would fail to read its node ids
        continue;
      }
      if (names_nodes(op_)) {
        in_header_ = false;
        want_ = std::min<size_t>(payload_len_, max_prefix);
        skip_ = 0;
      } else {
        skip_ = payload_len_;
      }
      continue;
    }
    // A payload prefix is complete.
    refused_ = check_prefix();
    skip_ = payload_len_ - want_;
    buf_.clear();
    if (skip_ == 0) {
      in_header_ = true;
      want_ = header_size;
    }
  }
  return refused_;
}

std::string_view to_string(basp_source_guard::refusal r) {
  switch (r) {
  case basp_source_guard::refusal::none:
    return "none";
  case basp_source_guard::refusal::forged_source:
    return "forged_source";
  case basp_source_guard::refusal::foreign_destination:
    return "foreign_destination";
  case basp_source_guard::refusal::changed_node:
    return "changed_node";
  case basp_source_guard::refusal::oversized:
    return "oversized";
  case basp_source_guard::refusal::malformed:
    break;
  }
  return "malformed";
}

} // namespace conclave::node
