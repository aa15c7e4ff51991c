// job_memory_bench: where the bytes of a pending job go on one replica of the
// replicated store, in one process, without actors or sockets.
//
//   job_memory_bench [--jobs N] [--group G] [--kind K] [--payload P] [--runs R]
//
// It makes N pending 1-step jobs the way the workflow client does (make_job,
// layout::job_writes), groups G of them per replicated transaction the way
// job_store::create_many and the replicated store send them (one
// "absent" condition per job, then every job's writes), and measures with
// glibc's allocator (the nodes' allocator: `conclave` links no jemalloc)
// what a replica keeps of them:
//   state  the store core's rows after applying every transaction (apply_txn,
//          what every replica does with a committed record);
//   log    the replication log's records in memory (replica_log, what a
//          replica holds until its next checkpoint), then again after a
//          checkpoint of the state dropped them (compact_through).
// Bytes are mallinfo2's bytes in use (chunk headers and rounding included),
// before and after, divided by N. Each run starts from fresh objects; the
// figure printed is the median over R runs (default 3). It also prints what
// a job is made of: the document's encoded size, its rows and key bytes, and
// the store's bytes per row beyond the key and value bytes. Two columns side
// by side: the job documents in version 1 (the format before compact
// documents, encode_doc_v1) and as encode_doc writes them now; both on this
// build's store core.
//
// Figures: docs/design/workflow.md, "Memory per pending job".
#include "actors/replication/record_codec.hpp"
#include "actors/replication/txn_apply.hpp"
#include "protocols/replication/replica_log.hpp"
#include "protocols/store/store_core.hpp"
#include "protocols/workflow/lifecycle.hpp"
#include "protocols/workflow/records.hpp"
#include "protocols/workflow/store_layout.hpp"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace wf = conclave::workflow;
namespace rp = conclave::replication;
namespace st = conclave::store;

namespace {

struct options {
  int jobs = 100000;
  int group = 64;
  int runs = 3;
  std::string kind = "bench-unserved";
  std::string payload;
};

/// Bytes in use by the allocator (glibc: small chunks plus mmapped ones).
double heap_bytes() {
  auto m = mallinfo2();
  return static_cast<double>(m.uordblks) + static_cast<double>(m.hblkhd);
}

/// Wall-clock "now" as the nodes stamp it (ns since the epoch): the size of
/// an encoded timestamp depends on it.
wf::timestamp wall_now() {
  return std::chrono::duration_cast<wf::timestamp>(
      std::chrono::system_clock::now().time_since_epoch());
}

/// The job of number i, as workflow_cluster_bench submits its pending jobs.
wf::job_spec spec_of(const options& o, int i) {
  wf::job_spec s;
  s.id = wf::job_id{"b12345678-mp-" + std::to_string(i)};
  wf::step_spec step;
  step.agent_kind = o.kind;
  step.payload = o.payload;
  step.timeout = std::chrono::seconds(30);
  s.steps.push_back(std::move(step));
  return s;
}

struct shape {
  double doc_bytes = 0;   ///< encoded document, per job
  double rows = 0;        ///< rows written, per job
  double key_bytes = 0;   ///< bytes of their keys, per job
  double value_bytes = 0; ///< bytes of their values, per job
};

/// The replicated transactions of N new jobs, G per transaction, as payloads
/// (what a replica's log holds and what it applies).
std::vector<std::string> make_payloads(const options& o, bool v1, shape& sh) {
  std::vector<std::string> out;
  auto now = wall_now();
  std::vector<rp::txn_op> checks, writes;
  auto flush = [&] {
    if (checks.empty())
      return;
    checks.insert(checks.end(), std::make_move_iterator(writes.begin()),
                  std::make_move_iterator(writes.end()));
    out.push_back(rp::encode_payload(checks));
    checks.clear();
    writes.clear();
  };
  for (int i = 0; i < o.jobs; ++i) {
    wf::effects e;
    auto v = wf::make_job(spec_of(o, i), now, e);
    rp::txn_op absent;
    absent.kind = rp::op_kind::expect_absent;
    absent.collection = wf::layout::jobs;
    absent.key = v.job.id.value;
    checks.push_back(std::move(absent));
    for (auto& w : wf::layout::job_writes(nullptr, v, e)) {
      if (w.collection == wf::layout::jobs) {
        if (v1)
          w.value = wf::encode_doc_v1(v);
        sh.doc_bytes += static_cast<double>(w.value.size());
      }
      sh.rows += 1;
      sh.key_bytes += static_cast<double>(w.key.size());
      sh.value_bytes += static_cast<double>(w.value.size());
      rp::txn_op op;
      op.kind = w.remove ? rp::op_kind::remove : rp::op_kind::put;
      op.collection = std::move(w.collection);
      op.key = std::move(w.key);
      op.value = std::move(w.value);
      writes.push_back(std::move(op));
    }
    if (static_cast<int>(checks.size()) == o.group)
      flush();
  }
  flush();
  auto n = static_cast<double>(o.jobs);
  sh.doc_bytes /= n;
  sh.rows /= n;
  sh.key_bytes /= n;
  sh.value_bytes /= n;
  return out;
}

struct figures {
  double state = 0;     ///< store rows, bytes per job
  double log = 0;       ///< log records in memory, bytes per job
  double log_after = 0; ///< the same after a checkpoint covered them
  double log_payload = 0;
  shape sh;
};

figures run_once(const options& o, bool v1) {
  figures f;
  auto payloads = make_payloads(o, v1, f.sh);
  for (auto& p : payloads)
    f.log_payload += static_cast<double>(p.size());
  f.log_payload /= o.jobs;
  auto n = static_cast<double>(o.jobs);
  // The store: every record applied, in lsn order.
  {
    st::store_core core;
    auto h0 = heap_bytes();
    uint64_t at = 0;
    for (auto& p : payloads) {
      auto ops = rp::decode_payload(p);
      if (!ops) {
        std::fprintf(stderr, "job_memory_bench: a payload did not decode\n");
        std::exit(1);
      }
      auto r = rp::apply_txn(core, *ops, rp::lsn{++at});
      if (r.code != rp::errc::ok) {
        std::fprintf(stderr, "job_memory_bench: a transaction failed to apply\n");
        std::exit(1);
      }
    }
    core.collect_garbage();
    f.state = (heap_bytes() - h0) / n;
  }
  // The log: the records a replica keeps until its next checkpoint.
  {
    rp::replica_log log;
    auto h0 = heap_bytes();
    uint64_t at = 0;
    for (const auto& p : payloads) {
      rp::entry e;
      e.at = rp::lsn{++at};
      e.t = rp::term{1, rp::node_id{1}, 1};
      e.kind = rp::entry_kind::transaction;
      e.payload = p; // a copy: its bytes count here
      log.append(std::move(e));
    }
    f.log = (heap_bytes() - h0) / n;
    log.compact_through(log.last());
    f.log_after = (heap_bytes() - h0) / n;
  }
  return f;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

int usage(const char* why) {
  std::fprintf(stderr,
               "job_memory_bench: %s\nusage: job_memory_bench [--jobs N] [--group G] "
               "[--kind K] [--payload P] [--runs R]\n",
               why);
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--quick") {
      o.jobs = 2000;
      o.runs = 1;
    } else if (a == "--jobs" && (v = value())) {
      o.jobs = std::atoi(v);
    } else if (a == "--group" && (v = value())) {
      o.group = std::atoi(v);
    } else if (a == "--runs" && (v = value())) {
      o.runs = std::atoi(v);
    } else if (a == "--kind" && (v = value())) {
      o.kind = v;
    } else if (a == "--payload" && (v = value())) {
      o.payload = v;
    } else {
      return usage(("unknown or incomplete flag '" + a + "'").c_str());
    }
  }
  if (o.jobs < 1 || o.group < 1 || o.runs < 1 || o.kind.empty())
    return usage("--jobs, --group and --runs must be at least 1, --kind not empty");
  struct column {
    std::vector<double> state, log, log_after;
    figures f;
  };
  column cols[2]; // documents in version 1, then as written now
  for (int r = 0; r < o.runs; ++r)
    for (int v = 0; v < 2; ++v) {
      auto& c = cols[v];
      c.f = run_once(o, v == 0);
      c.state.push_back(c.f.state);
      c.log.push_back(c.f.log);
      c.log_after.push_back(c.f.log_after);
    }
  std::printf("%d pending 1-step jobs (kind '%s', %zu payload bytes), %d per "
              "transaction, median of %d runs, glibc bytes in use per job:\n",
              o.jobs, o.kind.c_str(), o.payload.size(), o.group, o.runs);
  std::printf("  %-34s %12s %12s\n", "", "document v1", "document v2");
  auto row = [&](const char* what, auto get) {
    std::printf("  %-34s %12.0f %12.0f\n", what, get(cols[0]), get(cols[1]));
  };
  row("document bytes", [](column& c) { return c.f.sh.doc_bytes; });
  row("rows", [](column& c) { return c.f.sh.rows; });
  row("key bytes", [](column& c) { return c.f.sh.key_bytes; });
  row("log payload bytes", [](column& c) { return c.f.log_payload; });
  row("store state", [](column& c) { return median(c.state); });
  row("  per row beyond key and value bytes", [](column& c) {
    return (median(c.state) - c.f.sh.key_bytes - c.f.sh.value_bytes) / c.f.sh.rows;
  });
  row("log in memory", [](column& c) { return median(c.log); });
  row("replica: state + log", [](column& c) { return median(c.state) + median(c.log); });
  row("replica after a checkpoint",
      [](column& c) { return median(c.state) + median(c.log_after); });
  return 0;
}
