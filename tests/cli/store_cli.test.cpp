// `conclave store check|backup|restore` as operators call it: exit statuses,
// one line for bad input, a check that reports damage without repairing it,
// and a backup restored through the command line that has the same contents.
#include "storage/collections.hpp"
#include "storage/file_term_file.hpp"
#include "storage/wal_log_device.hpp"
#include "tests/process/process_support.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <future>

#include <gtest/gtest.h>

#include <fstream>

using conclave::process_test::run_conclave;
using namespace conclave::store;
namespace fs = std::filesystem;

namespace {

/// A data directory with `n` committed keys and a queue of 2, closed again.
void fill(const fs::path& dir, int n) {
  state_manager_options o;
  o.dir = dir;
  o.preallocate_bytes = 0; // an appended log: cutting the file cuts records
  auto s = state_manager::open(o).value();
  auto d = s->dictionary<std::string, int32_t>("d").value();
  auto q = s->queue<std::string>("q").value();
  for (int i = 0; i < n; ++i) {
    auto tx = s->begin();
    ASSERT_TRUE(d.add_or_update(tx, "k" + std::to_string(i), i));
    if (i < 2) {
      ASSERT_TRUE(q.enqueue(tx, "item"));
    }
    ASSERT_TRUE(tx.commit());
  }
}

nlohmann::json check_json(const fs::path& dir, int expected_status) {
  auto r = run_conclave("store check --json --dir " + dir.string());
  EXPECT_EQ(r.status, expected_status) << r.out;
  return nlohmann::json::parse(r.out);
}

} // namespace

TEST(store_cli, bad_input_is_exit_2_with_one_line) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  for (auto args :
       {"store check --dir " + (tmp / "missing").string(), std::string{"store check"},
        "store backup --dir " + (tmp / "missing").string() + " --to x",
        "store restore --from " + (tmp / "missing").string() + " --dir x",
        std::string{"store frobnicate"}}) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
  }
}

TEST(store_cli, check_reports_a_clean_directory_and_its_collections) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  fill(tmp / "data", 5);
  auto j = check_json(tmp / "data", 0);
  EXPECT_TRUE(j["clean"].get<bool>());
  EXPECT_EQ(j["log"]["records"], 7); // two creations + five commits
  EXPECT_EQ(j["recovered_lsn"], 7);
  ASSERT_EQ(j["collections"].size(), 2u);
  EXPECT_EQ(j["collections"][0]["name"], "d");
  EXPECT_EQ(j["collections"][0]["items"], 5);
  EXPECT_EQ(j["collections"][1]["kind"], "queue");
  EXPECT_EQ(j["collections"][1]["items"], 2);
}

TEST(store_cli, check_reports_a_torn_tail_and_a_corrupt_checkpoint_without_repairing) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto data = tmp / "data";
  fill(data, 5);
  auto seg = (data / "log" / "seg-00000000000000000001.wal");
  auto size = fs::file_size(seg);
  fs::resize_file(seg, size - 5);
  auto j = check_json(data, 1);
  EXPECT_FALSE(j["clean"].get<bool>());
  EXPECT_TRUE(j["recoverable"].get<bool>());
  EXPECT_TRUE(j["log"]["ends_early"].get<bool>());
  EXPECT_NE(j["log"]["reason"].get<std::string>().find("torn"), std::string::npos);
  EXPECT_EQ(j["recovered_lsn"], 6);
  EXPECT_EQ(fs::file_size(seg), size - 5); // check changes nothing
  // A corrupt checkpoint is named, and recovery is still possible from the log.
  fs::create_directories(data / "checkpoints");
  { std::ofstream{data / "checkpoints" / "ckpt-00000000000000000003.ckpt"} << "garbage"; }
  auto k = check_json(data, 1);
  ASSERT_EQ(k["checkpoints"].size(), 1u);
  EXPECT_FALSE(k["checkpoints"][0]["ok"].get<bool>());
  EXPECT_TRUE(k["recoverable"].get<bool>());
  auto text = run_conclave("store check --dir " + data.string());
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("CORRUPT"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("log ends early"), std::string::npos) << text.out;
}

TEST(store_cli, a_log_with_missing_records_is_reported_unrecoverable) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto data = tmp / "data";
  {
    state_manager_options o;
    o.dir = data;
    auto s = state_manager::open(o).value();
    auto d = s->dictionary<std::string, int32_t>("d").value();
    for (int round = 0; round < 3; ++round) {
      auto tx = s->begin();
      ASSERT_TRUE(d.add_or_update(tx, "k" + std::to_string(round), round));
      ASSERT_TRUE(tx.commit());
      ASSERT_TRUE(s->checkpoint()); // the second one drops the log up to the first
    }
  }
  // Without the checkpoints the log no longer starts at lsn 1.
  fs::remove_all(data / "checkpoints");
  auto j = check_json(data, 1);
  EXPECT_FALSE(j["recoverable"].get<bool>());
  EXPECT_NE(j["problem"].get<std::string>().find("missing"), std::string::npos)
      << j.dump();
}

TEST(store_cli, a_log_corrupt_before_its_end_refuses_until_repair_keeps_a_copy) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto data = tmp / "data";
  fill(data, 50);
  auto seg = data / "log" / "seg-00000000000000000001.wal";
  auto original = conclave::process_test::read_file(seg);
  {
    std::fstream f{seg, std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(400);
    f.put('\x55');
  }
  // Opening it (a backup does) fails with the file and offset, exit 1.
  auto refused = run_conclave(
      "store backup --dir " + data.string() + " --to " + (tmp / "b").string(), true);
  EXPECT_EQ(refused.status, 1) << refused.out;
  EXPECT_NE(refused.out.find("seg-00000000000000000001.wal at byte "), std::string::npos)
      << refused.out;
  EXPECT_EQ(fs::file_size(seg), original.size());
  // check says what a repair would drop.
  auto j = check_json(data, 1);
  EXPECT_FALSE(j["recoverable"].get<bool>());
  EXPECT_TRUE(j["log"]["corrupt_in_middle"].get<bool>());
  EXPECT_GT(j["log"]["repair_would_drop"]["records"].get<int>(), 10) << j.dump();
  EXPECT_EQ(j["log"]["repair_would_drop"]["last_lsn"], 52);
  // The same repair of a copy, as JSON.
  auto copy = data.parent_path() / "copy";
  fs::copy(data, copy, fs::copy_options::recursive);
  auto as_json = run_conclave("store repair --json --dir " + copy.string());
  ASSERT_EQ(as_json.status, 0) << as_json.out;
  auto rj = nlohmann::json::parse(as_json.out, nullptr, false);
  ASSERT_TRUE(rj.is_object()) << as_json.out;
  EXPECT_TRUE(rj["repaired"].get<bool>());
  EXPECT_EQ(rj["dropped_last"], 52);
  EXPECT_GT(rj["dropped_records"].get<int>(), 10);
  ASSERT_EQ(rj["copies"].size(), 1u);
  EXPECT_TRUE(fs::exists(rj["copies"][0].get<std::string>()));
  auto repaired = run_conclave("store repair --dir " + data.string());
  ASSERT_EQ(repaired.status, 0) << repaired.out;
  EXPECT_NE(repaired.out.find("dropped"), std::string::npos) << repaired.out;
  EXPECT_NE(repaired.out.find("copy kept in"), std::string::npos) << repaired.out;
  // The copy holds every byte dropped; the store opens again.
  std::string kept;
  for (auto& e : fs::directory_iterator(data / "log" / "lost+found"))
    kept += conclave::process_test::read_file(e.path());
  EXPECT_EQ(original.size() - fs::file_size(seg), kept.size());
  auto k = check_json(data, 0);
  EXPECT_TRUE(k["clean"].get<bool>());
  auto again = run_conclave("store repair --dir " + data.string());
  EXPECT_EQ(again.status, 0);
  EXPECT_NE(again.out.find("nothing to repair"), std::string::npos) << again.out;
  auto again_json = run_conclave("store repair --json --dir " + data.string());
  auto aj = nlohmann::json::parse(again_json.out, nullptr, false);
  ASSERT_TRUE(aj.is_object()) << again_json.out;
  EXPECT_FALSE(aj["repaired"].get<bool>());
  EXPECT_EQ(aj["last"], k["recovered_lsn"]);
}

TEST(store_cli, restore_reports_a_damaged_manifest_with_exit_1_never_an_abort) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto data = tmp / "data";
  fill(data, 3);
  auto full = run_conclave("store backup --dir " + data.string() + " --to "
                           + (tmp / "b").string());
  ASSERT_EQ(full.status, 0) << full.out;
  fs::path manifest;
  for (auto& e : fs::directory_iterator(tmp / "b"))
    manifest = e.path() / "MANIFEST";
  auto text = conclave::process_test::read_file(manifest);
  auto crc = text.rfind(' ') + 1; // the last file's CRC field
  text.replace(crc, 8, "nothex!!");
  {
    std::ofstream out{manifest, std::ios::trunc};
    out << text;
  }
  auto r = run_conclave("store restore --from " + (tmp / "b").string() + " --dir "
                            + (tmp / "r").string(),
                        true);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("checksum mismatch or unparsable"), std::string::npos) << r.out;
}

TEST(store_cli, backup_and_restore_through_the_command_line) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto data = tmp / "data";
  fill(data, 4);
  auto full = run_conclave("store backup --dir " + data.string() + " --to "
                           + (tmp / "b").string());
  ASSERT_EQ(full.status, 0) << full.out;
  EXPECT_NE(full.out.find("full backup"), std::string::npos);
  fill(data, 9); // rewrites k0..k3, adds k4..k8
  auto incr = run_conclave("store backup --json --incremental --dir " + data.string()
                           + " --to " + (tmp / "b").string());
  ASSERT_EQ(incr.status, 0) << incr.out;
  auto ij = nlohmann::json::parse(incr.out, nullptr, false);
  ASSERT_TRUE(ij.is_object()) << incr.out;
  EXPECT_TRUE(ij["written"].get<bool>());
  EXPECT_EQ(ij["kind"], "incremental");
  EXPECT_TRUE(fs::exists(ij["path"].get<std::string>()));
  auto none = run_conclave("store backup --json --incremental --dir " + data.string()
                           + " --to " + (tmp / "b").string());
  EXPECT_FALSE(nlohmann::json::parse(none.out, nullptr, false)["written"].get<bool>())
      << none.out;
  auto restored = run_conclave("store restore --json --from " + (tmp / "b").string()
                               + " --dir " + (tmp / "r").string());
  ASSERT_EQ(restored.status, 0) << restored.out;
  auto rj = nlohmann::json::parse(restored.out, nullptr, false);
  ASSERT_TRUE(rj.is_object()) << restored.out;
  EXPECT_EQ(rj["to"], ij["to"]);
  EXPECT_EQ(rj["dir"], (tmp / "r").string());
  auto a = check_json(data, 0);
  auto b = check_json(tmp / "r", 0);
  EXPECT_EQ(a["recovered_lsn"], b["recovered_lsn"]);
  EXPECT_EQ(a["collections"], b["collections"]);
  EXPECT_EQ(b["collections"][0]["items"], 9);
  // A store that is open elsewhere cannot be backed up from the command line.
  state_manager_options o;
  o.dir = data;
  auto open = state_manager::open(o).value();
  auto busy = run_conclave(
      "store backup --dir " + data.string() + " --to " + (tmp / "b").string(), true);
  EXPECT_EQ(busy.status, 1);
  EXPECT_NE(busy.out.find("open in another store"), std::string::npos) << busy.out;
}

// A directory without a store (an operator's typo, or the wrong directory) is
// neither called clean nor turned into a store: one line, exit 2, and the
// directory is left as it was.
TEST(store_cli, check_and_backup_refuse_a_directory_that_holds_no_store) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto other = tmp / "notastore";
  fs::create_directories(other);
  { std::ofstream{other / "notes.txt"} << "not a store\n"; }
  for (auto args :
       {"store check --dir " + other.string(),
        "store check --json --dir " + other.string(),
        "store backup --dir " + other.string() + " --to " + (tmp / "b").string()}) {
    auto r = run_conclave(args, true);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("not a store"), std::string::npos) << r.out;
  }
  std::vector<std::string> left;
  for (auto& e : fs::directory_iterator(other))
    left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"notes.txt"}); // no LOCK, no log/
  EXPECT_FALSE(fs::exists(tmp / "b"));
}

// An incremental backup with nothing new since the previous one writes no
// (empty) backup, says so and succeeds.
TEST(store_cli, an_incremental_backup_with_nothing_new_writes_nothing) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto data = tmp / "data";
  fill(data, 3);
  auto to = " --dir " + data.string() + " --to " + (tmp / "b").string();
  ASSERT_EQ(run_conclave("store backup" + to).status, 0);
  auto count = [&] {
    return std::distance(fs::directory_iterator(tmp / "b"), fs::directory_iterator{});
  };
  auto before = count();
  auto r = run_conclave("store backup --incremental" + to);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("nothing new"), std::string::npos) << r.out;
  EXPECT_EQ(count(), before);
  // Something new: an incremental one is written.
  fill(data, 4);
  auto more = run_conclave("store backup --incremental" + to);
  EXPECT_EQ(more.status, 0) << more.out;
  EXPECT_EQ(count(), before + 1);
}

namespace {

/// DATA/replica as a node leaves it: a term file (epoch 3) and a log of
/// `records` records (lsn 1..records).
fs::path replica_with_records(const fs::path& data, uint64_t records) {
  auto dir = data / "replica";
  conclave::storage::replica_log_options o;
  o.dir = dir;
  wal_recovery report;
  auto dev = conclave::storage::wal_log_device::open(o, report);
  EXPECT_TRUE(dev);
  auto terms = conclave::storage::file_term_file::open(dir);
  EXPECT_TRUE(terms);
  EXPECT_TRUE(terms.value()->save(
      conclave::replication::term{3, conclave::replication::node_id{2}, 1}));
  for (uint64_t l = 1; l <= records; ++l) {
    log_record r;
    r.lsn = lsn{l};
    r.term = term{3};
    r.txn = txn_id{l};
    EXPECT_TRUE(dev.value()->append(r));
  }
  if (records > 0) {
    std::promise<void> done;
    dev.value()->sync([&](auto) { done.set_value(); });
    done.get_future().wait();
  }
  return dir;
}

} // namespace

TEST(store_cli, check_reports_a_replica_term_file_missing_beside_its_log) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto dir = replica_with_records(tmp / "data", 4);
  ASSERT_TRUE(fs::remove(dir / "term"));
  auto r = run_conclave("store check --dir " + dir.string(), true);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("replica data dir"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("term file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MISSING"), std::string::npos) << r.out;
  auto j = check_json(dir, 1);
  EXPECT_EQ(j["kind"], "replica");
  EXPECT_FALSE(j["clean"].get<bool>());
  EXPECT_EQ(j["term"]["state"], "missing");
  EXPECT_FALSE(fs::exists(dir / "term")); // a check changes nothing
}

TEST(store_cli, check_reports_a_corrupt_replica_term_file) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto dir = replica_with_records(tmp / "data", 2);
  std::ofstream{dir / "term", std::ios::binary | std::ios::trunc} << "CTRM garbage";
  auto j = check_json(dir, 1);
  EXPECT_FALSE(j["clean"].get<bool>());
  EXPECT_EQ(j["term"]["state"], "corrupt");
}

TEST(store_cli, check_reads_a_replica_term_file_and_a_fresh_one_needs_none) {
  conclave::test::temp_dir tmp{"conclave-store-cli"};
  auto dir = replica_with_records(tmp / "data", 3);
  auto r = run_conclave("store check --json --dir " + dir.string(), true);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["term"]["state"], "ok") << r.out;
  EXPECT_EQ(j["term"]["epoch"], 3) << r.out;
  // A new replica (nothing logged yet) has no term file: term zero, clean.
  auto fresh = replica_with_records(tmp / "fresh", 0);
  ASSERT_TRUE(fs::remove(fresh / "term"));
  auto f = check_json(fresh, 0);
  EXPECT_EQ(f["kind"], "replica");
  EXPECT_TRUE(f["clean"].get<bool>());
  EXPECT_EQ(f["term"]["state"], "none");
}
