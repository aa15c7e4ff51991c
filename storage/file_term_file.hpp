// file_term_file: a replica's promised term in DIR/term, for the replica host
// (storage/api/term_file.hpp), on the disk or on another file_system
// (storage/api/file_system.hpp).
//
// File (36 bytes, little endian): "CTRM", u32 version (1), u64 epoch,
// u64 leader, u64 incarnation, u32 CRC-32C of the 32 bytes before it.
//
// Guarantees
// - save() writes DIR/term.tmp, fsyncs it, renames it over DIR/term and
//   fsyncs DIR: when it returns the new term is durable, and a crash at any
//   point leaves either the old file or the new one, never a mix. Until it
//   succeeds, load() keeps answering the old term.
// - Open: no DIR/term is term zero (a new replica). A DIR/term.tmp left by a
//   crash during save() is removed: that save never returned, so nothing was
//   sent that depends on it. A DIR/term that cannot be read, has the wrong
//   size, magic, version or checksum fails the open (the read error, or
//   corrupt_data), and is left as it is: never taken for term zero, which
//   would let the replica vote or accept again in a term it already left.
#pragma once

#include "storage/api/file_system.hpp"
#include "storage/api/term_file.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace conclave::storage {

class file_term_file final : public replication::term_file {
public:
  /// Opens DIR/term (dir created if missing) on the disk.
  static store::result<std::shared_ptr<file_term_file>>
  open(const std::filesystem::path& dir);
  /// The same on `disk` (a simulated one, say).
  static store::result<std::shared_ptr<file_term_file>>
  open(const std::filesystem::path& dir, std::shared_ptr<store::file_system> disk);

  store::result<void> save(const replication::term& t) override;
  replication::term load() const override { return t_; }

  const std::filesystem::path& path() const { return path_; }

  /// The file's bytes for term t (tests write damaged files with it).
  static std::string encode(const replication::term& t);
  /// corrupt_data unless `bytes` is exactly a valid term file.
  static store::result<replication::term> decode(std::string_view bytes);

private:
  file_term_file(std::filesystem::path dir, std::shared_ptr<store::file_system> disk);

  std::shared_ptr<store::file_system> files_;
  std::filesystem::path dir_;
  std::filesystem::path path_;
  replication::term t_;
};

/// Opens the term file of a replica in `dir` (created if missing), on the
/// disk, or on `disk` when given.
store::result<std::shared_ptr<replication::term_file>>
open_term_file(const std::filesystem::path& dir);
store::result<std::shared_ptr<replication::term_file>>
open_term_file(const std::filesystem::path& dir,
               std::shared_ptr<store::file_system> disk);

} // namespace conclave::storage
