// The real replica storage (storage/wal_log_device.hpp: the write-ahead log,
// its checkpoint files and snapshot installs; storage/file_term_file.hpp) on
// the simulated disk (sim_file_system.hpp), through its real recovery.
//
// Property, over thousands of seeded random schedules of appends, syncs,
// checkpoints, truncations, snapshot installs and term saves, each ended by a
// crash at a random operation of the disk (sometimes a second crash during
// the recovery that follows):
// - the data directory opens again (a crash alone never makes it refuse);
// - every record a sync completion reported durable is recovered, and the
//   last checkpoint and term whose writes returned are there;
// - nothing that was never written appears: each recovered record is the one
//   appended at its lsn, each checkpoint image the one written at its lsn;
// - lsns run contiguously from the checkpoint on;
// - an interrupted truncation, checkpoint, install or term save leaves the
//   old state or the new one, never a mix.
// And with one bit flipped in a synced byte of the data directory: the open
// reports it (an error naming the file, or a cut tail naming it whose bytes
// are kept in lost+found), or recovers everything exactly: never a silent
// loss; a refused open changes no file.
//
// A planted defect (a disk whose file syncs do nothing) must be caught, so
// the check can fail.
//
// The seed fixes the schedule and every choice of the disk; the log's writer
// thread decides how appends group into writes, so a replay of a seed may cut
// at a slightly different point. A failure prints the seed, the disk's last
// operations and what the crash kept. CONCLAVE_SIM_FS_SEEDS=N runs N seeds.
#include "runtime/sim/sim_file_system.hpp"
#include "storage/file_term_file.hpp"
#include "storage/wal_log_device.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace st = conclave::store;
namespace rp = conclave::replication;
using conclave::sim::sim_file_system;
using conclave::storage::file_term_file;
using conclave::storage::replica_log_options;
using conclave::storage::wal_log_device;
namespace fs = std::filesystem;

namespace {

const fs::path data_dir = "/node/data";

uint64_t seeds_to_run(uint64_t fallback) {
  if (auto* s = std::getenv("CONCLAVE_SIM_FS_SEEDS"))
    return std::strtoull(s, nullptr, 10);
  return fallback;
}

st::log_record make_record(uint64_t l, uint64_t tag, size_t value_bytes) {
  st::log_record r;
  r.lsn = st::lsn{l};
  r.term = st::term{1 + tag / 16};
  r.txn = st::txn_id{tag};
  std::string value(value_bytes, static_cast<char>('a' + tag % 26));
  r.ops.push_back({st::op_kind::put, 0, "k" + std::to_string(tag), std::move(value)});
  return r;
}

std::string digest(const st::log_record& r) {
  return std::to_string(r.lsn.value) + "/" + std::to_string(r.term.value) + "/"
         + (r.ops.empty() ? ""
                          : r.ops[0].key + "=" + std::to_string(r.ops[0].value.size()));
}

/// A disk whose file syncs succeed without syncing: the planted defect.
class lying_disk final : public st::file_system {
public:
  explicit lying_disk(std::shared_ptr<sim_file_system> inner)
      : inner_(std::move(inner)) {}

  st::result<std::unique_ptr<st::writable_file>> open_for_write(const fs::path& f,
                                                                open_mode m) override {
    auto r = inner_->open_for_write(f, m);
    if (!r)
      return r.error();
    return std::unique_ptr<st::writable_file>{new liar(std::move(r.value()))};
  }
  st::result<std::string> read_file(const fs::path& f) override {
    return inner_->read_file(f);
  }
  st::result<uint64_t> file_size(const fs::path& f) override {
    return inner_->file_size(f);
  }
  st::result<bool> exists(const fs::path& p) override { return inner_->exists(p); }
  st::result<std::vector<std::string>> list_directory(const fs::path& d) override {
    return inner_->list_directory(d);
  }
  st::result<void> create_directories(const fs::path& d) override {
    return inner_->create_directories(d);
  }
  st::result<void> rename(const fs::path& a, const fs::path& b) override {
    return inner_->rename(a, b);
  }
  st::result<void> remove(const fs::path& p) override { return inner_->remove(p); }
  st::result<void> remove_all(const fs::path& p) override {
    return inner_->remove_all(p);
  }
  st::result<void> sync_directory(const fs::path& d) override {
    return inner_->sync_directory(d);
  }
  st::result<std::unique_ptr<st::file_lock>> lock_exclusive(const fs::path& f) override {
    return inner_->lock_exclusive(f);
  }

private:
  struct liar final : st::writable_file {
    explicit liar(std::unique_ptr<st::writable_file> f) : f(std::move(f)) {}
    st::result<void> write(std::string_view d) override { return f->write(d); }
    st::result<void> write_at(uint64_t o, std::string_view d) override {
      return f->write_at(o, d);
    }
    st::result<void> truncate(uint64_t s) override { return f->truncate(s); }
    st::result<void> sync() override { return st::outcome::success(); }
    st::result<void> close() override { return f->close(); }
    std::unique_ptr<st::writable_file> f;
  };
  std::shared_ptr<sim_file_system> inner_;
};

/// What the schedule did, as the checks need it.
struct model {
  std::map<uint64_t, std::string> history; // lsn -> digest of the record there
  uint64_t appended = 0;
  uint64_t acked = 0;    // the highest lsn a sync completion reported durable
  uint64_t required = 0; // what must be recovered (acked, lowered by cuts)
  uint64_t checkpoint_ok = 0;
  /// Checkpoint lsn -> the images written at it (a rewrite at the same lsn
  /// that a crash interrupts leaves the old one or the new one).
  std::map<uint64_t, std::set<std::string>> images;
  std::set<uint64_t> checkpoint_tried;
  /// An install the crash interrupted: recovery may find it complete.
  std::optional<std::pair<uint64_t, std::string>> install_tried;
  rp::term saved;
  std::optional<rp::term> saving;
  std::string steps; // for failure messages
};

std::string join(const std::deque<std::string>& xs) {
  std::string out;
  for (auto& x : xs)
    out += "    " + x + "\n";
  return out;
}

struct run_options {
  bool plant_lying_disk = false;
  bool flip = false; // after a clean close: flip a synced bit, then reopen
};

/// What the runs went through: the test fails if the schedules stop
/// reaching the cases they are for.
struct coverage {
  uint64_t runs = 0;
  uint64_t crashed_in_an_operation = 0; // not at the end of the schedule
  uint64_t torn_writes = 0;             // a crash tore or lost unsynced bytes
  uint64_t tails_cut = 0;               // recovery cut a torn tail
  uint64_t acked_records = 0;           // runs with something acknowledged
  uint64_t unacked_survived = 0;        // recovered past the acknowledged lsn
  uint64_t interrupted = 0;             // a truncation/checkpoint/install/save cut short
  uint64_t recovery_crashes = 0;        // a second crash inside the recovery
  uint64_t flips_refused = 0, flips_cut = 0, flips_harmless = 0;

  std::string str() const {
    std::ostringstream o;
    o << runs << " runs: " << crashed_in_an_operation << " crashed inside an operation, "
      << torn_writes << " with unsynced writes torn or lost, " << tails_cut
      << " tails cut by recovery, " << acked_records << " with acknowledged records, "
      << unacked_survived << " with unacknowledged records surviving, " << interrupted
      << " with an interrupted truncation/checkpoint/install/term save, "
      << recovery_crashes << " crashes during recovery; flips: " << flips_refused
      << " refused, " << flips_cut << " cut as a torn tail, " << flips_harmless
      << " harmless";
    return o.str();
  }
};

/// One schedule; the violation found, if any.
std::optional<std::string> run_schedule(uint64_t seed, const run_options& ro,
                                        coverage& cov) {
  ++cov.runs;
  std::mt19937_64 rng{seed};
  auto below = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  auto disk = std::make_shared<sim_file_system>(seed * 7919 + 1);
  std::shared_ptr<st::file_system> used = disk;
  if (ro.plant_lying_disk)
    used = std::make_shared<lying_disk>(disk);

  // The disk's last operations, and a crash before operation `crash_at`, or
  // (half the runs) before the `crash_at`th file sync: where unsynced bytes
  // wait, which a crash at a uniform operation rarely hits (the log syncs
  // right after it writes).
  std::mutex trace_mtx;
  std::deque<std::string> trace;
  uint64_t ops = 0, crash_at = 0;
  const bool at_a_sync = below(2) == 0;
  disk->set_hook([&](const sim_file_system::op& o) {
    bool crash_now = false;
    {
      std::lock_guard<std::mutex> guard{trace_mtx};
      trace.push_back(std::string{to_string(o.kind)} + " " + o.path.string() + " "
                      + std::to_string(o.bytes));
      if (trace.size() > 40)
        trace.pop_front();
      if (!at_a_sync || o.kind == sim_file_system::op_kind::sync)
        crash_now = ++ops == crash_at;
    }
    if (crash_now)
      disk->crash();
  });

  replica_log_options lo;
  lo.dir = data_dir;
  lo.fs = used;
  const uint64_t seg_choices[] = {300, 2048, 1u << 16};
  const uint64_t pre_choices[] = {0, 256, 4096};
  lo.segment_bytes = seg_choices[below(3)];
  lo.preallocate_bytes = pre_choices[below(3)];

  model m;
  std::ostringstream steps;
  auto fail = [&](const std::string& why) -> std::optional<std::string> {
    std::lock_guard<std::mutex> guard{trace_mtx};
    std::ostringstream out;
    out << "seed " << seed << ": " << why << "\n  segment_bytes " << lo.segment_bytes
        << ", preallocate " << lo.preallocate_bytes << ", crash before "
        << (at_a_sync ? "file sync " : "operation ") << crash_at
        << "\n  steps: " << steps.str() << "\n  crash: " << disk->last_crash()
        << "\n  last disk operations:\n"
        << join(trace);
    return out.str();
  };

  {
    st::wal_recovery rep;
    auto opened = wal_log_device::open(lo, rep);
    if (!opened)
      return fail("a fresh directory does not open: " + opened.error().message());
    auto dev = opened.value();
    auto terms = file_term_file::open(data_dir, used);
    if (!terms)
      return fail("a fresh term file does not open: " + terms.error().message());
    auto term_file = terms.value();

    const uint64_t steps_n = 5 + below(40);
    crash_at = ro.flip ? 0 : 1 + below(at_a_sync ? steps_n : steps_n * 8);
    uint64_t tag = 0;
    uint64_t epoch = 0;
    for (uint64_t i = 0; i < steps_n && !disk->crashed(); ++i) {
      auto what = below(100);
      if (what < 45) { // appends
        auto k = 1 + below(6);
        bool ok = true;
        steps << "a" << k << " ";
        for (uint64_t j = 0; j < k && ok; ++j) {
          auto r = make_record(m.appended + 1, ++tag, below(300));
          if (!dev->append(r)) {
            ok = false;
            break;
          }
          m.appended = r.lsn.value;
          m.history[r.lsn.value] = digest(r);
        }
        if (!ok)
          break;
      } else if (what < 70) { // sync and wait for its completion
        steps << "s ";
        std::promise<st::result<st::lsn>> p;
        auto f = p.get_future();
        dev->sync([&p](st::result<st::lsn> r) { p.set_value(r); });
        if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
          return fail("a sync never completed");
        auto r = f.get();
        if (!r)
          break;
        m.acked = std::max(m.acked, r.value().value);
        m.required = std::max(m.required, r.value().value);
      } else if (what < 80) { // checkpoint at a durable lsn
        auto low = m.checkpoint_ok;
        if (m.acked < low)
          continue;
        auto at = low + below(m.acked - low + 1);
        std::string image = "image@" + std::to_string(at) + "#" + std::to_string(++tag);
        steps << "c" << at << " ";
        m.images[at].insert(image);
        m.checkpoint_tried.insert(at);
        if (!dev->checkpoint(image, st::lsn{at})) {
          ++cov.interrupted;
          break;
        }
        m.checkpoint_ok = at;
      } else if (what < 88) { // truncate_after
        auto low = m.checkpoint_ok;
        if (m.appended < low)
          continue;
        auto at = low + below(m.appended - low + 1);
        steps << "t" << at << " ";
        // Whatever happens now, records after `at` may be gone.
        m.required = std::min(m.required, at);
        if (!dev->truncate_after(st::lsn{at})) {
          ++cov.interrupted;
          break;
        }
        for (auto it = m.history.upper_bound(at); it != m.history.end();)
          it = m.history.erase(it);
        m.appended = std::min(m.appended, at);
        m.acked = std::min(m.acked, at);
      } else if (what < 92) { // install a snapshot
        auto at = 1 + m.appended + below(10);
        std::string image =
            "snapshot@" + std::to_string(at) + "#" + std::to_string(++tag);
        steps << "i" << at << " ";
        m.install_tried = std::make_pair(at, image);
        if (!dev->install_snapshot(image, st::lsn{at})) {
          ++cov.interrupted;
          break;
        }
        m.install_tried.reset();
        m.history.clear();
        m.images.clear();
        m.checkpoint_tried.clear();
        m.images[at].insert(image);
        m.checkpoint_tried.insert(at);
        m.checkpoint_ok = at;
        m.appended = m.acked = m.required = at;
      } else { // save a higher term
        rp::term t{++epoch, rp::node_id{1 + below(3)}, 1};
        steps << "T" << t.epoch << " ";
        m.saving = t;
        if (!term_file->save(t)) {
          ++cov.interrupted;
          break;
        }
        m.saved = t;
        m.saving.reset();
      }
    }
    if (disk->crashed())
      ++cov.crashed_in_an_operation;
    else if (!ro.flip)
      disk->crash(); // at the end of the schedule, with the writer maybe mid-write
    if (disk->last_crash().find("writes") != std::string::npos)
      ++cov.torn_writes;
    dev.reset();
    term_file.reset();
  }
  disk->set_hook({});
  disk->restart();

  std::map<std::string, std::string> before_flip;
  std::optional<sim_file_system::flipped> flip;
  if (ro.flip) {
    flip = disk->flip_random_bit(data_dir);
    if (!flip)
      return std::nullopt; // nothing synced to flip
    steps << "flip " << flip->file.string() << " byte " << flip->offset << " bit "
          << flip->bit;
    before_flip = disk->files();
  } else if (below(4) == 0) {
    // A second crash, during the recovery.
    uint64_t n = 0, at = 1 + below(30);
    steps << "| recovery crashes at op " << at;
    disk->set_hook([&](const sim_file_system::op&) {
      if (++n == at)
        disk->crash();
    });
    {
      st::wal_recovery rep;
      auto dev = wal_log_device::open(lo, rep);
      auto terms = file_term_file::open(data_dir, used);
      if (!disk->crashed() && !dev)
        return fail("open failed (before the recovery crash): " + dev.error().message()
                    + " " + rep.problem);
    }
    if (disk->crashed())
      ++cov.recovery_crashes; // inside it, else just after it
    disk->crash();
    disk->set_hook({});
    disk->restart();
  }

  // -- the real recovery --------------------------------------------------------
  st::wal_recovery rep;
  auto opened = wal_log_device::open(lo, rep);
  auto terms = file_term_file::open(data_dir, used);
  const std::string flipped_name = flip ? flip->file.filename().string() : "";

  if (flip) {
    bool refused = !opened || !terms;
    if (!terms && terms.error() != st::errc::corrupt_data)
      return fail("the term file fails to open with " + terms.error().message());
    if (!terms && flip->file.filename() != "term")
      return fail("the term file refused although the flip is elsewhere");
    if (!opened) {
      if (opened.error() != st::errc::corrupt_data)
        return fail("open failed with " + opened.error().message());
      if (rep.problem.find(flipped_name) == std::string::npos)
        return fail("open refused without naming " + flipped_name + ": " + rep.problem);
    }
    if (!opened) {
      if (disk->files() != before_flip)
        return fail("a refused open changed the files");
      ++cov.flips_refused;
      return std::nullopt;
    }
    if (refused) { // the term file only
      if (disk->files()[flip->file.string()] != before_flip[flip->file.string()])
        return fail("a refused term file was changed");
      ++cov.flips_refused;
      return std::nullopt;
    }
  } else {
    if (!opened)
      return fail("open after the crash failed: " + opened.error().message() + " "
                  + rep.problem);
    if (!terms)
      return fail("the term file does not open after the crash: "
                  + terms.error().message());
  }
  auto dev = opened.value();
  auto term_now = terms.value()->load();
  if (!(term_now == m.saved) && !(m.saving && term_now == *m.saving))
    return fail("term " + std::to_string(term_now.epoch) + " recovered, saved "
                + std::to_string(m.saved.epoch));

  auto ck = dev->checkpoint_lsn().value;
  auto got = dev->recover();
  if (!got)
    return fail("recover() failed: " + got.error().message());
  auto& recovered = got.value();

  if (rep.tail_cut)
    ++cov.tails_cut;
  if (m.required > 0)
    ++cov.acked_records;
  if (dev->appended_lsn().value > std::max(m.required, ck))
    ++cov.unacked_survived;
  // Whatever the tail cut took must be the flipped file's, and kept.
  bool cut_names_flip = false;
  if (rep.tail_cut && flip) {
    cut_names_flip = rep.cut_reason.find(flipped_name) != std::string::npos;
    // The flipped file's cut bytes are kept: what is left of it, then what
    // was moved aside, is what it held.
    auto now = disk->files();
    auto left = now.count(flip->file.string()) ? now[flip->file.string()] : "";
    for (auto& p : rep.moved_to) {
      if (!now.count(p.string()))
        return fail("bytes moved to " + p.string() + " are not there");
      if (p.filename().string().rfind(flipped_name + ".from-", 0) != 0)
        continue;
      auto& moved = now[p.string()];
      auto& was = before_flip[flip->file.string()];
      if (was.compare(0, left.size(), left) != 0
          || was.compare(left.size(), moved.size(), moved) != 0)
        return fail("the bytes cut from " + flipped_name + " are not all kept in "
                    + p.string());
    }
  }

  std::ostringstream problems;
  bool installed = m.install_tried && ck == m.install_tried->first
                   && recovered.checkpoint == m.install_tried->second;
  if (installed) {
    if (!recovered.records.empty())
      problems << "records after an installed snapshot; ";
  } else {
    if (ck != 0 && !m.checkpoint_tried.count(ck))
      problems << "checkpoint " << ck << " was never written; ";
    if (ck < m.checkpoint_ok)
      problems << "checkpoint " << ck << " older than " << m.checkpoint_ok
               << " which was written; ";
    if (ck != 0 && !m.images[ck].count(recovered.checkpoint))
      problems << "checkpoint " << ck << " holds another image; ";
    uint64_t expect = ck + 1;
    for (auto& r : recovered.records) {
      if (r.lsn.value != expect) {
        problems << "lsn " << r.lsn.value << " where " << expect << " was due; ";
        break;
      }
      ++expect;
      auto it = m.history.find(r.lsn.value);
      if (it == m.history.end() || r.lsn.value > m.appended) {
        problems << "lsn " << r.lsn.value << " was never appended; ";
        break;
      }
      if (it->second != digest(r)) {
        problems << "lsn " << r.lsn.value << " is " << digest(r) << ", appended "
                 << it->second << "; ";
        break;
      }
    }
    auto last = ck + recovered.records.size();
    if (last < m.required)
      problems << "acknowledged lsn " << m.required << " lost (recovered up to " << last
               << "); ";
  }
  if (problems.str().empty()) {
    if (flip)
      ++cov.flips_harmless;
    return std::nullopt;
  }
  if (flip && cut_names_flip) {
    ++cov.flips_cut;
    return std::nullopt; // reported: the cut names the flipped file, bytes kept
  }
  return fail(problems.str()
              + (rep.tail_cut ? " (tail cut: " + rep.cut_reason + ")" : ""));
}

} // namespace

TEST(sim_disk_recovery, crashes_never_lose_acknowledged_data_nor_invent_any) {
  auto n = seeds_to_run(2000);
  coverage cov;
  uint64_t failures = 0;
  for (uint64_t seed = 1; seed <= n; ++seed) {
    if (auto v = run_schedule(seed, {}, cov)) {
      ADD_FAILURE() << *v;
      if (++failures >= 3)
        break;
    }
  }
  std::cout << cov.str() << "\n";
  if (failures > 0 || n < 1000)
    return;
  // The schedules reach what they are for.
  EXPECT_GT(cov.crashed_in_an_operation, n / 4) << cov.str();
  EXPECT_GT(cov.torn_writes, n / 10) << cov.str();
  EXPECT_GT(cov.tails_cut, n / 40) << cov.str();
  EXPECT_GT(cov.acked_records, n / 2) << cov.str();
  EXPECT_GT(cov.unacked_survived, n / 50) << cov.str();
  EXPECT_GT(cov.interrupted, n / 20) << cov.str();
  EXPECT_GT(cov.recovery_crashes, n / 20) << cov.str();
}

TEST(sim_disk_recovery, a_flipped_synced_bit_is_reported_or_harmless_never_silent) {
  auto n = seeds_to_run(2000) / 2;
  coverage cov;
  uint64_t failures = 0;
  run_options ro;
  ro.flip = true;
  for (uint64_t seed = 1; seed <= n; ++seed) {
    if (auto v = run_schedule(seed, ro, cov)) {
      ADD_FAILURE() << *v;
      if (++failures >= 3)
        break;
    }
  }
  std::cout << cov.str() << "\n";
  if (failures > 0 || n < 500)
    return;
  EXPECT_GT(cov.flips_refused, n / 10) << cov.str();
  // A flipped bit in a record is rot, refused, never cut as a torn tail.
  EXPECT_GT(cov.flips_harmless, 0u) << cov.str();
}

TEST(sim_disk_recovery, the_check_catches_a_disk_whose_syncs_lose_data) {
  run_options ro;
  ro.plant_lying_disk = true;
  coverage cov;
  uint64_t caught = 0, lost_records = 0, seeds = 300;
  std::string example;
  for (uint64_t seed = 1; seed <= seeds; ++seed)
    if (auto v = run_schedule(seed, ro, cov)) {
      ++caught;
      if (v->find("acknowledged lsn") != std::string::npos && lost_records++ == 0)
        example = *v;
    }
  EXPECT_GT(caught, 0u) << "the planted defect went unnoticed in " << seeds << " runs";
  EXPECT_GT(lost_records, 0u) << "no run found acknowledged records lost";
  std::cout << caught << " of " << seeds << " runs caught the disk whose syncs lie ("
            << lost_records << " as acknowledged records lost); the first:\n"
            << example;
}
