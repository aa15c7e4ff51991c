// Commit throughput and latency of the reliable collections store against
// etcd, and the fdatasync rate of the disk as the physical line.
//
// Every case runs W writer threads for --seconds; each writer commits one
// transaction after another, each writing a fresh key with a 256-byte value,
// strong mode (commit returns after fdatasync). Reported: commits/s, p50 and
// p99 commit latency, medians over --reps repetitions, each on a fresh data
// directory; the repetitions are interleaved (round r runs every case once),
// so machine noise spreads over all systems. Cases, side by side in one run:
//   fdatasync     one thread: append 256 B + fdatasync, in a loop
//   conclave      group commit at 1, 8, 32 writers (log segments grown by
//                 zero-filled steps: most syncs do not change the file size)
//   appending     conclave at 1 writer with plain appends (preallocate_bytes 0)
//   handoff       conclave at 1 writer through the log's writer thread:
//                 commit_async, then wait for its answer. A strong commit()
//                 with no sync in flight syncs on its own thread instead; this
//                 row shows what that saves, in the same run.
//   serial        one fdatasync per commit (group commit off) at 1, 8, 32
//   device        the replica's file log device (storage/wal_log_device.hpp)
//                 at 1, 8, 32 writers, driven as a replica host drives it:
//                 under one lock a writer takes the next lsn and appends its
//                 record, then asks for a sync and waits for its completion
//                 (which comes from the log's writer thread)
//   etcd          one member (Debian's etcd-server, default settings) on the
//                 same disk, W keep-alive HTTP clients doing /v3/kv/put
// Each row also shows the fdatasync calls of the system's log per second and
// commits per sync (conclave: the store's stats; etcd: its /metrics WAL fsync
// count), and etcd's mean WAL fsync time: whether the systems met the same
// disk, which on a shared machine they may not (-1 in the JSON: unknown).
// Targets (issue 5): conclave >= 2x etcd at 8 and 32 writers; group commit
// >= 5x serial at 32 writers.
//
// A second table times dequeuing N items from one queue in one transaction
// (N = 1k, 4k, 16k, 100k; --dequeue): the queue is filled first, then one
// transaction dequeues every item and commits. Reported: the dequeue loop
// and the commit, medians over --reps. Each dequeue should cost O(1): the
// time per item should stay flat as N grows (issue 10: it was cubic).
//
//   store_bench [--seconds S] [--reps N] [--writers 1,8,32] [--dir PARENT]
//               [--etcd PATH | --skip-etcd] [--dequeue 1000,4000,...]
//               [--json FILE] [--quick] [--help]
#include "storage/collections.hpp"
#include "storage/wal_log_device.hpp"

#include "tests/bench/support/etcd_process.hpp"
#include "tests/bench/support/stats.hpp"
#include "tests/support/process_tools.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr size_t value_bytes = 256;

struct options {
  double seconds = 3;
  int reps = 3;
  std::vector<int> writers{1, 8, 32};
  std::vector<int> dequeue{1000, 4000, 16000, 100000};
  fs::path parent;
  std::string etcd;
  bool skip_etcd = false;
  std::string json;
};

struct sample {
  double per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  uint64_t commits = 0;
  double seconds = 0;           // measured run time
  double syncs_per_second = -1; // fdatasync calls of the log (-1: unknown)
  double sync_ms_mean = -1;     // mean fdatasync time (-1: unknown)
  bool failed = false;          // a commit failed: the run stopped early
};

/// Fills in the sync figures from `syncs` fdatasync calls in the run.
void set_syncs(sample& s, double syncs, double sync_seconds_total = -1) {
  if (s.seconds > 0)
    s.syncs_per_second = syncs / s.seconds;
  if (sync_seconds_total >= 0 && syncs > 0)
    s.sync_ms_mean = 1000 * sync_seconds_total / syncs;
}

struct result_row {
  std::string system;
  int writers = 0;
  sample median;
};

using conclave::bench::median;

using conclave::bench::percentile;

sample median_of(const std::vector<sample>& reps) {
  std::vector<double> a, b, c, d, e;
  sample s;
  for (auto& r : reps) {
    a.push_back(r.per_second);
    b.push_back(r.p50_ms);
    c.push_back(r.p99_ms);
    d.push_back(r.syncs_per_second);
    e.push_back(r.sync_ms_mean);
    s.commits += r.commits;
    s.failed = s.failed || r.failed;
  }
  s.per_second = median(a);
  s.p50_ms = median(b);
  s.p99_ms = median(c);
  s.syncs_per_second = median(d);
  s.sync_ms_mean = median(e);
  return s;
}

/// Runs `writers` threads calling commit(w, i) until the time is up; commit
/// returns false on failure: the run stops and the sample is marked failed,
/// so that the caller can stop what it started before giving up.
template <class Commit>
sample run_writers(int writers, double seconds, Commit commit) {
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(writers));
  std::vector<std::thread> threads;
  auto start = clock_type::now();
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      auto& lat = latencies[static_cast<size_t>(w)];
      lat.reserve(100000);
      for (uint64_t i = 0; !stop; ++i) {
        auto t0 = clock_type::now();
        if (!commit(w, i)) {
          failed = true;
          return;
        }
        lat.push_back(
            std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads)
    t.join();
  auto elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies)
    all.insert(all.end(), l.begin(), l.end());
  sample s;
  s.failed = failed;
  s.seconds = elapsed;
  s.commits = all.size();
  s.per_second = static_cast<double>(all.size()) / elapsed;
  s.p50_ms = percentile(all, 0.50);
  s.p99_ms = percentile(all, 0.99);
  return s;
}

/// Gives up on a failed run (after the caller cleaned up).
void check(const sample& s, const std::string& what) {
  if (!s.failed)
    return;
  std::cerr << "store_bench: a commit failed (" << what << "); stopping\n";
  std::exit(1);
}

fs::path fresh_dir(const fs::path& parent, const std::string& name) {
  auto p = parent / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string value_for(int w, uint64_t i) {
  std::string v(value_bytes, 'a');
  auto tag = std::to_string(w) + ":" + std::to_string(i);
  v.replace(0, tag.size(), tag);
  return v;
}

sample bench_fdatasync(const fs::path& parent, double seconds) {
  auto dir = fresh_dir(parent, "fdatasync");
  int fd =
      ::open((dir / "file").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  std::string v(value_bytes, 'x');
  auto s = run_writers(1, seconds, [&](int, uint64_t) {
    return ::write(fd, v.data(), v.size()) == static_cast<ssize_t>(v.size())
           && ::fdatasync(fd) == 0;
  });
  ::close(fd);
  fs::remove_all(dir);
  check(s, "fdatasync");
  // One sync per loop; its time is the loop's time (the write is in cache).
  set_syncs(s, static_cast<double>(s.commits), s.seconds);
  return s;
}

sample bench_conclave(const fs::path& parent, int writers, double seconds, bool group,
                      bool preallocate = true, bool handoff = false) {
  using namespace conclave::store;
  auto dir = fresh_dir(parent, "conclave");
  state_manager_options o;
  o.dir = dir;
  o.strong = true;
  o.group_commit = group;
  if (!preallocate)
    o.preallocate_bytes = 0;
  sample s;
  {
    auto sm = state_manager::open(o);
    if (!sm) {
      std::cerr << "store_bench: open failed: " << sm.error().message() << '\n';
      std::exit(1);
    }
    auto& store = *sm.value();
    auto dict = store.dictionary<std::string, std::string>("bench");
    if (!dict) {
      std::cerr << "store_bench: " << dict.error().message() << '\n';
      std::exit(1);
    }
    auto& d = dict.value();
    auto syncs0 = store.get_stats().log_syncs;
    s = run_writers(writers, seconds, [&](int w, uint64_t i) {
      auto tx = store.begin();
      auto key = "w" + std::to_string(w) + "-" + std::to_string(i);
      if (!d.add_or_update(tx, key, value_for(w, i)))
        return false;
      if (!handoff)
        return static_cast<bool>(tx.commit());
      std::promise<bool> done;
      store.commit_async(
          tx.id(), [&done](result<lsn> r) { done.set_value(static_cast<bool>(r)); });
      return done.get_future().get();
    });
    set_syncs(s, static_cast<double>(store.get_stats().log_syncs - syncs0));
  }
  fs::remove_all(dir);
  check(s, handoff ? "handoff" : group ? "conclave" : "serial");
  return s;
}

sample bench_etcd(const options& o, int writers, double seconds) {
  auto dir = fresh_dir(o.parent, "etcd");
  auto client = conclave::testing::free_port();
  auto peer = conclave::testing::free_port();
  while (peer == client)
    peer = conclave::testing::free_port();
  auto data = (dir / "member").string();
  auto pid = conclave::bench::start_single_etcd(o.etcd, data, client, peer);
  // Ready when a put succeeds.
  bool ready = false;
  for (auto until = clock_type::now() + 20s; !ready && clock_type::now() < until;) {
    conclave::bench::http_connection c{client, 500ms};
    std::string body;
    ready = c.ok()
            && c.post("/v3/kv/put", R"({"key":"cmVhZHk=","value":"MQ=="})", body) == 200;
    if (!ready)
      std::this_thread::sleep_for(50ms);
  }
  if (!ready) {
    conclave::bench::stop_child(pid, SIGKILL);
    std::cerr << "store_bench: etcd did not start (log: " << data << ".log)\n";
    std::exit(1);
  }
  // etcd's own count and time of WAL fsyncs, from its /metrics.
  auto wal_fsyncs = [&](double& count, double& seconds_total) {
    conclave::bench::http_connection c{client};
    std::string text;
    if (c.get("/metrics", text) != 200)
      return false;
    count = conclave::bench::prometheus_value(
        text, "etcd_disk_wal_fsync_duration_seconds_count");
    seconds_total = conclave::bench::prometheus_value(
        text, "etcd_disk_wal_fsync_duration_seconds_sum");
    return true;
  };
  double n0 = 0, t0 = 0, n1 = 0, t1 = 0;
  bool have_metrics = wal_fsyncs(n0, t0);
  std::vector<std::unique_ptr<conclave::bench::http_connection>> conns;
  for (int w = 0; w < writers; ++w)
    conns.push_back(std::make_unique<conclave::bench::http_connection>(client));
  auto s = run_writers(writers, seconds, [&](int w, uint64_t i) {
    auto key = "w" + std::to_string(w) + "-" + std::to_string(i);
    std::string body = R"({"key":")" + conclave::bench::base64(key) + R"(","value":")"
                       + conclave::bench::base64(value_for(w, i)) + R"("})";
    std::string response;
    return conns[static_cast<size_t>(w)]->post("/v3/kv/put", body, response) == 200
           && response.find("header") != std::string::npos;
  });
  conns.clear();
  if (have_metrics && wal_fsyncs(n1, t1))
    set_syncs(s, n1 - n0, t1 - t0);
  conclave::bench::stop_child(pid, SIGTERM);
  if (s.failed) {
    std::cerr << "store_bench: etcd log kept in " << data << ".log\n";
    check(s, "etcd");
  }
  fs::remove_all(dir);
  return s;
}

/// W writers commit records through the replica log device: append under a
/// lock (lsn order), then sync and wait until the device reports the record
/// durable. The completion runs on the log's writer thread (a sync requested
/// after the record was appended reports at least its lsn).
sample bench_device(const fs::path& parent, int writers, double seconds) {
  using namespace conclave::store;
  auto dir = fresh_dir(parent, "device");
  sample s;
  {
    conclave::storage::replica_log_options o;
    o.dir = dir;
    wal_recovery rep;
    auto opened = conclave::storage::wal_log_device::open(o, rep);
    if (!opened) {
      std::cerr << "store_bench: device open failed: " << opened.error().message()
                << '\n';
      std::exit(1);
    }
    auto& dev = *opened.value();
    std::mutex append_mtx;
    uint64_t next = 0;
    auto syncs0 = dev.syncs();
    s = run_writers(writers, seconds, [&](int w, uint64_t i) {
      log_record r;
      r.txn = txn_id{i};
      r.ops.push_back({op_kind::put, 0, "w" + std::to_string(w) + "-" + std::to_string(i),
                       value_for(w, i)});
      {
        std::lock_guard<std::mutex> g{append_mtx};
        r.lsn = lsn{++next};
        if (!dev.append(r))
          return false;
      }
      // One wake-up per commit: the completion answers this writer only.
      std::promise<bool> done;
      dev.sync(
          [&done, l = r.lsn](result<lsn> d) { done.set_value(d && d.value() >= l); });
      return done.get_future().get();
    });
    set_syncs(s, static_cast<double>(dev.syncs() - syncs0));
  }
  fs::remove_all(dir);
  check(s, "device");
  return s;
}

struct dequeue_sample {
  double dequeue_ms = 0; // the loop of try_dequeue calls
  double commit_ms = 0;  // commit of the transaction (durable)
};

/// Fills a queue with `items` items, then times one transaction that
/// dequeues all of them and commits.
dequeue_sample bench_dequeue(const fs::path& parent, int items) {
  using namespace conclave::store;
  auto dir = fresh_dir(parent, "dequeue");
  state_manager_options o;
  o.dir = dir;
  dequeue_sample out;
  bool ok = false;
  {
    auto sm = state_manager::open(o);
    if (!sm) {
      std::cerr << "store_bench: open failed: " << sm.error().message() << '\n';
      std::exit(1);
    }
    auto& store = *sm.value();
    auto q = store.queue<std::string>("bench").value();
    // Filled in transactions of 1,000 (a realistic producer), not timed.
    for (int done = 0; done < items;) {
      auto tx = store.begin();
      for (int i = 0; i < 1000 && done < items; ++i, ++done)
        if (!q.enqueue(tx, value_for(0, static_cast<uint64_t>(done))))
          std::exit(1);
      if (!tx.commit())
        std::exit(1);
    }
    auto tx = store.begin();
    auto t0 = clock_type::now();
    int taken = 0;
    for (;;) {
      auto item = q.try_dequeue(tx);
      if (!item || !item.value())
        break;
      ++taken;
    }
    auto t1 = clock_type::now();
    ok = taken == items && tx.commit();
    auto t2 = clock_type::now();
    out.dequeue_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    out.commit_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  }
  fs::remove_all(dir);
  if (!ok) {
    std::cerr << "store_bench: dequeuing " << items << " items failed\n";
    std::exit(1);
  }
  return out;
}

bool on_tmpfs(const fs::path& p) {
  struct statfs st {};
  return ::statfs(p.c_str(), &st) == 0 && st.f_type == 0x01021994; // TMPFS_MAGIC
}

const char* const usage_line =
    "store_bench [--seconds S] [--reps N] [--writers 1,8,32] [--dir PARENT] "
    "[--etcd PATH | --skip-etcd] [--dequeue 1000,4000,16000,100000] [--json FILE] "
    "[--quick] [--help]";

int usage(const std::string& what) {
  std::cerr << "store_bench: " << what << " (usage: " << usage_line << ")\n";
  return 2;
}

int help() {
  std::cout << "usage: " << usage_line << "\n\n"
            << "Commit throughput and latency of the store (group commit and serial, "
               "strong mode,\n256-byte values) against etcd and the raw fdatasync "
               "rate, then the time to\ndequeue N items in one transaction.\n\n"
            << "  --seconds S      run time of each case (default 3)\n"
            << "  --reps N         repetitions, interleaved; medians are printed "
               "(default 3)\n"
            << "  --writers LIST   writer thread counts (default 1,8,32)\n"
            << "  --dir PARENT     where data directories are made (default: the "
               "temp directory)\n"
            << "  --etcd PATH      etcd binary to compare against\n"
            << "  --skip-etcd      no etcd rows\n"
            << "  --dequeue LIST   items dequeued in one transaction (default "
               "1000,4000,16000,100000)\n"
            << "  --json FILE      also write the figures as JSON\n"
            << "  --quick          smoke run: 0.3 s, 1 rep, no etcd, dequeue 1000,4000\n"
            << "  --help           this text\n";
  return 0;
}

std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in{text};
  for (std::string x; std::getline(in, x, ',');)
    out.push_back(std::stoi(x));
  return out;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    try {
      if (a == "--seconds")
        o.seconds = std::stod(next());
      else if (a == "--reps")
        o.reps = std::stoi(next());
      else if (a == "--writers")
        o.writers = int_list(next());
      else if (a == "--dequeue")
        o.dequeue = int_list(next());
      else if (a == "--help" || a == "-h")
        return help();
      else if (a == "--dir")
        o.parent = next();
      else if (a == "--etcd")
        o.etcd = next();
      else if (a == "--skip-etcd")
        o.skip_etcd = true;
      else if (a == "--json")
        o.json = next();
      else if (a == "--quick") {
        o.seconds = 0.3;
        o.reps = 1;
        o.skip_etcd = true;
        o.dequeue = {1000, 4000};
      } else
        return usage("unknown argument '" + a + "'");
    } catch (const std::exception&) {
      return usage("bad value for " + a);
    }
  }
  if (o.seconds <= 0 || o.reps < 1 || o.writers.empty()
      || std::any_of(o.writers.begin(), o.writers.end(), [](int w) { return w < 1; })
      || std::any_of(o.dequeue.begin(), o.dequeue.end(), [](int n) { return n < 1; }))
    return usage("--seconds, --reps, --writers and --dequeue must be positive");
  if (o.etcd.empty() && !o.skip_etcd) {
    std::cerr << "store_bench: no --etcd given: etcd skipped\n";
    o.skip_etcd = true;
  }
  if (!o.skip_etcd && ::access(o.etcd.c_str(), X_OK) != 0)
    return usage("--etcd " + o.etcd + " is not executable");
  auto base = o.parent.empty() ? fs::temp_directory_path() : o.parent;
  std::string tmpl = (base / "store-bench-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    return usage("cannot create a directory under " + base.string());
  o.parent = tmpl;
  if (on_tmpfs(o.parent))
    std::cerr << "store_bench: warning: " << o.parent
              << " is on tmpfs; fdatasync costs nothing there\n";

  std::vector<result_row> rows;
  auto print = [](const result_row& r) {
    std::cout << std::left << std::setw(10) << r.system << std::right << std::setw(8)
              << r.writers << std::setw(14) << std::fixed << std::setprecision(0)
              << r.median.per_second << std::setw(11) << std::setprecision(3)
              << r.median.p50_ms << std::setw(11) << r.median.p99_ms;
    auto& m = r.median;
    if (m.syncs_per_second > 0)
      std::cout << std::setw(10) << std::setprecision(0) << m.syncs_per_second
                << std::setw(14) << std::setprecision(1)
                << m.per_second / m.syncs_per_second;
    else
      std::cout << std::setw(10) << "-" << std::setw(14) << "-";
    if (m.sync_ms_mean >= 0)
      std::cout << std::setw(14) << std::setprecision(3) << m.sync_ms_mean;
    else
      std::cout << std::setw(14) << "-";
    std::cout << '\n' << std::flush;
  };
  std::cout << "store_bench: " << o.seconds << " s per case, median of " << o.reps
            << " reps (interleaved), 256-byte values, strong mode, data under "
            << o.parent << "\n"
            << std::flush;
  // Repetitions are interleaved (every case once per round) so that a noisy
  // stretch on a shared machine hits every system, not just the one that
  // happened to run then.
  struct bench_case {
    std::string system;
    int writers;
    std::function<sample()> run;
    std::vector<sample> reps;
  };
  std::vector<bench_case> cases;
  cases.push_back(
      {"fdatasync", 1, [&] { return bench_fdatasync(o.parent, o.seconds); }, {}});
  if (std::find(o.writers.begin(), o.writers.end(), 1) != o.writers.end()) {
    cases.push_back({"appending",
                     1,
                     [&o] { return bench_conclave(o.parent, 1, o.seconds, true, false); },
                     {}});
    cases.push_back(
        {"handoff",
         1,
         [&o] { return bench_conclave(o.parent, 1, o.seconds, true, true, true); },
         {}});
  }
  for (auto w : o.writers) {
    cases.push_back({"conclave",
                     w,
                     [&o, w] { return bench_conclave(o.parent, w, o.seconds, true); },
                     {}});
    cases.push_back({"serial",
                     w,
                     [&o, w] { return bench_conclave(o.parent, w, o.seconds, false); },
                     {}});
    cases.push_back(
        {"device", w, [&o, w] { return bench_device(o.parent, w, o.seconds); }, {}});
    if (!o.skip_etcd)
      cases.push_back({"etcd", w, [&o, w] { return bench_etcd(o, w, o.seconds); }, {}});
  }
  for (int r = 0; r < o.reps; ++r) {
    if (o.reps > 1)
      std::cerr << "store_bench: round " << r + 1 << "/" << o.reps << '\n';
    for (auto& c : cases)
      c.reps.push_back(c.run());
  }
  std::cout << '\n'
            << std::left << std::setw(10) << "system" << std::right << std::setw(8)
            << "writers" << std::setw(14) << "commits/s" << std::setw(11) << "p50 ms"
            << std::setw(11) << "p99 ms" << std::setw(10) << "syncs/s" << std::setw(14)
            << "commits/sync" << std::setw(14) << "mean sync ms" << '\n';
  for (auto& c : cases) {
    rows.push_back({c.system, c.writers, median_of(c.reps)});
    print(rows.back());
  }
  auto find = [&](const std::string& sys, int w) -> const sample* {
    for (auto& r : rows)
      if (r.system == sys && r.writers == w)
        return &r.median;
    return nullptr;
  };
  std::cout << '\n';
  for (auto w : {8, 32}) {
    auto c = find("conclave", w);
    auto e = find("etcd", w);
    if (c && e && e->per_second > 0) {
      auto ratio = c->per_second / e->per_second;
      std::cout << "conclave / etcd at " << w << " writers: " << std::setprecision(1)
                << ratio << "x (target >= 2x: " << (ratio >= 2 ? "met" : "MISSED")
                << ")\n";
    }
  }
  if (auto g = find("conclave", 32), s = find("serial", 32);
      g && s && s->per_second > 0) {
    auto ratio = g->per_second / s->per_second;
    std::cout << "group commit / serial at 32 writers: " << std::setprecision(1) << ratio
              << "x (target >= 5x: " << (ratio >= 5 ? "met" : "MISSED") << ")\n";
  }
  if (auto c = find("conclave", 1), f = find("fdatasync", 1);
      c && f && f->per_second > 0) {
    auto ratio = c->per_second / f->per_second;
    std::cout << "conclave at 1 writer / raw append+fdatasync rate: "
              << std::setprecision(2) << ratio
              << "x (target >= 1.2x: " << (ratio >= 1.2 ? "met" : "MISSED") << ")\n";
  }
  if (auto c = find("conclave", 1), h = find("handoff", 1); c && h && h->per_second > 0)
    std::cout << "conclave at 1 writer / the same through the writer thread: "
              << std::setprecision(2) << c->per_second / h->per_second << "x\n";
  if (auto g = find("conclave", 32), f = find("fdatasync", 1);
      g && f && f->per_second > 0)
    std::cout << "conclave at 32 writers / raw fdatasync rate: " << std::setprecision(1)
              << g->per_second / f->per_second
              << "x (real commits per sync: the commits/sync column)\n";
  for (auto w : {1, 32})
    if (auto d = find("device", w), f = find("fdatasync", 1); d && f && f->per_second > 0)
      std::cout << "replica log device at " << w
                << " writer(s) / raw append+fdatasync rate: " << std::setprecision(2)
                << d->per_second / f->per_second << "x\n";
  // Dequeuing N items in one transaction.
  struct dequeue_row {
    int items;
    std::vector<dequeue_sample> reps;
  };
  std::vector<dequeue_row> dequeues;
  for (auto n : o.dequeue)
    dequeues.push_back({n, {}});
  for (int r = 0; r < o.reps; ++r)
    for (auto& d : dequeues)
      d.reps.push_back(bench_dequeue(o.parent, d.items));
  struct dequeue_median {
    int items;
    double dequeue_ms, commit_ms;
  };
  std::vector<dequeue_median> dequeue_rows;
  if (!dequeues.empty()) {
    std::cout << '\n'
              << std::right << std::setw(26) << "items dequeued in one tx"
              << std::setw(14) << "dequeue ms" << std::setw(14) << "us / item"
              << std::setw(14) << "commit ms" << '\n';
    for (auto& d : dequeues) {
      std::vector<double> a, b;
      for (auto& x : d.reps) {
        a.push_back(x.dequeue_ms);
        b.push_back(x.commit_ms);
      }
      dequeue_rows.push_back({d.items, median(a), median(b)});
      auto& m = dequeue_rows.back();
      std::cout << std::setw(26) << d.items << std::setw(14) << std::setprecision(1)
                << m.dequeue_ms << std::setw(14) << std::setprecision(2)
                << 1000 * m.dequeue_ms / d.items << std::setw(14) << std::setprecision(1)
                << m.commit_ms << '\n';
    }
  }
  if (!o.json.empty()) {
    std::ofstream out{o.json};
    out << "{\"seconds\": " << o.seconds << ", \"reps\": " << o.reps
        << ", \"results\": [";
    for (size_t i = 0; i < rows.size(); ++i)
      out << (i ? ", " : "") << "{\"system\": \"" << rows[i].system
          << "\", \"writers\": " << rows[i].writers
          << ", \"commits_per_second\": " << rows[i].median.per_second
          << ", \"p50_ms\": " << rows[i].median.p50_ms
          << ", \"p99_ms\": " << rows[i].median.p99_ms
          << ", \"syncs_per_second\": " << rows[i].median.syncs_per_second
          << ", \"mean_sync_ms\": " << rows[i].median.sync_ms_mean << "}";
    out << "], \"dequeue\": [";
    for (size_t i = 0; i < dequeue_rows.size(); ++i)
      out << (i ? ", " : "") << "{\"items\": " << dequeue_rows[i].items
          << ", \"dequeue_ms\": " << dequeue_rows[i].dequeue_ms
          << ", \"commit_ms\": " << dequeue_rows[i].commit_ms << "}";
    out << "]}\n";
  }
  fs::remove_all(o.parent);
  return 0;
}
