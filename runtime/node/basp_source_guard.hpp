// Which node a TLS connection speaks for: a check of CAF 0.17.6's wire
// protocol (BASP) as it comes out of a TLS session, before CAF reads it.
//
// Why: BASP attributes a direct_message to the node at the other end of the
// connection, but routed_message, monitor_message and down_message carry a
// source node id in their payload, and CAF 0.17.6 believes it
// (libcaf_io/src/io/basp/instance.cpp): a routed_message is delivered as sent
// by (source node, source actor), a down_message kills this node's proxy of
// that actor, and a message for another destination node is forwarded there.
// So anyone past the TLS handshake (any certificate of the CA) could send
// frames naming another member's node as their source: a forged "your peer's
// candidate is down", or election messages from another member's candidate.
//
// conclave's members form a full mesh and never route through each other, so
// the rule is simple: over one connection, every frame that names a source
// node must name the node that connection's BASP handshake declared, and every
// frame that names a destination node must name this node. A connection that
// breaks it is closed before CAF reads the frame (tls_error_queue.cpp).
//
// Wire format read here (CAF 0.17.6, network byte order): a 32-byte header
// (operation, 2 padding bytes, flags, payload_len u32, operation_data u64,
// source_actor u64, dest_actor u64), then payload_len bytes. Handshakes
// (server 0x00, client 0x01) start with the sender's node id; routed (0x03),
// monitor (0x04) and down (0x05) messages with (source node, destination
// node). A header announcing a body above max_payload is refused before CAF
// allocates it. A node id is an 8-byte implementation atom, then for the "default"
// kind a u32 process id and a 20-byte host id; the empty atom is no node.
// Node ids are compared as these bytes. Pure: no CAF, no OpenSSL, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace conclave::node {

class basp_source_guard {
public:
  /// Why a connection was refused; none while it is fine.
  enum class refusal {
    none,
    forged_source,       ///< a frame names another node than the handshake as its source
    foreign_destination, ///< a frame asks this node to forward it to another node
    changed_node,        ///< a second handshake declares another node
    malformed,           ///< a node id of an unknown kind, or a payload too short for it
    oversized,           ///< a header announcing a body above max_payload
  };

  /// `local_node`: this node's id as BASP serializes it; empty: destinations
  /// are not checked.
  explicit basp_source_guard(std::string local_node = {})
      : local_(std::move(local_node)) {}

  /// Feeds the next bytes the peer sent. Once refused, stays refused.
  refusal feed(const char* data, size_t size);

  /// The node id the peer's handshake declared (empty before it arrived).
  const std::string& peer_node() const { return peer_; }

  refusal refused() const { return refused_; }

  /// Bytes of a BASP header.
  static constexpr size_t header_size = 32;
  /// The largest body a frame may announce: CAF allocates what the header
  /// announces before reading it (up to 4 GiB). The largest message conclave
  /// sends is one log record (store::max_record_body) with its envelope.
  static const uint32_t max_payload;

private:
  refusal check_prefix();

  std::string local_;
  std::string peer_;
  std::string buf_; ///< header or payload prefix being collected
  uint8_t op_ = 0;
  size_t want_ = header_size; ///< bytes buf_ must hold before the next step
  uint64_t skip_ = 0;         ///< payload bytes after the prefix, passed over
  uint32_t payload_len_ = 0;
  bool in_header_ = true;
  refusal refused_ = refusal::none;
};

std::string_view to_string(basp_source_guard::refusal r);

/// Length of the node id serialized at `p` (`avail` bytes there): 8 for no
/// node, 32 for CAF's default kind; 0 if unknown or cut short.
size_t basp_node_id_size(const char* p, size_t avail);

} // namespace conclave::node
