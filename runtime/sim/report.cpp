#include "runtime/sim/report.hpp"
#include "runtime/sim/run_verdicts.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

namespace conclave::sim {

namespace el = conclave::election;
namespace fs = std::filesystem;

namespace {

double ms(duration d) {
  return static_cast<double>(d.count()) / 1e6;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s)
    r += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return r + "'";
}

} // namespace

void sim_summary::add(const run_report& r, const std::string& replay_prefix) {
  auto key = std::make_pair(r.algo, r.nodes);
  if (std::find(groups_.begin(), groups_.end(), key) == groups_.end())
    groups_.push_back(key);
  run_row row{r.algo,
              r.nodes,
              r.seed,
              r.elections.size(),
              r.messages_sent,
              r.safety_violations,
              r.split_brain_windows,
              ms(r.split_brain_time),
              r.liveness_ok,
              r.leader_changes,
              ms(r.time_to_agreement_after_heal),
              0,
              r.stale_leader_windows,
              0,
              r.leader_time_fraction,
              r.elections_after_stable,
              {},
              {}};
  for (auto d : r.split_brain_durations) {
    row.split_window_ms.push_back(ms(d));
    row.split_max_ms = std::max(row.split_max_ms, ms(d));
  }
  for (auto d : r.stale_leader_durations) {
    row.stale_window_ms.push_back(ms(d));
    row.stale_max_ms = std::max(row.stale_max_ms, ms(d));
  }
  row.needless_changes = r.needless_leader_changes;
  runs_.push_back(std::move(row));
  for (auto& e : r.elections)
    elections_.push_back({r.algo, r.nodes, r.seed, e});
  if (r.safety_violations > 0 || !r.liveness_ok) {
    std::string replay = replay_prefix;
    replay += " --nodes " + std::to_string(r.nodes) + " --runs 1 --seed "
              + std::to_string(r.seed);
    failures_.push_back(
        {r.algo, r.nodes, r.seed,
         r.violations.empty() ? std::string{"liveness"} : r.violations.front(), replay});
  }
}

namespace {

election_summary summarize_elections(const std::vector<const election_record*>& es) {
  election_summary g;
  std::vector<double> lat;
  uint64_t sum = 0;
  for (auto* e : es) {
    g.messages_min =
        g.elections == 0 ? e->messages : std::min(g.messages_min, e->messages);
    g.messages_max = std::max(g.messages_max, e->messages);
    ++g.elections;
    sum += e->messages;
    lat.push_back(ms(e->latency));
  }
  if (g.elections > 0)
    g.messages_mean = static_cast<double>(sum) / static_cast<double>(g.elections);
  g.latency_p50_ms = percentile(lat, 0.50);
  g.latency_p99_ms = percentile(lat, 0.99);
  return g;
}

} // namespace

group_summary sim_summary::summarize(el::algorithm algo, size_t nodes) const {
  group_summary g;
  g.algo = algo;
  g.nodes = nodes;
  std::vector<const election_record*> all, startup, failover;
  for (auto& e : elections_) {
    if (e.algo != algo || (nodes != 0 && e.nodes != nodes))
      continue;
    all.push_back(&e.record);
    (e.record.startup ? startup : failover).push_back(&e.record);
  }
  auto a = summarize_elections(all);
  g.elections = a.elections;
  g.messages_mean = a.messages_mean;
  g.messages_min = a.messages_min;
  g.messages_max = a.messages_max;
  g.latency_p50_ms = a.latency_p50_ms;
  g.latency_p99_ms = a.latency_p99_ms;
  g.startup = summarize_elections(startup);
  g.failover = summarize_elections(failover);
  double fraction = 0;
  for (auto& r : runs_) {
    if (r.algo != algo || (nodes != 0 && r.nodes != nodes))
      continue;
    ++g.runs;
    g.safety_violations += r.safety;
    g.split_brain_windows += r.split_windows;
    g.split_brain_ms += r.split_ms;
    g.split_brain_max_ms = std::max(g.split_brain_max_ms, r.split_max_ms);
    g.stale_leader_windows += r.stale_windows;
    g.stale_leader_max_ms = std::max(g.stale_leader_max_ms, r.stale_max_ms);
    g.liveness_failures += r.live ? 0 : 1;
    g.leader_changes += r.leader_changes;
    g.needless_leader_changes += r.needless_changes;
    fraction += r.leader_fraction;
  }
  if (g.runs > 0)
    g.leader_time_fraction = fraction / static_cast<double>(g.runs);
  return g;
}

std::vector<group_summary> sim_summary::per_algorithm() const {
  std::vector<group_summary> result;
  std::vector<el::algorithm> seen;
  for (auto& [algo, n] : groups_) {
    if (std::find(seen.begin(), seen.end(), algo) != seen.end())
      continue;
    seen.push_back(algo);
    result.push_back(summarize(algo, 0));
  }
  return result;
}

std::vector<group_summary> sim_summary::per_group() const {
  std::vector<group_summary> result;
  for (auto& [algo, n] : groups_)
    result.push_back(summarize(algo, n));
  return result;
}

bool sim_summary::safety_violated() const {
  return std::any_of(runs_.begin(), runs_.end(), [](auto& r) { return r.safety > 0; });
}

bool sim_summary::liveness_failed() const {
  return std::any_of(runs_.begin(), runs_.end(), [](auto& r) { return !r.live; });
}

void sim_summary::print_table(std::ostream& out) const {
  auto fixed = [](double v, int digits = 1) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
  };
  auto row = [&](const group_summary& g, const std::string& label) {
    auto& st = g.startup;
    auto& fo = g.failover;
    out << std::left << std::setw(10) << label << std::right << std::setw(6) << g.runs
        << std::setw(9) << st.elections << std::setw(10) << fixed(st.messages_mean)
        << std::setw(9) << fixed(st.latency_p50_ms) << std::setw(10) << fo.elections
        << std::setw(18)
        << (fo.elections
                ? fixed(fo.messages_mean) + " / " + std::to_string(fo.messages_max)
                : std::string{"-"})
        << std::setw(16)
        << (fo.elections ? fixed(fo.latency_p50_ms) + " / " + fixed(fo.latency_p99_ms)
                         : std::string{"-"})
        << std::setw(8) << g.safety_violations << std::setw(13)
        << (std::to_string(g.split_brain_windows) + " / " + fixed(g.split_brain_max_ms))
        << std::setw(13)
        << (std::to_string(g.stale_leader_windows) + " / " + fixed(g.stale_leader_max_ms))
        << std::setw(10) << g.needless_leader_changes << std::setw(10)
        << g.liveness_failures << std::setw(9) << fixed(100 * g.leader_time_fraction)
        << '\n';
  };
  out << std::left << std::setw(10) << "" << std::right << std::setw(6) << ""
      << std::setw(28) << "start-up election" << std::setw(44) << "failover elections"
      << '\n';
  out << std::left << std::setw(10) << "algorithm" << std::right << std::setw(6) << "runs"
      << std::setw(9) << "count" << std::setw(10) << "msgs" << std::setw(9) << "ms p50"
      << std::setw(10) << "count" << std::setw(18) << "msgs mean/max" << std::setw(16)
      << "ms p50/p99" << std::setw(8) << "safety" << std::setw(13) << "split n/max"
      << std::setw(13) << "stale n/max" << std::setw(10) << "needless" << std::setw(10)
      << "liveness" << std::setw(9) << "leader%" << '\n';
  auto groups = per_group();
  bool several_sizes = groups.size() > per_algorithm().size();
  for (auto& g : per_algorithm()) {
    row(g, std::string{el::to_string(g.algo)});
    if (several_sizes)
      for (auto& s : groups)
        if (s.algo == g.algo)
          row(s, "  n=" + std::to_string(s.nodes));
  }
  out << "(msgs: every message an election caused, heartbeats excluded; split: "
         "windows with two acting leaders / longest ms; stale: a deposed leader still "
         "claiming after a majority adopted a higher term / longest ms; needless: "
         "leaders taken in a term above a healthy leader's connected to a majority; "
         "leader%: time with an agreed, acting leader)\n";
  for (auto& f : failures_)
    out << "FAILED " << el::to_string(f.algo) << " n=" << f.nodes << " seed " << f.seed
        << ": " << f.what << "\n  replay: " << f.replay << '\n';
  out << verdict() << '\n';
}

std::string sim_summary::verdict() const {
  uint64_t safety = 0, liveness = 0, split = 0, stale = 0, needless = 0;
  double split_max = 0, split_total = 0, stale_max = 0;
  for (auto& r : runs_) {
    safety += r.safety;
    liveness += r.live ? 0 : 1;
    split += r.split_windows;
    split_total += r.split_ms;
    split_max = std::max(split_max, r.split_max_ms);
    stale += r.stale_windows;
    stale_max = std::max(stale_max, r.stale_max_ms);
    needless += r.needless_changes;
  }
  std::ostringstream o;
  o << std::fixed << std::setprecision(1)
    << (safety + liveness == 0 ? "OK: " : "FAILED: ") << safety << " safety violation"
    << (safety == 1 ? "" : "s") << ", " << liveness << " liveness failure"
    << (liveness == 1 ? "" : "s") << " in " << runs_.size() << " run"
    << (runs_.size() == 1 ? "" : "s") << "; split brain: " << split << " window"
    << (split == 1 ? "" : "s");
  if (split > 0)
    o << " (longest " << split_max << " ms, total " << split_total << " ms)";
  o << "; stale leaders: " << stale << " window" << (stale == 1 ? "" : "s");
  if (stale > 0)
    o << " (longest " << stale_max << " ms)";
  o << "; needless leader changes: " << needless;
  return o.str();
}

std::string sim_summary::to_json(uint64_t seed, size_t runs, const std::string& faults,
                                 bool guard) const {
  using nlohmann::json;
  auto fill = [](const group_summary& g) {
    json j;
    j["runs"] = g.runs;
    j["elections"] = g.elections;
    j["messages_per_election"] = {
        {"mean", g.messages_mean}, {"min", g.messages_min}, {"max", g.messages_max}};
    j["election_latency_ms"] = {{"p50", g.latency_p50_ms}, {"p99", g.latency_p99_ms}};
    auto kind = [](const election_summary& e) {
      return json{
          {"elections", e.elections},
          {"messages_per_election",
           {{"mean", e.messages_mean}, {"min", e.messages_min}, {"max", e.messages_max}}},
          {"latency_ms", {{"p50", e.latency_p50_ms}, {"p99", e.latency_p99_ms}}}};
    };
    j["startup"] = kind(g.startup);
    j["failover"] = kind(g.failover);
    j["safety_violations"] = g.safety_violations;
    j["split_brain_windows"] = g.split_brain_windows;
    j["split_brain_ms"] = g.split_brain_ms;
    j["split_brain_max_ms"] = g.split_brain_max_ms;
    j["stale_leader_windows"] = g.stale_leader_windows;
    j["stale_leader_max_ms"] = g.stale_leader_max_ms;
    j["leader_time_fraction"] = g.leader_time_fraction;
    j["liveness_failures"] = g.liveness_failures;
    j["leader_changes"] = g.leader_changes;
    j["needless_leader_changes"] = g.needless_leader_changes;
    return j;
  };
  result_counts counts;
  counts.runs = runs_.size();
  auto algorithms = per_algorithm();
  for (auto& g : algorithms) {
    counts.safety_violations += g.safety_violations;
    counts.liveness_failures += g.liveness_failures;
  }
  auto failures = json::array();
  for (auto& f : failures_)
    failures.push_back({{"algorithm", std::string{el::to_string(f.algo)}},
                        {"nodes", f.nodes},
                        {"seed", f.seed},
                        {"what", json::array({f.what})},
                        {"replay", f.replay}});
  auto doc =
      result_envelope("election", seed, faults, verdict(), counts, std::move(failures));
  doc["runs_per_size"] = runs;
  doc["quorum_guard"] = guard;
  doc["algorithms"] = json::object();
  auto groups = per_group();
  for (auto& g : algorithms) {
    auto j = fill(g);
    j["seed"] = seed;
    j["by_nodes"] = json::array();
    for (auto& s : groups)
      if (s.algo == g.algo) {
        auto sj = fill(s);
        sj["nodes"] = s.nodes;
        sj["split_brain_window_ms"] = json::array();
        sj["stale_leader_window_ms"] = json::array();
        for (auto& r : runs_)
          if (r.algo == s.algo && r.nodes == s.nodes) {
            for (auto w : r.split_window_ms)
              sj["split_brain_window_ms"].push_back(w);
            for (auto w : r.stale_window_ms)
              sj["stale_leader_window_ms"].push_back(w);
          }
        j["by_nodes"].push_back(sj);
      }
    doc["algorithms"][std::string{el::to_string(g.algo)}] = j;
  }
  return doc.dump(2);
}

BOOST_OUTCOME_V2_NAMESPACE::result<void, std::string>
sim_summary::write_outputs(const std::string& dir, const run_report& timeline_run,
                           const std::string& faults) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return "cannot create " + dir + ": " + ec.message();
  auto path = [&](const char* name) { return (fs::path{dir} / name).string(); };
  // (algorithm, n, startup) groups with their election counts, for the plots.
  std::vector<std::tuple<el::algorithm, size_t, bool, size_t>> kinds;
  for (auto& e : elections_) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](auto& k) {
      return std::get<0>(k) == e.algo && std::get<1>(k) == e.nodes
             && std::get<2>(k) == e.record.startup;
    });
    if (it == kinds.end())
      kinds.emplace_back(e.algo, e.nodes, e.record.startup, 1);
    else
      ++std::get<3>(*it);
  }
  {
    std::ofstream runs{path("runs.csv")};
    runs << "algorithm,nodes,seed,elections,messages_sent,safety_violations,"
            "split_brain_windows,split_brain_ms,liveness_ok,leader_changes,"
            "agreement_after_heal_ms,stale_leader_windows,leader_time_fraction,"
            "elections_after_stable,needless_leader_changes\n";
    for (auto& r : runs_)
      runs << el::to_string(r.algo) << ',' << r.nodes << ',' << r.seed << ','
           << r.elections << ',' << r.messages_sent << ',' << r.safety << ','
           << r.split_windows << ',' << r.split_ms << ',' << (r.live ? 1 : 0) << ','
           << r.leader_changes << ',' << r.agreement_after_heal_ms << ','
           << r.stale_windows << ',' << r.leader_fraction << ','
           << r.elections_after_stable << ',' << r.needless_changes << '\n';
    std::ofstream els{path("elections.csv")};
    els << "algorithm,nodes,seed,kind,latency_ms,messages";
    for (auto name : el::message_type_names)
      els << ',' << name;
    els << '\n';
    for (auto& e : elections_) {
      els << el::to_string(e.algo) << ',' << e.nodes << ',' << e.seed << ','
          << (e.record.startup ? "startup" : "failover") << ',' << ms(e.record.latency)
          << ',' << e.record.messages;
      for (auto c : e.record.by_type)
        els << ',' << c;
      els << '\n';
    }
    std::ofstream tl{path("timeline.csv")};
    tl << "time_ms,node,event,epoch,leader\n";
    for (auto& t : timeline_run.timeline)
      tl << ms(t.at) << ',' << t.node.value << ',' << t.what << ',' << t.t.epoch << ','
         << t.t.leader.value << '\n';
    // Acting intervals per candidate, for the timeline plot.
    std::ofstream iv{path("acting_intervals.csv")};
    iv << "node,start_ms,end_ms,epoch\n";
    std::map<uint64_t, std::pair<double, uint64_t>> open;
    for (auto& t : timeline_run.timeline) {
      auto id = t.node.value;
      if (t.what == "acting_started") {
        open[id] = {ms(t.at), t.t.epoch};
      } else if ((t.what == "acting_stopped" || t.what == "crashed") && open.count(id)) {
        iv << id << ',' << open[id].first << ',' << ms(t.at) << ',' << open[id].second
           << '\n';
        open.erase(id);
      }
    }
    for (auto& [id, start] : open)
      iv << id << ',' << start.first << ',' << ms(timeline_run.end) << ',' << start.second
         << '\n';
    // Mean messages per election by group size and kind.
    std::ofstream mpe{path("messages_per_election.csv")};
    mpe << "algorithm,nodes,kind,mean,min,max\n";
    for (auto& g : per_group()) {
      for (auto startup : {true, false}) {
        auto& k = startup ? g.startup : g.failover;
        if (k.elections > 0)
          mpe << el::to_string(g.algo) << ',' << g.nodes << ','
              << (startup ? "startup" : "failover") << ',' << k.messages_mean << ','
              << k.messages_min << ',' << k.messages_max << '\n';
      }
    }
    if (!runs || !els || !tl || !mpe || !iv)
      return "cannot write the CSV files in " + dir;
  }
  size_t max_n = 2;
  for (auto& [a, n] : groups_)
    max_n = std::max(max_n, n);
  // The script runs inside `dir` (gnuplot is started there): bare file names.
  std::ofstream gp{path("plots.gp")};
  gp << "set datafile separator ','\n"
        "set terminal svg size 900,560 dynamic background rgb 'white'\n"
        "set key top left\n"
        "set output 'messages_per_election.svg'\n"
        "set title 'Messages per election vs group size (mean over runs; every message "
        "an election caused, heartbeats excluded)'\n"
        "set xlabel 'candidates (n)'\nset ylabel 'messages'\n"
        "set logscale y\nset xrange [2:"
     << max_n << "]\nplot ";
  bool first_series = true;
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (auto kind : {"failover", "startup"}) {
      bool present = std::any_of(kinds.begin(), kinds.end(), [&](auto& k) {
        return std::get<0>(k) == algo
               && std::get<2>(k) == (std::string{kind} == "startup");
      });
      if (!present)
        continue;
      auto name = std::string{el::to_string(algo)};
      gp << (first_series ? "" : ", \\\n     ") << "'messages_per_election.csv' using "
         << "2:(strcol(1) eq '" << name << "' && strcol(3) eq '" << kind
         << "' ? $4 : 1/0) with linespoints title '" << name << ", " << kind
         << " elections (measured)'";
      first_series = false;
    }
  }
  gp << (first_series ? "" : ", \\\n     ")
     << "x-2 dashtype 2 title 'Bully best case: n-2', \\\n"
        "     x*(x-1) + x-1 dashtype 2 title 'Bully worst case: n(n-1) + n-1', \\\n"
        "     2*x dashtype 3 title 'Ring: 2n hops', 4*x dashtype 3 title 'Ring: 2n hops "
        "+ "
        "2n acks'\n"
        "unset logscale y\nset autoscale x\n"
        "set output 'election_latency.svg'\n"
        "set title 'Election latency (suspicion or start to agreement), cumulative, by "
        "algorithm, n and kind'\n"
        "set xlabel 'latency (ms)'\nset ylabel 'fraction of elections'\n"
        "set key bottom right\n";
  if (kinds.empty()) {
    gp << "plot 0 notitle\n";
  } else {
    gp << "plot ";
    for (size_t i = 0; i < kinds.size(); ++i) {
      auto& [algo, n, startup, count] = kinds[i];
      auto name = std::string{el::to_string(algo)};
      gp << (i == 0 ? "" : ", \\\n     ") << "'elections.csv' using (strcol(1) eq '"
         << name << "' && $2 == " << n << " && strcol(4) eq '"
         << (startup ? "startup" : "failover") << "' ? $5 : 1/0):(1.0/" << count
         << ") smooth cumulative with lines title '" << name << ", n=" << n << ", "
         << (startup ? "start-up" : "failover") << " (" << count << ")'";
    }
    gp << '\n';
  }
  auto label = std::string{el::to_string(timeline_run.algo)}
               + ", n=" + std::to_string(timeline_run.nodes) + ", seed "
               + std::to_string(timeline_run.seed)
               + (faults.empty() ? std::string{", no faults"} : ", faults " + faults);
  std::string escaped;
  for (char c : label)
    escaped += c == '\'' ? std::string{"''"} : std::string(1, c);
  gp << "set output 'timeline.svg'\n"
        "set title 'Leadership timeline of one run: "
     << escaped
     << " (bars: acting as leader)' noenhanced\n"
        "set xlabel 'virtual time (ms)'\nset ylabel 'candidate'\n"
        "set yrange [0.5:"
     << timeline_run.nodes + 0.5
     << "]\nset ytics 1\n"
        "set key outside right\n"
        "plot 'acting_intervals.csv' using 2:1:($3-$2):(0) with vectors nohead lw 8 "
        "title 'acting', \\\n"
        "     'timeline.csv' using 1:(strcol(3) eq 'election_started' ? $2 : 1/0) "
        "with points pt 1 ps 1.5 title 'starts an election', \\\n"
        "     'timeline.csv' using 1:(strcol(3) eq 'crashed' ? $2 : 1/0) "
        "with points pt 2 ps 2 lc rgb 'red' title 'crashed', \\\n"
        "     'timeline.csv' using 1:(strcol(3) eq 'restarted' ? $2 : 1/0) "
        "with points pt 6 ps 2 title 'restarted', \\\n"
        "     'timeline.csv' using 1:(strcol(3) eq 'paused' ? $2 : 1/0) "
        "with points pt 4 ps 2 title 'paused'\n";
  gp.close();
  if (!gp)
    return "cannot write " + path("plots.gp");
  if (elections_.empty())
    return outcome::success(); // nothing to plot
  auto cmd = "cd " + shell_quote(dir) + " && gnuplot plots.gp 2>gnuplot.log";
  if (std::system(cmd.c_str()) != 0)
    return "gnuplot failed (is Debian's gnuplot-nox installed? see " + path("gnuplot.log")
           + ")";
  return outcome::success();
}

} // namespace conclave::sim
