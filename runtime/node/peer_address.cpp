// See peer_address.hpp.
#include "runtime/node/peer_address.hpp"

#include <optional>

namespace conclave::node {

std::string in_quotes(std::string_view s) {
  return "'" + std::string{s} + "'";
}

namespace {

std::optional<uint64_t> parse_uint(std::string_view s, uint64_t max) {
  if (s.empty() || s.size() > 20)
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    auto next = v * 10 + static_cast<uint64_t>(c - '0');
    if (next < v)
      return std::nullopt;
    v = next;
  }
  if (v > max)
    return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

} // namespace

result<address> parse_address(std::string_view text) {
  text = trim(text);
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return "expected HOST:PORT, got " + in_quotes(text);
  auto host = text.substr(0, colon);
  auto port = parse_uint(text.substr(colon + 1), 65535);
  if (!port || *port == 0)
    return "expected HOST:PORT with a port from 1 to 65535, got " + in_quotes(text);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.find_first_of(" /@,") != std::string_view::npos)
    return "expected HOST:PORT, got " + in_quotes(text);
  return address{host.empty() ? "127.0.0.1" : std::string{host},
                 static_cast<uint16_t>(*port)};
}

result<std::vector<std::pair<uint64_t, address>>> parse_members(std::string_view text) {
  std::vector<std::pair<uint64_t, address>> members;
  text = trim(text);
  if (text.empty())
    return members;
  size_t pos = 0;
  while (pos <= text.size()) {
    auto comma = text.find(',', pos);
    auto entry = trim(text.substr(
        pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    auto at = entry.find('@');
    if (at == std::string_view::npos)
      return "expected ID@HOST:PORT, got " + in_quotes(entry);
    auto id = parse_uint(entry.substr(0, at), UINT64_MAX);
    if (!id || *id == 0)
      return "expected ID@HOST:PORT with an id of at least 1, got " + in_quotes(entry);
    auto addr = parse_address(entry.substr(at + 1));
    if (!addr)
      return "in " + in_quotes(entry) + ": " + addr.error();
    for (auto& m : members)
      if (m.first == *id)
        return "node " + std::to_string(*id) + " is listed twice";
    members.emplace_back(*id, addr.value());
    if (comma == std::string_view::npos)
      break;
    pos = comma + 1;
  }
  return members;
}

result<std::map<uint64_t, address>> parse_peers(std::string_view text) {
  auto members = parse_members(text);
  if (!members)
    return members.error();
  return std::map<uint64_t, address>{members.value().begin(), members.value().end()};
}

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

} // namespace conclave::node
