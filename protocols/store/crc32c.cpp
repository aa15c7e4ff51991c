#include "protocols/store/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define CONCLAVE_CRC32C_X86 1
#endif

namespace conclave::store {

namespace {

/// Slicing-by-4 tables, built once.
struct tables {
  std::array<std::array<uint32_t, 256>, 4> t{};
  tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (size_t s = 1; s < 4; ++s)
        t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};

const tables& get_tables() {
  static const tables instance;
  return instance;
}

#ifdef CONCLAVE_CRC32C_X86
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const void* data,
                                                        size_t size) noexcept {
  auto p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    size -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (size-- > 0)
    c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#endif

bool detect_hardware() noexcept {
#ifdef CONCLAVE_CRC32C_X86
  // Runs during static initialisation, possibly before libgcc's own CPU
  // probe: initialise it first. (Should another static initialiser call
  // crc32c() before this one ran, use_hardware is still false: the table
  // version, the same value.)
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

const bool use_hardware = detect_hardware();

} // namespace

bool crc32c_hardware() noexcept {
  return use_hardware;
}

uint32_t crc32c(uint32_t crc, const void* data, size_t size) noexcept {
#ifdef CONCLAVE_CRC32C_X86
  if (use_hardware)
    return crc32c_sse42(crc, data, size);
#endif
  return crc32c_portable(crc, data, size);
}

uint32_t crc32c_portable(uint32_t crc, const void* data, size_t size) noexcept {
  const auto& t = get_tables().t;
  auto p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  while (size >= 4) {
    crc ^= uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16
           | uint32_t{p[3]} << 24;
    crc = t[3][crc & 0xFF] ^ t[2][(crc >> 8) & 0xFF] ^ t[1][(crc >> 16) & 0xFF]
          ^ t[0][crc >> 24];
    p += 4;
    size -= 4;
  }
  while (size-- > 0)
    crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
  return ~crc;
}

} // namespace conclave::store
