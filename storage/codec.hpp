// How typed keys and values become the bytes the store keeps.
//
// - Values: std::string as its raw bytes; any other type through CAF's binary
//   serializer (so any type CAF can serialize works: an `inspect` overload or
//   a CAF type ID).
// - Keys are ordered by their encoded bytes (enumerate, key ranges), so key
//   encodings preserve the natural order where there is one: std::string raw
//   (lexicographic by unsigned bytes), unsigned integers big endian, signed
//   integers big endian with the sign bit flipped, bool as one byte. Other key
//   types use CAF's binary format, whose byte order is not the type's order:
//   enumerate still returns them sorted by those bytes.
// - Type tags (checked when a collection is opened): CAF's type name for types
//   with a CAF type ID, else the compiler's type name. Specialize
//   conclave::store::type_tag<T> to pin your own.
#pragma once

#include "protocols/store/errc.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/type_id.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace conclave::store {

template <class T, class = void>
struct type_tag {
  static std::string name() { return typeid(T).name(); }
};

template <class T>
struct type_tag<T, std::enable_if_t<caf::has_type_id<T>::value>> {
  static std::string name() { return caf::type_name<T>::value; }
};

template <class T>
struct value_codec {
  static std::string encode(const T& x) {
    std::vector<char> buf;
    caf::binary_serializer sink{nullptr, buf};
    if (auto err = sink(const_cast<T&>(x)))
      return {};
    return std::string(buf.begin(), buf.end());
  }
  static result<T> decode(std::string_view bytes) {
    T x{};
    caf::binary_deserializer source{nullptr, bytes.data(), bytes.size()};
    if (auto err = source(x))
      return errc::decode_failed;
    if (source.remaining() != 0)
      return errc::decode_failed;
    return x;
  }
};

template <>
struct value_codec<std::string> {
  static std::string encode(const std::string& x) { return x; }
  static result<std::string> decode(std::string_view bytes) { return std::string{bytes}; }
};

template <class T, class = void>
struct key_codec : value_codec<T> {};

template <>
struct key_codec<std::string> : value_codec<std::string> {};

template <>
struct key_codec<bool> {
  static std::string encode(bool x) { return std::string(1, x ? '\1' : '\0'); }
  static result<bool> decode(std::string_view b) {
    if (b.size() != 1 || static_cast<unsigned char>(b[0]) > 1)
      return errc::decode_failed;
    return b[0] == '\1';
  }
};

template <class T>
struct key_codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  using U = std::make_unsigned_t<T>;
  static constexpr U flip = std::is_signed_v<T> ? U{1} << (sizeof(T) * 8 - 1) : U{0};

  static std::string encode(T x) {
    auto u = static_cast<U>(static_cast<U>(x) ^ flip);
    std::string out(sizeof(T), '\0');
    for (size_t i = 0; i < sizeof(T); ++i)
      out[sizeof(T) - 1 - i] = static_cast<char>((u >> (8 * i)) & 0xFF);
    return out;
  }
  static result<T> decode(std::string_view b) {
    if (b.size() != sizeof(T))
      return errc::decode_failed;
    U u = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      u = static_cast<U>((u << 8) | static_cast<unsigned char>(b[i]));
    return static_cast<T>(static_cast<U>(u ^ flip));
  }
};

} // namespace conclave::store
