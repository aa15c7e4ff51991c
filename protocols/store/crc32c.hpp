// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
// log record and checkpoint file. Table-driven software implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace conclave::store {

/// Extends `crc` (0 to start) over `data`.
uint32_t crc32c(uint32_t crc, const void* data, size_t size) noexcept;

inline uint32_t crc32c(std::string_view bytes) noexcept {
  return crc32c(0, bytes.data(), bytes.size());
}

} // namespace conclave::store
