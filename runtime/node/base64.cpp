// See base64.hpp.
#include "runtime/node/base64.hpp"

#include <openssl/evp.h>

namespace conclave::node {

std::string to_base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  auto n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                           reinterpret_cast<const unsigned char*>(bytes.data()),
                           static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> from_base64(const std::string& text) {
  if (text.size() % 4 != 0)
    return std::nullopt;
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '=') {
      if (i + 2 < text.size()) // padding only in the last two places
        return std::nullopt;
      ++pad;
      continue;
    }
    bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')
              || (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
    if (!ok || pad > 0) // nothing after padding
      return std::nullopt;
  }
  std::string out(3 * (text.size() / 4) + 1, '\0');
  auto n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                           reinterpret_cast<const unsigned char*>(text.data()),
                           static_cast<int>(text.size()));
  if (n < 0)
    return std::nullopt;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

} // namespace conclave::node
