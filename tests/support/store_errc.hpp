// The store's error code of a std::error_code that a store operation returned
// (tests compare codes, not messages).
#pragma once

#include "protocols/store/errc.hpp"

#include <system_error>

namespace conclave::test {

inline store::errc code(const std::error_code& e) {
  return static_cast<store::errc>(e.value());
}

} // namespace conclave::test
