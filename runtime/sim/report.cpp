#include "runtime/sim/report.hpp"

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
  runs_.push_back({r.algo, r.nodes, r.seed, r.elections.size(), r.messages_sent,
                   r.safety_violations, r.split_brain_windows, ms(r.split_brain_time),
                   r.liveness_ok, r.leader_changes, ms(r.time_to_agreement_after_heal)});
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

group_summary sim_summary::summarize(el::algorithm algo, size_t nodes) const {
  group_summary g;
  g.algo = algo;
  g.nodes = nodes;
  std::vector<double> lat;
  uint64_t msg_sum = 0;
  bool first = true;
  for (auto& e : elections_) {
    if (e.algo != algo || (nodes != 0 && e.nodes != nodes))
      continue;
    ++g.elections;
    lat.push_back(ms(e.record.latency));
    msg_sum += e.record.messages;
    g.messages_min =
        first ? e.record.messages : std::min(g.messages_min, e.record.messages);
    g.messages_max = std::max(g.messages_max, e.record.messages);
    first = false;
  }
  for (auto& r : runs_) {
    if (r.algo != algo || (nodes != 0 && r.nodes != nodes))
      continue;
    ++g.runs;
    g.safety_violations += r.safety;
    g.split_brain_windows += r.split_windows;
    g.split_brain_ms += r.split_ms;
    g.liveness_failures += r.live ? 0 : 1;
    g.leader_changes += r.leader_changes;
  }
  if (g.elections > 0)
    g.messages_mean = static_cast<double>(msg_sum) / static_cast<double>(g.elections);
  g.latency_p50_ms = percentile(lat, 0.50);
  g.latency_p99_ms = percentile(lat, 0.99);
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
  auto row = [&](const group_summary& g, const std::string& label) {
    std::ostringstream msgs, lat;
    msgs << std::fixed << std::setprecision(1) << g.messages_mean << " / "
         << g.messages_min << " / " << g.messages_max;
    lat << std::fixed << std::setprecision(1) << g.latency_p50_ms << " / "
        << g.latency_p99_ms;
    out << std::left << std::setw(12) << label << std::right << std::setw(7) << g.runs
        << std::setw(11) << g.elections << std::setw(30) << msgs.str() << std::setw(21)
        << lat.str() << std::setw(8) << g.safety_violations << std::setw(13)
        << g.split_brain_windows << std::setw(10) << g.liveness_failures << std::setw(9)
        << g.leader_changes << '\n';
  };
  out << std::left << std::setw(12) << "algorithm" << std::right << std::setw(7) << "runs"
      << std::setw(11) << "elections" << std::setw(30) << "msgs/election mean/min/max"
      << std::setw(21) << "latency ms p50/p99" << std::setw(8) << "safety"
      << std::setw(13) << "split-brain" << std::setw(10) << "liveness" << std::setw(9)
      << "changes" << '\n';
  auto groups = per_group();
  bool several_sizes = groups.size() > per_algorithm().size();
  for (auto& g : per_algorithm()) {
    row(g, std::string{el::to_string(g.algo)});
    if (several_sizes)
      for (auto& s : groups)
        if (s.algo == g.algo)
          row(s, "  n=" + std::to_string(s.nodes));
  }
  for (auto& f : failures_)
    out << "FAILED " << el::to_string(f.algo) << " n=" << f.nodes << " seed " << f.seed
        << ": " << f.what << "\n  replay: " << f.replay << '\n';
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
    j["safety_violations"] = g.safety_violations;
    j["split_brain_windows"] = g.split_brain_windows;
    j["split_brain_ms"] = g.split_brain_ms;
    j["liveness_failures"] = g.liveness_failures;
    j["leader_changes"] = g.leader_changes;
    return j;
  };
  json doc;
  doc["seed"] = seed;
  doc["runs"] = runs;
  doc["faults"] = faults;
  doc["quorum_guard"] = guard;
  doc["algorithms"] = json::object();
  auto groups = per_group();
  for (auto& g : per_algorithm()) {
    auto j = fill(g);
    j["seed"] = seed;
    j["by_nodes"] = json::array();
    for (auto& s : groups)
      if (s.algo == g.algo) {
        auto sj = fill(s);
        sj["nodes"] = s.nodes;
        j["by_nodes"].push_back(sj);
      }
    j["failures"] = json::array();
    for (auto& f : failures_)
      if (f.algo == g.algo)
        j["failures"].push_back({{"nodes", f.nodes},
                                 {"seed", f.seed},
                                 {"what", f.what},
                                 {"replay", f.replay}});
    doc["algorithms"][std::string{el::to_string(g.algo)}] = j;
  }
  return doc.dump(2);
}

BOOST_OUTCOME_V2_NAMESPACE::result<void, std::string>
sim_summary::write_outputs(const std::string& dir, const run_report& timeline_run) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return "cannot create " + dir + ": " + ec.message();
  auto path = [&](const char* name) { return (fs::path{dir} / name).string(); };
  {
    std::ofstream runs{path("runs.csv")};
    runs << "algorithm,nodes,seed,elections,messages_sent,safety_violations,"
            "split_brain_windows,split_brain_ms,liveness_ok,leader_changes,"
            "agreement_after_heal_ms\n";
    for (auto& r : runs_)
      runs << el::to_string(r.algo) << ',' << r.nodes << ',' << r.seed << ','
           << r.elections << ',' << r.messages_sent << ',' << r.safety << ','
           << r.split_windows << ',' << r.split_ms << ',' << (r.live ? 1 : 0) << ','
           << r.leader_changes << ',' << r.agreement_after_heal_ms << '\n';
    std::ofstream els{path("elections.csv")};
    els << "algorithm,nodes,seed,latency_ms,messages";
    for (auto name : el::message_type_names)
      els << ',' << name;
    els << '\n';
    for (auto& e : elections_) {
      els << el::to_string(e.algo) << ',' << e.nodes << ',' << e.seed << ','
          << ms(e.record.latency) << ',' << e.record.messages;
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
    // Mean messages per election by group size, with the textbook curves.
    std::ofstream mpe{path("messages_per_election.csv")};
    mpe << "algorithm,nodes,mean,min,max\n";
    for (auto& g : per_group())
      mpe << el::to_string(g.algo) << ',' << g.nodes << ',' << g.messages_mean << ','
          << g.messages_min << ',' << g.messages_max << '\n';
    if (!runs || !els || !tl || !mpe || !iv)
      return "cannot write the CSV files in " + dir;
  }
  size_t max_n = 2;
  for (auto& [a, n] : groups_)
    max_n = std::max(max_n, n);
  std::ofstream gp{path("plots.gp")};
  gp << "set datafile separator ','\n"
        "set terminal svg size 800,500 dynamic background rgb 'white'\n"
        "set key top left\n"
        "set output "
     << shell_quote(path("messages_per_election.svg"))
     << "\n"
        "set title 'Messages per election vs group size'\n"
        "set xlabel 'candidates (n)'\nset ylabel 'messages (heartbeats excluded)'\n"
        "set logscale y\nset xrange [2:"
     << max_n
     << "]\n"
        "plot 'messages_per_election.csv' using 2:(strcol(1) eq 'bully' ? $3 : 1/0) "
        "with linespoints title 'Bully (measured mean)', \\\n"
        "     'messages_per_election.csv' using 2:(strcol(1) eq 'ring' ? $3 : 1/0) "
        "with linespoints title 'Ring (measured mean)', \\\n"
        "     x-2 title 'Bully best case: n-2', \\\n"
        "     x*(x-1) + x-1 title 'Bully worst case: n(n-1) + n-1', \\\n"
        "     2*x title 'Ring: 2n hops', 4*x dashtype 2 title 'Ring: 2n hops + 2n acks'\n"
        "unset logscale y\nset autoscale x\n"
        "set output "
     << shell_quote(path("election_latency.svg"))
     << "\n"
        "set title 'Election latency (suspicion to agreement), cumulative'\n"
        "set xlabel 'latency (ms)'\nset ylabel 'fraction of elections'\n"
        "stats 'elections.csv' using 4 nooutput\n"
        "n_el = STATS_records\n"
        "plot 'elections.csv' using 4:(1.0/n_el) smooth cumulative with lines "
        "title 'all elections'\n"
        "set output "
     << shell_quote(path("timeline.svg"))
     << "\n"
        "set title 'Leadership timeline of one run (bars: acting as leader)'\n"
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
