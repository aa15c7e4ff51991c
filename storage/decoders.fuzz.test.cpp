// Deterministic random-mutation fuzzing of every decoder of on-disk bytes:
// log record frames, a log directory (scan and repair), checkpoint images and
// checkpoint files, backup manifests. Each starts from valid inputs, applies
// bit flips, truncations, insertions, random overwrites and length-like fields
// set to 0, 1, max or the remaining size (optionally fixing the checksum so the
// mutation reaches the parser behind it), and checks that decoding returns a
// result or an error: no crash, no exception, no hang (bounded iterations, a
// few seconds in all). Fixed seeds: a failure names the iteration to replay.
#include "protocols/store/crc32c.hpp"
#include "protocols/store/log_record.hpp"
#include "protocols/store/store_core.hpp"
#include "storage/backup.hpp"
#include "storage/checkpoint_file.hpp"
#include "storage/log_scan.hpp"
#include "storage/wal.hpp"

#include "tests/support/log_frames.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>

using namespace conclave::store;
namespace fs = std::filesystem;

namespace {

class mutator {
public:
  explicit mutator(uint64_t seed) : rng_(seed) {}

  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  /// One to three mutations of `s`.
  std::string mutate(std::string s) {
    auto n = 1 + below(3);
    for (uint64_t i = 0; i < n; ++i)
      s = once(std::move(s));
    return s;
  }

private:
  std::string once(std::string s) {
    switch (below(6)) {
    case 0: // bit flips
      for (auto k = 1 + below(4); k > 0 && !s.empty(); --k) {
        auto at = below(s.size());
        s[at] = static_cast<char>(s[at] ^ (1 << below(8)));
      }
      return s;
    case 1: // truncation
      s.resize(below(s.size() + 1));
      return s;
    case 2: { // insertion
      auto at = below(s.size() + 1);
      s.insert(at, random_bytes(1 + below(16)));
      return s;
    }
    case 3: { // random overwrite
      if (s.empty())
        return s;
      auto at = below(s.size());
      auto len = std::min<uint64_t>(1 + below(16), s.size() - at);
      auto r = random_bytes(len);
      s.replace(at, len, r);
      return s;
    }
    case 4: { // a length-like u32 or u64 field: 0, 1, max, remaining size
      if (s.size() < 4)
        return s;
      auto at = below(s.size() - 3);
      uint64_t choices[] = {
          0, 1, 0xFFFFFFFFu, 0x7FFFFFFFu, s.size() - at, 0xFFFFFFFFFFFFFFFFull};
      auto v = choices[below(6)];
      auto width = at + 8 <= s.size() && below(2) == 0 ? 8u : 4u;
      for (unsigned i = 0; i < width; ++i)
        s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
      return s;
    }
    default: // random bytes of a similar size
      return random_bytes(below(2 * s.size() + 2));
    }
  }

  std::string random_bytes(uint64_t n) {
    std::string r(n, '\0');
    for (auto& c : r)
      c = static_cast<char>(rng_() & 0xFF);
    return r;
  }

  std::mt19937_64 rng_;
};

void put_u32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

/// Recomputes a frame's CRC so that a mutated body reaches the parser.
void fix_frame_crc(std::string& f) {
  if (f.size() < record_header_size)
    return;
  uint32_t raw = 0;
  for (int i = 0; i < 4; ++i)
    raw |= uint32_t{static_cast<unsigned char>(f[i])} << (8 * i);
  auto body = raw & ~batch_flag;
  if (body > f.size() - record_header_size)
    return;
  auto crc = crc32c(0, f.data() + 8, record_header_size - 8 + body);
  if (raw & batch_flag) // a stamped frame's CRC also covers its size field
    crc = crc32c(crc, f.data(), 4);
  put_u32(f, 4, crc);
}

std::vector<std::string> sample_frames() {
  std::vector<std::string> out;
  log_record c;
  c.lsn = lsn{5};
  c.txn = txn_id{9};
  c.ops.push_back({op_kind::put, 1, "key", "value"});
  c.ops.push_back({op_kind::remove, 1, "gone", ""});
  c.ops.push_back({op_kind::enqueue, 2, "", "item"});
  c.ops.push_back({op_kind::dequeue, 2, std::string(8, '\1'), ""});
  out.push_back(encode_record(c));
  log_record k;
  k.lsn = lsn{1};
  k.type = record_type::create_collection;
  k.created = {1, "orders", collection_kind::dictionary, "string", "order"};
  out.push_back(encode_record(k));
  log_record empty;
  empty.lsn = lsn{2};
  out.push_back(encode_record(empty));
  // Frames as the log writes them: stamped with their write's first lsn.
  for (size_t i = 0, n = out.size(); i < n; ++i) {
    auto stamped = out[i];
    stamp_batch(stamped, lsn{1});
    out.push_back(std::move(stamped));
  }
  c.batch_first = lsn{5};
  out.push_back(encode_record(c));
  return out;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

TEST(decoder_fuzz, log_records_decode_or_fail_and_valid_ones_round_trip) {
  mutator m{1};
  auto frames = sample_frames();
  int stamped = 0; // decoded frames with batch_first
  for (int i = 0; i < 200000; ++i) {
    auto f = m.mutate(frames[m.below(frames.size())]);
    if (m.below(2) == 0)
      fix_frame_crc(f);
    auto d = decode_record(f);
    if (d.status != decode_status::ok)
      continue;
    ASSERT_LE(d.size, f.size()) << "iteration " << i;
    // A frame that decodes is exactly what encoding its record gives.
    ASSERT_EQ(encode_record(d.record), f.substr(0, d.size)) << "iteration " << i;
    if (d.record.batch_first.value != 0) {
      ++stamped;
      ASSERT_LE(d.record.batch_first, d.record.lsn) << "iteration " << i;
    }
    // Stamping a decoded frame (again) gives what encoding gives.
    auto restamped = f.substr(0, d.size);
    auto r = d.record;
    r.batch_first = lsn{1};
    stamp_batch(restamped, r.batch_first);
    ASSERT_EQ(restamped, encode_record(r)) << "iteration " << i;
  }
  EXPECT_GT(stamped, 1000); // the mutations reached stamped frames' parser
}

TEST(decoder_fuzz, checkpoint_images_load_or_fail) {
  store_core source;
  ASSERT_TRUE(source.ensure_collection("d", collection_kind::dictionary, "k", "v"));
  ASSERT_TRUE(source.ensure_collection("q", collection_kind::queue, "", "v"));
  auto t = source.begin();
  for (int i = 0; i < 4; ++i) {
    op_request put;
    put.txn = t;
    put.collection = "d";
    put.op = operation::add_or_update;
    put.key = "key" + std::to_string(i);
    put.value = "value" + std::to_string(i);
    ASSERT_TRUE(source.execute(put, timestamp{std::chrono::hours{1}}));
    op_request enq;
    enq.txn = t;
    enq.collection = "q";
    enq.op = operation::enqueue;
    enq.value = "item" + std::to_string(i);
    ASSERT_TRUE(source.execute(enq, timestamp{std::chrono::hours{1}}));
  }
  ASSERT_TRUE(source.commit(t));
  auto image = source.encode_checkpoint();
  {
    store_core check;
    ASSERT_TRUE(check.load_checkpoint(image));
  }
  mutator m{2};
  int loaded = 0;
  for (int i = 0; i < 50000; ++i) {
    auto img = m.mutate(image);
    if (m.below(4) != 0 && img.size() >= 4) // let most reach the parser
      put_u32(img, img.size() - 4,
              crc32c(std::string_view{img}.substr(0, img.size() - 4)));
    store_core core;
    auto r = core.load_checkpoint(img);
    if (!r)
      continue;
    ++loaded;
    // What loaded encodes to an image that loads again.
    store_core again;
    ASSERT_TRUE(again.load_checkpoint(core.encode_checkpoint())) << "iteration " << i;
  }
  EXPECT_GT(loaded, 0); // some mutations keep a valid image (e.g. value bytes)
}

TEST(decoder_fuzz, checkpoint_files_read_or_fail) {
  conclave::test::temp_dir dir{"conclave-fuzz-ckpt"};
  ASSERT_TRUE(write_checkpoint(dir.path(), lsn{42}, "an image", files::default_sync()));
  auto file = list_checkpoints(dir.path()).front();
  auto original = files::read_file(file).value();
  mutator m{3};
  for (int i = 0; i < 1000; ++i) {
    write_file(file, m.mutate(original));
    auto r = read_checkpoint(file);
    if (r) {
      ASSERT_EQ(r.value().at, lsn{42}) << "iteration " << i; // the name must match
    }
  }
}

TEST(decoder_fuzz, backup_manifests_parse_or_fail) {
  const std::string valid = "conclave-backup 1\nkind full\nfrom 3\nto 9\n"
                            "file ckpt-00000000000000000003.ckpt 120 0badf00d\n"
                            "file log.wal 400 12345678\n";
  ASSERT_TRUE(parse_backup_manifest(valid));
  // Token-level damage operators make: a CRC that is not hex, huge numbers.
  for (auto bad : {"0badf00x", "-1", "zz", "123456789", "", "0x1234567"}) {
    auto text = valid;
    text.replace(text.find("0badf00d"), 8, bad);
    EXPECT_FALSE(parse_backup_manifest(text)) << bad;
  }
  for (auto bad : {"99999999999999999999999", "-5", "12a", "1e9"}) {
    auto text = valid;
    text.replace(text.find(" 400 "), 5, std::string{" "} + bad + " ");
    EXPECT_FALSE(parse_backup_manifest(text)) << bad;
  }
  mutator m{4};
  for (int i = 0; i < 100000; ++i) {
    auto r = parse_backup_manifest(m.mutate(valid));
    if (r) {
      ASSERT_LE(r.value().from, r.value().to) << "iteration " << i;
    }
  }
}

TEST(decoder_fuzz, log_directories_scan_or_fail_and_repair_leaves_an_openable_log) {
  mutator m{5};
  for (int i = 0; i < 300; ++i) {
    conclave::test::temp_dir dir{"conclave-fuzz-log"};
    fs::create_directories(dir / "log");
    // Three segments of five records.
    std::vector<std::pair<fs::path, std::string>> segs;
    for (uint64_t first : {1, 6, 11}) {
      std::string bytes;
      for (auto l = first; l < first + 5; ++l)
        bytes += conclave::test::record_frame(l, 20);
      auto p = dir / "log" / files::lsn_name("seg-", lsn{first}, ".wal");
      segs.emplace_back(p, bytes);
    }
    auto victim = m.below(segs.size());
    segs[victim].second = m.mutate(segs[victim].second);
    if (m.below(3) == 0)
      segs[victim].second.append(m.below(64), '\0'); // preallocated-looking tail
    for (auto& [p, bytes] : segs)
      write_file(p, bytes);
    if (m.below(8) == 0)
      fs::remove(segs[m.below(segs.size())].first);
    log_scan_options so;
    so.base = lsn{m.below(16)};
    so.read_covered = m.below(2) == 0;
    uint64_t next = so.base.value + 1;
    auto scanned = scan_log(dir.path(), so,
                            [&](const log_record& r, std::string_view) -> result<void> {
                              EXPECT_EQ(r.lsn.value, next) << "iteration " << i;
                              ++next;
                              return outcome::success();
                            });
    ASSERT_TRUE(scanned) << "iteration " << i;
    // Recovery with repair, then a plain open of what it left.
    wal_options o;
    o.dir = dir.path();
    o.repair = true;
    o.sync = [](int) { return 0; }; // no fsync: the test is about parsing
    auto none = [](const log_record&) { return result<void>{outcome::success()}; };
    wal_recovery rep;
    auto w = wal::open(o, so.base, none, rep);
    ASSERT_TRUE(w) << "iteration " << i << ": " << w.error().message();
    w.value().reset();
    o.repair = false;
    wal_recovery again;
    auto w2 = wal::open(o, so.base, none, again);
    ASSERT_TRUE(w2) << "iteration " << i << ": " << again.problem;
    EXPECT_FALSE(again.tail_cut) << "iteration " << i << ": " << again.cut_reason;
  }
}
