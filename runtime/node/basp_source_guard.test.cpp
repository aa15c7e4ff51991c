// basp_source_guard on BASP frames serialized by CAF 0.17.6 itself (its
// header and node id serialization), so the byte layout the guard assumes is
// pinned against the library the node links.
#include "runtime/node/basp_source_guard.hpp"

#include "runtime/node/peer_links.hpp"

#include <caf/binary_serializer.hpp>
#include <caf/error.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp/message_type.hpp>
#include <caf/message.hpp>
#include <caf/node_id.hpp>

#include <gtest/gtest.h>

#include <random>

// A named namespace: this file shares a unity batch with other tests.
namespace basp_source_guard_test {

using namespace conclave::node;
using caf::io::basp::message_type;
using refusal = basp_source_guard::refusal;

caf::node_id node(uint32_t pid, uint8_t host) {
  caf::node_id::default_data::host_id_type h;
  h.fill(host);
  return caf::make_node_id(pid, h);
}

/// One frame: CAF's header, then `payload`.
std::string frame(message_type op, const std::string& payload, uint64_t src_actor = 7,
                  uint64_t dst_actor = 9) {
  caf::io::basp::header hdr{op, 0,         static_cast<uint32_t>(payload.size()),
                            0,  src_actor, dst_actor};
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  EXPECT_FALSE(sink(hdr));
  return std::string{buf.begin(), buf.end()} + payload;
}

template <class... Ts>
std::string payload(Ts&&... xs) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  EXPECT_FALSE(sink(std::forward<Ts>(xs)...));
  return std::string{buf.begin(), buf.end()};
}

const caf::node_id peer = node(100, 0xAA);
const caf::node_id self_node = node(200, 0xBB);
const caf::node_id other = node(300, 0xCC); // another member's node

std::string handshake(const caf::node_id& n) {
  return frame(message_type::client_handshake, payload(n));
}

std::string routed(const caf::node_id& src, const caf::node_id& dst) {
  return frame(message_type::routed_message,
               payload(src, dst, std::vector<caf::strong_actor_ptr>{})
                   + "opaque message");
}

std::string down(const caf::node_id& src, const caf::node_id& dst) {
  return frame(message_type::down_message, payload(src, dst, caf::error{}));
}

/// Feeds `bytes` in chunks of `chunk` bytes; the first refusal, or none.
refusal feed(basp_source_guard& g, const std::string& bytes, size_t chunk) {
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    auto r = g.feed(bytes.data() + at, std::min(chunk, bytes.size() - at));
    if (r != refusal::none)
      return r;
  }
  return refusal::none;
}

TEST(basp_source_guard, reads_node_ids_as_caf_serializes_them) {
  EXPECT_EQ(caf::io::basp::header_size, basp_source_guard::header_size);
  auto bytes = basp_node_bytes(peer);
  ASSERT_EQ(bytes.size(), 32u);
  EXPECT_EQ(basp_node_id_size(bytes.data(), bytes.size()), 32u);
  auto none = basp_node_bytes(caf::node_id{});
  EXPECT_EQ(basp_node_id_size(none.data(), none.size()), 8u);
  EXPECT_EQ(basp_node_id_size(bytes.data(), 31), 0u); // cut short
}

TEST(basp_source_guard, a_sessions_own_frames_pass_in_any_chunking) {
  auto stream = handshake(peer)
                + frame(message_type::direct_message, std::string(100, 'x'))
                + frame(message_type::heartbeat, "") + routed(peer, self_node)
                + frame(message_type::monitor_message, payload(peer, self_node))
                + down(peer, self_node) + handshake(peer);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{32}, stream.size()}) {
    basp_source_guard g{basp_node_bytes(self_node)};
    EXPECT_EQ(feed(g, stream, chunk), refusal::none) << chunk;
    EXPECT_EQ(g.peer_node(), basp_node_bytes(peer));
  }
}

TEST(basp_source_guard, a_frame_naming_another_node_as_its_source_is_refused) {
  for (auto forged : {routed(other, self_node), down(other, self_node),
                      frame(message_type::monitor_message, payload(other, self_node))}) {
    for (size_t chunk : {size_t{1}, size_t{5}, size_t{1000}}) {
      basp_source_guard g{basp_node_bytes(self_node)};
      EXPECT_EQ(feed(g, handshake(peer) + forged, chunk), refusal::forged_source);
      // Refused for good: even the session's own frames are not read any more.
      EXPECT_EQ(g.feed(routed(peer, self_node).data(), 40), refusal::forged_source);
    }
  }
  // Before any handshake, no frame may name a source.
  basp_source_guard early;
  EXPECT_EQ(feed(early, routed(peer, self_node), 3), refusal::forged_source);
}

TEST(basp_source_guard, forwarding_and_a_second_identity_are_refused) {
  basp_source_guard g{basp_node_bytes(self_node)};
  EXPECT_EQ(feed(g, handshake(peer) + routed(peer, other), 4),
            refusal::foreign_destination);
  basp_source_guard unknown_self; // no local node set: destinations not checked
  EXPECT_EQ(feed(unknown_self, handshake(peer) + routed(peer, other), 4), refusal::none);
  basp_source_guard twice{basp_node_bytes(self_node)};
  EXPECT_EQ(feed(twice, handshake(peer) + handshake(other), 9), refusal::changed_node);
  basp_source_guard nobody;
  EXPECT_EQ(feed(nobody, handshake(caf::node_id{}), 9), refusal::malformed);
}

TEST(basp_source_guard, a_header_announcing_a_body_above_the_largest_message_is_refused) {
  // Only the header: the guard refuses before the body (which CAF would
  // allocate at the size announced) arrives.
  auto header_only = [](uint32_t len) {
    caf::io::basp::header hdr{message_type::direct_message, 0, len, 0, 7, 9};
    std::vector<char> buf;
    caf::binary_serializer sink{nullptr, buf};
    EXPECT_FALSE(sink(hdr));
    return std::string{buf.begin(), buf.end()};
  };
  for (uint32_t len : {basp_source_guard::max_payload + 1, uint32_t{0xFFFFFFFF}}) {
    for (size_t chunk : {size_t{1}, size_t{32}}) {
      basp_source_guard g{basp_node_bytes(self_node)};
      EXPECT_EQ(feed(g, handshake(peer) + header_only(len), chunk), refusal::oversized)
          << len;
    }
    basp_source_guard early; // before any handshake too
    EXPECT_EQ(feed(early, header_only(len), 32), refusal::oversized);
  }
  // At the bound: taken (the body follows in later reads).
  basp_source_guard at{basp_node_bytes(self_node)};
  EXPECT_EQ(feed(at, handshake(peer) + header_only(basp_source_guard::max_payload), 32),
            refusal::none);
  EXPECT_EQ(to_string(refusal::oversized), "oversized");
}

TEST(basp_source_guard,
     random_streams_end_in_a_verdict_and_never_pass_an_oversized_header) {
  // 20,000 streams: valid frames of this session, then random mutations (a
  // flipped byte, a random length, garbage), fed in random chunks. The guard
  // must never throw or stall, must refuse every header announcing more than
  // max_payload, and once refused must stay refused.
  std::mt19937_64 rng{20261127};
  auto pick = [&](uint64_t n) { return static_cast<size_t>(rng() % n); };
  for (int run = 0; run < 20000; ++run) {
    std::string stream = handshake(peer);
    int frames = 1 + static_cast<int>(pick(6));
    for (int f = 0; f < frames; ++f) {
      switch (pick(4)) {
      case 0:
        stream += frame(message_type::direct_message, std::string(pick(200), 'x'));
        break;
      case 1:
        stream += routed(peer, self_node);
        break;
      case 2:
        stream += down(peer, self_node);
        break;
      default:
        stream += frame(message_type::heartbeat, "");
      }
    }
    // A header announcing a random length, at a frame boundary.
    bool oversized = false;
    size_t header_end = 0;
    if (pick(3) == 0) {
      uint32_t len = pick(2) == 0 ? basp_source_guard::max_payload + 1
                                        + static_cast<uint32_t>(pick(1u << 30))
                                  : static_cast<uint32_t>(pick(1024));
      caf::io::basp::header hdr{message_type::direct_message, 0, len, 0, 7, 9};
      std::vector<char> buf;
      caf::binary_serializer sink{nullptr, buf};
      EXPECT_FALSE(sink(hdr));
      stream.append(buf.begin(), buf.end());
      oversized = len > basp_source_guard::max_payload;
      header_end = stream.size();
    }
    // Garbage or a flipped byte somewhere.
    bool flipped_before = false;
    if (pick(4) == 0) {
      auto at = pick(stream.size());
      stream[at] ^= static_cast<char>(1 + pick(255));
      flipped_before = at < header_end;
    }
    if (pick(4) == 0)
      for (size_t i = pick(64); i > 0; --i)
        stream.push_back(static_cast<char>(rng()));
    basp_source_guard g{basp_node_bytes(self_node)};
    refusal first = refusal::none;
    for (size_t at = 0; at < stream.size();) {
      auto n = std::min(stream.size() - at, 1 + pick(97));
      auto r = g.feed(stream.data() + at, n);
      if (first == refusal::none)
        first = r;
      else
        ASSERT_EQ(r, first) << "run " << run; // refused for good
      at += n;
    }
    // A flipped byte before it may shift the frame boundaries and hide the
    // header (or be refused first); without one, it is refused as oversized.
    if (oversized && !flipped_before)
      EXPECT_EQ(g.refused(), refusal::oversized) << "run " << run;
  }
}

} // namespace basp_source_guard_test
