#include "actors/replication/checkpoint_image.hpp"

#include "protocols/store/byte_codec.hpp"
#include "protocols/store/crc32c.hpp"

namespace conclave::replication {

namespace {

constexpr std::string_view magic = "CRPLCKPT";
constexpr uint32_t version = 1;
constexpr size_t header_size = 8 + 4 + 8 * 6;

} // namespace

std::string encode_checkpoint_image(const checkpoint_image& c) {
  std::string out;
  out.reserve(header_size + c.store_image.size() + 4);
  out.append(magic);
  store::byte_writer w{out};
  w.u32(version);
  w.u64(c.at.value);
  w.u64(c.at_term.epoch);
  w.u64(c.at_term.leader.value);
  w.u64(c.at_term.incarnation);
  w.u64(c.digest);
  w.u64(c.store_image.size());
  out.append(c.store_image);
  w.u32(store::crc32c(out));
  return out;
}

store::result<checkpoint_image> decode_checkpoint_image(std::string_view bytes) {
  if (bytes.size() < header_size + 4 || bytes.substr(0, magic.size()) != magic)
    return store::errc::corrupt_data;
  auto body = bytes.substr(0, bytes.size() - 4);
  store::byte_reader crc_reader{bytes.substr(bytes.size() - 4)};
  if (store::crc32c(body) != crc_reader.u32())
    return store::errc::corrupt_data;
  store::byte_reader r{body.substr(magic.size())};
  checkpoint_image c;
  if (r.u32() != version)
    return store::errc::corrupt_data;
  c.at = lsn{r.u64()};
  c.at_term.epoch = r.u64();
  c.at_term.leader = node_id{r.u64()};
  c.at_term.incarnation = r.u64();
  c.digest = r.u64();
  auto size = r.u64();
  if (size != body.size() - header_size)
    return store::errc::corrupt_data;
  c.store_image = std::string{body.substr(header_size)};
  return c;
}

} // namespace conclave::replication
