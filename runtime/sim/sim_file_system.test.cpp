// The simulated disk's model on its own: what a crash keeps (synced data and
// names always; unsynced writes as a prefix, maybe torn and garbled; names
// only once their directory was synced), renames atomic across a crash, bit
// flips, dead handles and locks after a crash, the hook, determinism.
#include "runtime/sim/sim_file_system.hpp"

#include <gtest/gtest.h>

#include <set>

using conclave::sim::sim_file_system;
using conclave::store::errc;
using conclave::store::file_system;
namespace fs = std::filesystem;

namespace {

using mode = file_system::open_mode;

std::unique_ptr<conclave::store::writable_file> create(sim_file_system& d,
                                                       const fs::path& p) {
  auto f = d.open_for_write(p, mode::create_truncate);
  EXPECT_TRUE(f) << p;
  return std::move(f.value());
}

std::string read(sim_file_system& d, const fs::path& p) {
  auto r = d.read_file(p);
  return r ? r.value() : std::string{"<" + r.error().message() + ">"};
}

bool present(sim_file_system& d, const fs::path& p) {
  return d.exists(p).value();
}

void crash_restart(sim_file_system& d) {
  d.crash();
  d.restart();
}

} // namespace

TEST(sim_file_system, synced_data_and_names_survive_a_crash) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    sim_file_system d{seed};
    ASSERT_TRUE(d.create_directories("/n/log"));
    ASSERT_TRUE(d.sync_directory("/n"));
    auto f = create(d, "/n/log/a");
    ASSERT_TRUE(f->write("hello "));
    ASSERT_TRUE(f->write("world"));
    ASSERT_TRUE(f->sync());
    ASSERT_TRUE(d.sync_directory("/n/log"));
    crash_restart(d);
    EXPECT_EQ(read(d, "/n/log/a"), "hello world") << "seed " << seed;
    // The dead process's handle is dead, also after the restart.
    EXPECT_EQ(f->write("x").error(), std::errc::io_error);
  }
}

TEST(sim_file_system, unsynced_writes_are_lost_or_torn_as_a_prefix) {
  std::set<size_t> kept_sizes;
  int garbled = 0;
  const std::string synced = "0123456789";
  const std::string more(2000, 'm');
  for (uint64_t seed = 0; seed < 400; ++seed) {
    sim_file_system d{seed};
    auto f = create(d, "/a");
    ASSERT_TRUE(f->write(synced));
    ASSERT_TRUE(f->sync());
    ASSERT_TRUE(d.sync_directory("/"));
    ASSERT_TRUE(f->write(more));
    EXPECT_EQ(d.get_stats().unsynced_bytes, more.size());
    crash_restart(d);
    EXPECT_EQ(d.get_stats().unsynced_bytes, 0u);
    auto got = read(d, "/a");
    ASSERT_GE(got.size(), synced.size()) << "seed " << seed;
    ASSERT_LE(got.size(), synced.size() + more.size()) << "seed " << seed;
    EXPECT_EQ(got.substr(0, synced.size()), synced) << "seed " << seed;
    kept_sizes.insert(got.size());
    auto tail = got.substr(synced.size());
    if (tail != std::string(tail.size(), 'm')) {
      ++garbled;
      // Only the last kept sector may be garbled.
      auto sector_start = (got.size() - 1) / 512 * 512;
      auto clean = std::max(sector_start, synced.size());
      EXPECT_EQ(got.substr(synced.size(), clean - synced.size()),
                std::string(clean - synced.size(), 'm'))
          << "seed " << seed;
    }
  }
  // Both outcomes and torn sizes in between occur.
  EXPECT_TRUE(kept_sizes.count(synced.size()));
  EXPECT_TRUE(kept_sizes.count(synced.size() + more.size()));
  EXPECT_GT(kept_sizes.size(), 10u);
  EXPECT_GT(garbled, 0);
}

TEST(sim_file_system, a_name_is_durable_only_once_its_directory_is_synced) {
  int lost = 0, kept = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    sim_file_system d{seed};
    auto f = create(d, "/new");
    ASSERT_TRUE(f->write("data"));
    ASSERT_TRUE(f->sync()); // the data, not the name
    crash_restart(d);
    if (present(d, "/new")) {
      ++kept;
      EXPECT_EQ(read(d, "/new"), "data");
    } else {
      ++lost;
    }
    // After a directory sync, always there.
    auto g = create(d, "/synced");
    ASSERT_TRUE(g->sync());
    ASSERT_TRUE(d.sync_directory("/"));
    crash_restart(d);
    EXPECT_TRUE(present(d, "/synced")) << "seed " << seed;
  }
  EXPECT_GT(lost, 0);
  EXPECT_GT(kept, 0);
}

TEST(sim_file_system, a_rename_is_atomic_across_a_crash) {
  int old_name = 0, new_name = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    sim_file_system d{seed};
    ASSERT_TRUE(d.create_directories("/c"));
    auto f = create(d, "/c/x.tmp");
    ASSERT_TRUE(f->write("image"));
    ASSERT_TRUE(f->sync());
    ASSERT_TRUE(d.sync_directory("/c"));
    ASSERT_TRUE(d.rename("/c/x.tmp", "/c/x"));
    crash_restart(d);
    bool a = present(d, "/c/x.tmp"), b = present(d, "/c/x");
    EXPECT_NE(a, b) << "seed " << seed << ": exactly one name";
    EXPECT_EQ(read(d, a ? "/c/x.tmp" : "/c/x"), "image");
    old_name += a;
    new_name += b;
  }
  EXPECT_GT(old_name, 0);
  EXPECT_GT(new_name, 0);
}

TEST(sim_file_system, a_directory_sync_commits_the_journal_up_to_it) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    sim_file_system d{seed};
    ASSERT_TRUE(d.create_directories("/n/log"));
    create(d, "/n/log/seg");
    // Syncing log/ makes the mkdirs before it durable too (journal order).
    ASSERT_TRUE(d.sync_directory("/n/log"));
    crash_restart(d);
    EXPECT_TRUE(present(d, "/n/log/seg")) << "seed " << seed;
  }
}

TEST(sim_file_system, operations_fail_until_restart_and_locks_die_with_the_crash) {
  sim_file_system d{1};
  ASSERT_TRUE(d.create_directories("/n"));
  auto lock = d.lock_exclusive("/n/LOCK");
  ASSERT_TRUE(lock);
  auto second = d.lock_exclusive("/n/LOCK");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), errc::directory_in_use);
  d.crash();
  EXPECT_TRUE(d.crashed());
  EXPECT_EQ(d.read_file("/n/LOCK").error(), std::errc::io_error);
  EXPECT_EQ(d.create_directories("/m").error(), std::errc::io_error);
  d.restart();
  ASSERT_TRUE(d.create_directories("/n"));
  auto again = d.lock_exclusive("/n/LOCK");
  EXPECT_TRUE(again) << "the dead process's lock is gone";
  lock.value().reset(); // the old handle must not release the new lock
  EXPECT_FALSE(d.lock_exclusive("/n/LOCK"));
}

TEST(sim_file_system, bit_flips_change_what_reads_see_and_survive_a_crash) {
  sim_file_system d{7};
  auto f = create(d, "/f");
  ASSERT_TRUE(f->write(std::string(100, '\0')));
  ASSERT_TRUE(f->sync());
  ASSERT_TRUE(d.sync_directory("/"));
  ASSERT_TRUE(d.flip_bit("/f", 10, 3));
  EXPECT_EQ(read(d, "/f")[10], '\x08');
  EXPECT_FALSE(d.flip_bit("/f", 100, 0));
  EXPECT_FALSE(d.flip_bit("/nothing", 0, 0));
  auto r = d.flip_random_bit("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->file, fs::path{"/f"});
  crash_restart(d);
  auto got = read(d, "/f");
  EXPECT_EQ(got[10], static_cast<char>(0x08 ^ (r->offset == 10 ? 1u << r->bit : 0u)));
  if (r->offset != 10) {
    EXPECT_EQ(got[r->offset], static_cast<char>(1u << r->bit));
  }
  // Unsynced bytes are never chosen.
  sim_file_system e{7};
  auto g = create(e, "/g");
  ASSERT_TRUE(g->write("abc"));
  EXPECT_FALSE(e.flip_random_bit());
}

TEST(sim_file_system, namespace_operations_behave_like_posix) {
  sim_file_system d{3};
  EXPECT_EQ(d.open_for_write("/missing/f", mode::create_truncate).error(),
            std::errc::no_such_file_or_directory);
  EXPECT_EQ(d.open_for_write("/f", mode::existing).error(),
            std::errc::no_such_file_or_directory);
  ASSERT_TRUE(d.create_directories("/a/b"));
  EXPECT_EQ(d.read_file("/a").error(), std::errc::is_a_directory);
  ASSERT_TRUE(create(d, "/a/b/f")->write("12345"));
  EXPECT_EQ(d.file_size("/a/b/f").value(), 5u);
  EXPECT_EQ(d.remove("/a/b").error(), std::errc::directory_not_empty);
  EXPECT_TRUE(d.remove("/not-there"));
  auto names = d.list_directory("/a").value();
  EXPECT_EQ(names, std::vector<std::string>{"b"});
  ASSERT_TRUE(d.rename("/a/b", "/a/c"));
  EXPECT_EQ(read(d, "/a/c/f"), "12345");
  EXPECT_FALSE(present(d, "/a/b/f"));
  // O_TRUNC on an existing file; existing mode keeps the content.
  {
    auto f = d.open_for_write("/a/c/f", mode::existing).value();
    ASSERT_TRUE(f->write_at(1, "X"));
    ASSERT_TRUE(f->truncate(3));
  }
  EXPECT_EQ(read(d, "/a/c/f"), "1X3");
  create(d, "/a/c/f");
  EXPECT_EQ(read(d, "/a/c/f"), "");
  ASSERT_TRUE(d.remove_all("/a"));
  EXPECT_FALSE(present(d, "/a"));
  EXPECT_TRUE(d.files().empty());
}

TEST(sim_file_system, the_hook_sees_every_operation_and_may_crash_the_disk) {
  sim_file_system d{5};
  std::vector<std::string> seen;
  int before_crash = 3;
  d.set_hook([&](const sim_file_system::op& o) {
    seen.push_back(std::string{to_string(o.kind)} + " " + o.path.string() + " "
                   + std::to_string(o.bytes));
    if (--before_crash == 0)
      d.crash();
  });
  auto f = create(d, "/f");                          // open
  ASSERT_TRUE(f->write("abcd"));                     // write
  EXPECT_EQ(f->sync().error(), std::errc::io_error); // crashed before it
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1], "write /f 4");
  EXPECT_EQ(seen[2], "sync /f 4");
}

TEST(sim_file_system, the_same_seed_and_operations_give_the_same_disk) {
  auto run = [](uint64_t seed) {
    sim_file_system d{seed};
    EXPECT_TRUE(d.create_directories("/x"));
    for (int i = 0; i < 20; ++i) {
      auto f = create(d, "/x/f" + std::to_string(i));
      EXPECT_TRUE(f->write(std::string(700 + i, static_cast<char>('a' + i))));
      if (i % 3 == 0) {
        EXPECT_TRUE(f->sync());
      }
      if (i % 5 == 0) {
        EXPECT_TRUE(d.sync_directory("/x"));
      }
    }
    d.crash();
    d.restart();
    return std::make_pair(d.files(), d.last_crash());
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

TEST(sim_file_system, a_killed_process_loses_its_handles_and_locks_but_no_write) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    sim_file_system d{seed};
    ASSERT_TRUE(d.create_directories("/n"));
    auto lock = d.lock_exclusive("/n/LOCK");
    ASSERT_TRUE(lock);
    auto f = create(d, "/n/a");
    ASSERT_TRUE(f->write("synced "));
    ASSERT_TRUE(f->sync());
    ASSERT_TRUE(f->write("and cached"));
    d.kill_processes();
    EXPECT_TRUE(d.crashed());
    EXPECT_EQ(d.read_file("/n/a").error(), std::errc::io_error);
    d.restart();
    // The page cache kept every write, and the new file's name.
    EXPECT_EQ(read(d, "/n/a"), "synced and cached") << "seed " << seed;
    EXPECT_EQ(f->write("x").error(), std::errc::io_error);
    EXPECT_TRUE(d.lock_exclusive("/n/LOCK")) << "the dead process's lock is gone";
    // Still unsynced: a power loss afterwards may lose what was never synced.
    EXPECT_GT(d.get_stats().unsynced_bytes, 0u);
  }
}
