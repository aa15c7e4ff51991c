// Base64 (RFC 4648, with padding) over OpenSSL's block coder: how keys and
// values that are not UTF-8 travel through the HTTP API (encoding=base64).
#pragma once

#include <optional>
#include <string>

namespace conclave::node {

std::string to_base64(const std::string& bytes);

/// Nothing for text that is not base64 with correct padding.
std::optional<std::string> from_base64(const std::string& text);

} // namespace conclave::node
