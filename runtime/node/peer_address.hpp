// A member's address and the member lists of the flags and files
// (ID@HOST:PORT,...): parsed without an actor system, so that the node's
// configuration and the small front that serves one-shot `kv` operations
// read them the same way.
#pragma once

#include <boost/outcome.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace conclave::node {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

template <class T>
using result = outcome::result<T, std::string>;

struct address {
  std::string host;
  uint16_t port = 0;

  std::string to_string() const { return host + ":" + std::to_string(port); }
  friend bool operator==(const address& a, const address& b) {
    return a.host == b.host && a.port == b.port;
  }
  friend bool operator!=(const address& a, const address& b) { return !(a == b); }
};

/// "HOST:PORT" (HOST may be empty: loopback). Port 1..65535.
result<address> parse_address(std::string_view text);

/// "ID@HOST:PORT,ID@HOST:PORT,..." → (id, address) in the order given. Rejects
/// malformed entries and duplicate ids (the error names the entry); "" is no
/// member.
result<std::vector<std::pair<uint64_t, address>>> parse_members(std::string_view text);

/// parse_members as id → address.
result<std::map<uint64_t, address>> parse_peers(std::string_view text);

/// 'TEXT': how error messages quote what the user gave.
std::string in_quotes(std::string_view s);

/// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool is_loopback(std::string_view host);

} // namespace conclave::node
