// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
// log record and checkpoint file. On x86-64 CPUs with SSE4.2 the crc32
// instruction computes it (8 bytes per instruction); elsewhere a table-driven
// software implementation does. Both give the same value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace conclave::store {

/// Extends `crc` (0 to start) over `data`.
uint32_t crc32c(uint32_t crc, const void* data, size_t size) noexcept;

/// The table-driven implementation, whatever the CPU (tests compare it with
/// crc32c()).
uint32_t crc32c_portable(uint32_t crc, const void* data, size_t size) noexcept;

/// true if crc32c() uses the CPU's crc32 instruction.
bool crc32c_hardware() noexcept;

inline uint32_t crc32c(std::string_view bytes) noexcept {
  return crc32c(0, bytes.data(), bytes.size());
}

} // namespace conclave::store
