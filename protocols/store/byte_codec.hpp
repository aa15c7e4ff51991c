// Little-endian fixed-width encoding of integers and length-prefixed byte
// strings: the building blocks of log records and checkpoint images. The
// reader never reads past its input; a short or malformed input sets ok() false.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace conclave::store {

/// Appends encoded values to a std::string buffer.
class byte_writer {
public:
  explicit byte_writer(std::string& out) : out_(out) {}

  void u8(uint8_t x) { out_.push_back(static_cast<char>(x)); }
  void u32(uint32_t x) { put(x, 4); }
  void u64(uint64_t x) { put(x, 8); }
  /// u32 length, then the bytes.
  void bytes(std::string_view x) {
    u32(static_cast<uint32_t>(x.size()));
    out_.append(x.data(), x.size());
  }

private:
  // One append per field, not one push_back per byte (records are encoded
  // on every job change and commit: the per-byte growth checks showed).
  void put(uint64_t x, int n) {
    char buf[8];
    for (int i = 0; i < n; ++i)
      buf[i] = static_cast<char>((x >> (8 * i)) & 0xFF);
    out_.append(buf, static_cast<size_t>(n));
  }
  std::string& out_;
};

/// Reads values written by byte_writer from a view.
class byte_reader {
public:
  explicit byte_reader(std::string_view in) : in_(in) {}

  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  std::string bytes() {
    auto n = u32();
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s{in_.substr(pos_, n)};
    pos_ += n;
    return s;
  }

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  size_t position() const { return pos_; }

private:
  uint64_t get(size_t n) {
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return 0;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i)
      x |= uint64_t{static_cast<unsigned char>(in_[pos_ + i])} << (8 * i);
    pos_ += n;
    return x;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

} // namespace conclave::store
