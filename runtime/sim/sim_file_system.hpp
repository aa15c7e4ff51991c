// sim_file_system: one simulated node's disk, in memory, behind the storage
// code's file_system interface (storage/api/file_system.hpp), so that the
// real write-ahead log, its log device, checkpoint and term files and their
// recovery run on it unchanged. docs/design/simulation.md, "Simulated disk".
//
// What it models
// - Files: what reads see (the written content) and what survives a crash
//   (the durable content: as of the file's last completed sync). The writes
//   and truncations since that sync are kept in order.
// - Names: creating, renaming and removing files and directories are
//   journaled in order, as ext4 and XFS do. A directory sync makes durable
//   every pending namespace operation up to the last one that touched that
//   directory (earlier ones included: the journal commits a prefix). A file
//   sync makes its data durable, not its name.
// - crash(): power loss. A random prefix of the pending namespace operations
//   survives; each surviving file gets its durable content plus the first k
//   of its n unsynced writes (k uniform in 0..n); when k < n, the next write
//   is lost whole (one time in two) or torn after 1..all of its bytes, and,
//   with probability `garble`, the last sector (512 bytes) of what was kept
//   of it is filled with random bytes instead. Every handle and lock
//   of the dead processes dies; every operation fails with EIO until
//   restart().
// - flip_bit / flip_random_bit: media damage on request, in what reads see
//   and what survives.
// - Latency: nothing takes time here (the world's clock is not reachable);
//   the hook is called before every operation with its kind, path and size
//   (for a sync: the file's unsynced bytes), and stats() counts writes,
//   syncs and unsynced bytes, so that a host can charge virtual time or
//   stall there.
//
// What it does not model: writes reordered within a file (the kept part of
// the unsynced writes is always a prefix), a file's size durable without its
// data, failing reads or writes other than after a crash (no EIO, ENOSPC),
// permissions, hard links, the lock file's owner process (locks die with
// crash()).
//
// Deterministic: every random choice comes from the seed, in the order the
// operations arrive. Thread-safe (one lock): the log's writer thread and the
// host's thread may both call it.
#pragma once

#include "storage/api/file_system.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace conclave::sim {

class sim_file_system final : public store::file_system {
public:
  struct options {
    /// Chance that a crash fills the last sector of a torn write with
    /// random bytes.
    double garble = 0.25;
    /// Sector size for garbling.
    uint32_t sector = 512;
  };

  enum class op_kind {
    open,
    write,
    truncate,
    sync,
    close,
    read,
    stat,
    list,
    mkdir,
    rename,
    remove,
    sync_dir,
    lock,
  };

  /// One operation, as the hook sees it before it happens.
  struct op {
    op_kind kind;
    std::filesystem::path path;
    /// write: bytes written; sync: the file's unsynced bytes; else 0.
    uint64_t bytes = 0;
  };

  struct stats {
    uint64_t operations = 0;
    uint64_t writes = 0;
    uint64_t bytes_written = 0;
    uint64_t syncs = 0;
    uint64_t dir_syncs = 0;
    uint64_t reads = 0;
    uint64_t bytes_read = 0;
    uint64_t namespace_ops = 0;
    uint64_t crashes = 0;
    /// Bytes written and not yet synced, over all files, now.
    uint64_t unsynced_bytes = 0;
  };

  struct flipped {
    std::filesystem::path file;
    uint64_t offset = 0;
    unsigned bit = 0;
  };

  explicit sim_file_system(uint64_t seed);
  sim_file_system(uint64_t seed, options opts);
  ~sim_file_system() override;

  // -- file_system --------------------------------------------------------------

  store::result<std::unique_ptr<store::writable_file>>
  open_for_write(const std::filesystem::path& file, open_mode mode) override;
  store::result<std::string> read_file(const std::filesystem::path& file) override;
  store::result<uint64_t> file_size(const std::filesystem::path& file) override;
  store::result<bool> exists(const std::filesystem::path& path) override;
  store::result<std::vector<std::string>>
  list_directory(const std::filesystem::path& dir) override;
  store::result<void> create_directories(const std::filesystem::path& dir) override;
  store::result<void> rename(const std::filesystem::path& from,
                             const std::filesystem::path& to) override;
  store::result<void> remove(const std::filesystem::path& path) override;
  store::result<void> remove_all(const std::filesystem::path& path) override;
  store::result<void> sync_directory(const std::filesystem::path& dir) override;
  store::result<std::unique_ptr<store::file_lock>>
  lock_exclusive(const std::filesystem::path& file) override;

  // -- faults ----------------------------------------------------------------------

  /// Power loss (see above). Callable from the hook, from any thread.
  void crash();
  /// The processes using the disk die (kill -9) and the machine stays up:
  /// their handles and locks die, and every operation fails with EIO until
  /// restart(), as after crash(); but nothing written is lost, the unsynced
  /// writes stay pending in the page cache (a later crash() may still lose
  /// them).
  void kill_processes();
  /// The node boots again (or its process starts again): operations work
  /// again; handles and locks from before the crash stay dead.
  void restart();
  bool crashed() const;
  /// What the last crash kept and tore, one line (for failure messages).
  std::string last_crash() const;

  /// Flips bit `bit` of byte `offset` of `file`, in what reads see and in
  /// what survives a crash. no_such_file_or_directory, or invalid_argument
  /// past the end.
  store::result<void> flip_bit(const std::filesystem::path& file, uint64_t offset,
                               unsigned bit);
  /// Flips a random bit of a random file under `under` (all files if empty),
  /// among the bytes that are synced (the same in what reads see and what
  /// survives). nullopt if there is no such byte.
  std::optional<flipped> flip_random_bit(const std::filesystem::path& under = {});

  // -- observation -------------------------------------------------------------

  /// Called before every operation, on the calling thread, without the
  /// file system's lock held: it may call crash(), count, or block.
  void set_hook(std::function<void(const op&)> hook);
  stats get_stats() const;
  /// Every file (by path, "/a/b") with what reads see now.
  std::map<std::string, std::string> files() const;

  struct state;

private:
  /// Calls the hook.
  void enter(op_kind kind, const std::filesystem::path& p, uint64_t bytes = 0);

  std::shared_ptr<state> st_;
};

const char* to_string(sim_file_system::op_kind k);

} // namespace conclave::sim
