// promise_file: a node's promise record (actors/election/host.hpp) in
// DIR/lease-promise, the longest lease this member may have promised a
// leader. A restarted node keeps that promise before it grants another
// leader's lease (see "Adaptive lease" in docs/design/election.md).
//
// File (20 bytes, little endian): "CPRM", u32 version (1), u64 lease in
// nanoseconds, u32 CRC-32C of the 16 bytes before it.
//
// Guarantees
// - store() writes DIR/lease-promise.tmp, syncs it, renames it over
//   DIR/lease-promise and syncs DIR: when it returns true the value is
//   durable; a crash at any point leaves the old file or the new one.
// - No file: nothing was promised beyond guard.lease (load() answers 0).
// - A file that cannot be read, or has the wrong size, magic, version or
//   checksum, is moved aside to DIR/lease-promise.damaged (never deleted),
//   reported through `problem`, and load() answers `unreadable_as` (the
//   longest lease the node can have promised): the node then waits that long
//   at start. The next store() writes a new file.
#pragma once

#include "actors/election/host.hpp"
#include "storage/api/file_system.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace conclave::node {

class file_promise_record final : public election::promise_record {
public:
  /// Opens the record of `dir` on `disk`. `problem` is set (one line) when an
  /// existing file could not be read.
  static std::shared_ptr<file_promise_record>
  open(const std::filesystem::path& dir, std::shared_ptr<store::file_system> disk,
       election::duration unreadable_as, std::string& problem);

  election::duration load() override { return value_; }
  bool store(election::duration value) override;

  /// The file's bytes for `value`, and back (nullopt unless `bytes` is exactly
  /// a valid file).
  static std::string encode(election::duration value);
  static std::optional<election::duration> decode(std::string_view bytes);

  static constexpr const char* file_name = "lease-promise";

private:
  file_promise_record(std::filesystem::path dir, std::shared_ptr<store::file_system> disk)
      : dir_(std::move(dir)), files_(std::move(disk)) {}

  std::filesystem::path dir_;
  std::shared_ptr<store::file_system> files_;
  election::duration value_{0};
};

} // namespace conclave::node
