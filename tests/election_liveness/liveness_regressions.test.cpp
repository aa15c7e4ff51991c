// Each liveness defect of issue 11 as the `conclave sim` run that showed it, driven
// through the simulation API (runtime/sim/simulation.hpp). Every test here failed
// before its fix; the cheaper, mechanism-level tests sit beside the cores
// (protocols/election/*.test.cpp).
#include "runtime/sim/simulation.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

using namespace std::chrono_literals;
namespace sim = conclave::sim;
namespace el = conclave::election;

namespace {

/// The settings `conclave sim` uses for these flags.
sim::sim_settings settings(el::algorithm algo, size_t n, const char* spec, uint64_t seed,
                           bool guard = false, bool preempt = false) {
  sim::sim_settings s;
  s.config.algo = algo;
  s.config.guard.enabled = guard;
  s.config.preempt = preempt;
  s.nodes = n;
  auto plan = sim::parse_fault_spec(spec);
  EXPECT_TRUE(plan) << plan.error();
  s.plan = plan.value();
  s.seed = seed;
  return s;
}

/// The faults `random=` drew, for the group size and seed of each run below,
/// when that run was found: the draw then took crashes, pauses, partitions
/// and leader crashes only; it now takes every word, so the seed alone would
/// run something else. In this workload the drawn faults with the same seed
/// replay the run exactly (runtime/sim/fault_replay.test.cpp).
const char* found(size_t n, uint64_t seed) {
  static const std::map<std::pair<size_t, uint64_t>, const char*> faults{
      {{3, 3756},
       "crash@66ms:2,restart@270ms:2,partition@663ms-875ms:3|1-2,"
       "partition@982ms-1628ms:1-3,crash@1011ms:1,pause@1315ms-1464ms:2,"
       "restart@1339ms:1"},
      {{5, 900808},
       "loss=0.05,dup=0.05,delay=1ms..15ms,crash-leader@991ms,"
       "crash@1085ms:5,restart@1168ms:5,crash-leader@1180ms,"
       "pause@1183ms-1659ms:4,pause@1288ms-1979ms:3,restart-leader@1342ms,"
       "partition@1366ms-2000ms:1+3+4+5|2,restart-leader@1893ms"},
      {{7, 900123},
       "loss=0.05,dup=0.05,delay=1ms..15ms,pause@15ms-904ms:3,"
       "pause@29ms-596ms:4,crash-leader@378ms,crash-leader@661ms,"
       "crash@927ms:4,restart-leader@1015ms,crash-leader@1422ms,"
       "restart-leader@1511ms,restart-leader@1616ms,restart@1721ms:4"},
      {{3, 900547},
       "loss=0.05,dup=0.05,delay=1ms..30ms,pause@179ms-579ms:3,"
       "crash@286ms:2,restart@394ms:2,crash-leader@662ms,"
       "restart-leader@1103ms,pause@1112ms-1655ms:2,"
       "partition@1455ms-1531ms:3|1-2,crash@1473ms:1,restart@2000ms:1"},
      {{3, 900646},
       "loss=0.05,dup=0.05,delay=1ms..30ms,crash-leader@65ms,"
       "crash-leader@120ms,restart-leader@424ms,crash@559ms:1,"
       "restart-leader@580ms,crash@757ms:1,partition@790ms-1018ms:1-3,"
       "partition@1178ms-2000ms:1-3,restart@1416ms:1,restart@1533ms:1"},
      {{7, 900400},
       "loss=0.05,dup=0.05,delay=1ms..30ms,crash-leader@189ms,crash@628ms:7,"
       "restart-leader@633ms,partition@1128ms-1672ms:1+4+6|2+3+5+7,"
       "restart@1320ms:7,crash-leader@1349ms,restart-leader@1409ms,"
       "crash-leader@1450ms,crash-leader@1474ms,restart-leader@2000ms,"
       "restart-leader@2000ms"},
      {{9, 900606},
       "loss=0.05,dup=0.05,delay=1ms..30ms,pause@445ms-1184ms:9,"
       "crash@631ms:5,restart@941ms:5,"
       "partition@983ms-1164ms:1+2+3+4+6+7+9|5+8,crash@1107ms:9,"
       "pause@1250ms-1549ms:7,partition@1436ms-2000ms:1+2+7+8|3+4+5+6+9,"
       "restart@2000ms:9"},
      {{7, 900029},
       "loss=0.05,dup=0.05,delay=1ms..30ms,crash-leader@91ms,"
       "pause@157ms-241ms:7,partition@234ms-652ms:2+3+6+7|1+4+5,"
       "partition@509ms-1070ms:1+4+7|2+3+5+6,crash-leader@612ms,"
       "restart-leader@938ms,pause@1099ms-2000ms:5,restart-leader@1419ms"},
      {{7, 900645},
       "loss=0.05,dup=0.05,delay=1ms..30ms,crash@171ms:4,crash-leader@174ms,"
       "partition@317ms-774ms:1+2+3+4+6+7|5,restart-leader@535ms,"
       "partition@969ms-1299ms:3|1+2+4+5+6+7,restart@992ms:4,"
       "crash-leader@1129ms,restart-leader@1433ms,pause@1460ms-1683ms:6"},
      {{9, 900238},
       "loss=0.05,dup=0.05,delay=1ms..30ms,crash-leader@293ms,"
       "crash-leader@644ms,crash@668ms:6,restart-leader@876ms,"
       "restart-leader@930ms,restart@1241ms:6,crash@1263ms:6,"
       "crash-leader@1371ms,crash-leader@1493ms,restart-leader@1529ms,"
       "restart@1531ms:6,restart-leader@2000ms"},
      {{7, 900127},
       "loss=0.05,dup=0.2,delay=1ms..15ms,crash@7ms:2,pause@186ms-694ms:7,"
       "partition@240ms-737ms:2+3+4+6|1+5+7,crash-leader@250ms,"
       "partition@449ms-547ms:5+7|1+2+3+4+6,restart-leader@614ms,"
       "pause@664ms-1644ms:2,restart@701ms:2"},
      {{64, 4},
       "loss=0.05,delay=1ms..5ms,crash-leader@4ms,crash@21ms:2,"
       "partition@70ms-384ms:2+4+6+7+8+9+10+11+12+13+14+18+20+23+27+28+32+33+37+39+40+41+"
       "42+44+47+48+49+51+52+53+54+56+59+62+64|1+3+5+15+16+17+19+21+22+24+25+26+29+30+31+"
       "34+35+36+38+43+45+46+50+55+57+58+60+61+63,"
       "pause@132ms-487ms:50,crash@166ms:38,crash@296ms:20,"
       "crash-leader@353ms,restart-leader@362ms,crash-leader@381ms,"
       "restart@389ms:2,crash-leader@409ms,pause@457ms-812ms:32,"
       "restart-leader@474ms,pause@515ms-731ms:28,restart@555ms:38,"
       "pause@624ms-1349ms:25,crash-leader@661ms,crash@662ms:62,"
       "crash-leader@673ms,crash-leader@793ms,pause@890ms-959ms:12,"
       "restart-leader@903ms,crash-leader@926ms,crash-leader@940ms,"
       "restart@994ms:20,crash-leader@1035ms,pause@1092ms-1327ms:63,"
       "crash-leader@1093ms,crash@1109ms:31,"
       "partition@1141ms-1235ms:1+2+4+8+9+11+12+20+21+25+26+27+28+29+30+31+32+42+44+51+"
       "54+55+57+59+62+64|3+5+6+7+10+13+14+15+16+17+18+19+22+23+24+33+34+35+36+37+38+39+"
       "40+41+43+45+46+47+48+49+50+52+53+56+58+60+61+63,"
       "restart@1172ms:62,"
       "partition@1179ms-1660ms:1+3+5+9+10+11+14+15+19+21+22+23+26+27+28+29+30+33+35+37+"
       "38+41+45+47+52+53+55+56+60+63|2+4+6+7+8+12+13+16+17+18+20+24+25+31+32+34+36+39+"
       "40+42+43+44+46+48+49+50+51+54+57+58+59+61+62+64,"
       "pause@1202ms-2000ms:3,restart-leader@1260ms,restart-leader@1281ms,"
       "crash-leader@1312ms,restart-leader@1389ms,crash@1392ms:38,"
       "restart-leader@1437ms,pause@1459ms-1780ms:25,restart@1460ms:38,"
       "pause@1492ms-1945ms:11,restart-leader@1541ms,restart-leader@1607ms,"
       "restart@1619ms:31,restart-leader@1652ms,restart-leader@1791ms,"
       "restart-leader@1968ms"},
      {{64, 7},
       "loss=0.05,delay=1ms..5ms,"
       "partition@33ms-606ms:3+5+6+8+10+18+21+25+26+27+34+35+36+37+38+40+41+43+44+48+49+"
       "52+54+56+57+58+59+60+64|1+2+4+7+9+11+12+13+14+15+16+17+19+20+22+23+24+28+29+30+"
       "31+32+33+39+42+45+46+47+50+51+53+55+61+62+63,"
       "crash@49ms:30,crash@52ms:27,pause@137ms-611ms:37,crash-leader@212ms,"
       "restart-leader@314ms,pause@340ms-417ms:64,crash-leader@346ms,"
       "restart@356ms:30,crash@388ms:12,crash@394ms:17,crash@395ms:8,"
       "partition@432ms-572ms:1+3+4+6+8+9+12+13+16+18+19+20+21+24+25+27+28+29+31+38+39+"
       "41+42+43+44+45+48+49+50+51+58+59+61|2+5+7+10+11+14+15+17+22+23+26+30+32+33+34+35+"
       "36+37+40+46+47+52+53+54+55+56+57+60+62+63+64,"
       "restart@455ms:27,restart@513ms:12,pause@528ms-1016ms:55,"
       "pause@552ms-691ms:14,crash@570ms:40,pause@577ms-816ms:47,"
       "crash-leader@713ms,pause@739ms-1274ms:44,crash-leader@836ms,"
       "restart@877ms:8,crash@883ms:51,pause@902ms-1695ms:37,"
       "restart-leader@1023ms,pause@1041ms-1655ms:11,pause@1068ms-1452ms:60,"
       "partition@1107ms-1881ms:1+3+7+10+14+15+16+19+22+23+25+27+28+32+34+35+36+37+39+41+"
       "42+43+44+45+47+49+55+59+61+62+63+64|2+4+5+6+8+9+11+12+13+17+18+20+21+24+26+29+30+"
       "31+33+38+40+46+48+50+51+52+53+54+56+57+58+60,"
       "restart-leader@1110ms,crash@1116ms:62,crash@1132ms:58,"
       "restart-leader@1140ms,crash-leader@1249ms,restart@1306ms:40,"
       "partition@1351ms-1645ms:3+4+6+10+12+13+14+15+16+17+18+22+23+25+28+29+31+34+35+37+"
       "38+41+45+46+48+49+50+51+54+55+56+58+60|1+2+5+7+8+9+11+19+20+21+24+26+27+30+32+33+"
       "36+39+40+42+43+44+47+52+53+57+59+61+62+63+64,"
       "restart@1360ms:17,"
       "partition@1427ms-2000ms:3+4+6+7+11+17+19+23+28+29+31+32+34+35+39+41+42+46+47+49+"
       "54+55+56+57+59+62+64|1+2+5+8+9+10+12+13+14+15+16+18+20+21+22+24+25+26+27+30+33+"
       "36+37+38+40+43+44+45+48+50+51+52+53+58+60+61+63,"
       "restart@1428ms:51,crash@1448ms:14,pause@1493ms-1689ms:4,"
       "restart@1588ms:14,restart-leader@1900ms,restart@2000ms:58,"
       "restart@2000ms:62"},
      {{16, 106},
       "loss=0.3,dup=0.1,delay=1ms..20ms,crash-leader@160ms,"
       "pause@255ms-1065ms:12,crash-leader@373ms,crash-leader@385ms,"
       "crash@400ms:9,restart-leader@413ms,crash@498ms:9,crash@533ms:4,"
       "crash@566ms:3,crash@725ms:10,crash-leader@844ms,"
       "pause@863ms-1079ms:15,crash-leader@922ms,crash-leader@958ms,"
       "crash-leader@974ms,restart-leader@976ms,pause@1042ms-2000ms:1,"
       "restart-leader@1055ms,crash@1058ms:15,restart@1076ms:9,"
       "restart@1107ms:4,restart@1129ms:10,crash-leader@1173ms,"
       "restart@1224ms:9,restart-leader@1232ms,restart-leader@1250ms,"
       "crash@1276ms:4,pause@1449ms-2000ms:8,restart@1464ms:15,"
       "crash-leader@1475ms,restart@1513ms:3,restart-leader@1523ms,"
       "restart-leader@1686ms,restart@1730ms:4,restart-leader@1929ms,"
       "restart-leader@2000ms"},
  };
  auto it = faults.find({n, seed});
  EXPECT_NE(it, faults.end()) << "n=" << n << " seed " << seed;
  return it == faults.end() ? "" : it->second;
}

std::string what_failed(const sim::run_report& r) {
  std::string out;
  for (auto& v : r.violations)
    out += v + "\n";
  return out;
}

} // namespace

// conclave sim --algorithm ring --faults 'random=5' --nodes 3 --runs 1 --seed 3756
TEST(election_liveness, ring_settles_after_the_faults_of_seed_3756_heal) {
  auto r = sim::run_simulation(settings(el::algorithm::ring, 3, found(3, 3756), 3756));
  EXPECT_TRUE(r.liveness_ok) << what_failed(r);
  EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
}

// conclave sim --algorithm bully --nodes 5 --runs 1 --seed 1 --guard --preempt, and
// the same for Ring at n = 2..5 and Bully at n = 4..6 (every one failed).
TEST(election_liveness, guard_with_preempt_produces_an_acting_leader) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (size_t n = 2; n <= 6; ++n) {
      auto r = sim::run_simulation(settings(algo, n, "", 1, /*guard=*/true,
                                            /*preempt=*/true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " n=" << n << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
      EXPECT_EQ(r.elections.size(), 1u) << el::to_string(algo) << " n=" << n;
    }
  }
}

TEST(election_liveness, guard_with_preempt_survives_random_faults) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      auto r = sim::run_simulation(settings(algo, 5, "random=5", seed, true, true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}

// conclave sim --algorithm ring --nodes 3 --faults delay=21ms (228,452 messages,
// epoch 1,046), and the same at 25 ms and 60 ms for n = 3, 5, 9.
TEST(election_liveness, ring_with_a_slow_network_elects_once_without_a_storm) {
  for (auto spec : {"delay=21ms", "delay=25ms", "delay=60ms"}) {
    for (size_t n : {3, 5, 9}) {
      auto r = sim::run_simulation(settings(el::algorithm::ring, n, spec, 1));
      EXPECT_TRUE(r.liveness_ok) << spec << " n=" << n << "\n" << what_failed(r);
      EXPECT_EQ(r.elections.size(), 1u) << spec << " n=" << n;
      EXPECT_EQ(r.leader_changes, 0u) << spec << " n=" << n;
      // One election (at most 2n(n-1) tries of tokens and announcements, as many
      // acks) plus heartbeats and their acks for the rest of the run.
      auto beats = 2 * (n - 1) * static_cast<uint64_t>(r.end / 50ms + 1);
      EXPECT_LE(r.messages_sent, 4 * n * (n - 1) * 2 + beats) << spec << " n=" << n;
    }
  }
}

// The lead's attack run (`--algorithm ring --guard --nodes 3,5,7 --runs 1000
// --seed 900000 --faults 'random=6,loss=0.05,dup=0.05,delay=1ms..15ms'`): Ring
// with the guard had no leader for 3 s after every fault healed. Seed 900808
// (n = 5): a dead round of the highest id swallowed every lower round until its
// 3.7 s round timeout (extinction without end). Seed 900123 (n = 7): a resumed
// successor's burst of late acks stretched a member's hop timeout to the 2 s cap,
// and its dead round swallowed every lower one for the rest of the run.
TEST(election_liveness, ring_with_the_guard_settles_after_the_faults_of_the_attack_run) {
  for (auto [n, seed] : {std::pair<size_t, uint64_t>{5, 900808}, {7, 900123}}) {
    auto r = sim::run_simulation(
        settings(el::algorithm::ring, n, found(n, seed), seed, /*guard=*/true));
    EXPECT_TRUE(r.liveness_ok) << "seed " << seed << "\n" << what_failed(r);
    EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    EXPECT_GT(r.leader_time_fraction_after_heal, 0.5) << "seed " << seed;
  }
}

// Every candidate alone for 5.5 s with the guard: each pre-vote round failed and
// doubled the next one's window (up to 64 x election_wait = 9.6 s), and after the
// heal nobody asked again until the first window ended: no leader within the
// bound, Bully and Ring alike (found while attacking the Ring fix above). The
// request now goes again every election_wait within a window.
TEST(election_liveness, a_long_partition_of_everyone_heals_into_a_leader_with_the_guard) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      auto r = sim::run_simulation(
          settings(algo, 5, "partition@500ms-6s:1|2|3|4|5", seed, /*guard=*/true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}

// Issue 11, "Detecting a silent leader": on a loaded host a node's process
// stalls for tens of milliseconds at a time (its timers fire late, what its
// peers sent waits in its sockets). The fast node profile (heartbeat 10 ms,
// phi with a 50 ms floor, lease 33 ms) must not let such stalls, of a follower
// or of the leader itself, shorter than the detector floor, replace a healthy
// leader; and random faults with stalls mixed in must still settle.
namespace {

sim::sim_settings fast_profile(el::algorithm algo, const std::string& spec,
                               uint64_t seed) {
  auto s = settings(algo, 5, spec.c_str(), seed, /*guard=*/true);
  s.config.heartbeat_interval = 10ms;
  s.config.detector.kind = el::detector_kind::phi;
  s.config.detector.timeout = 50ms;
  s.config.guard.lease = 33ms;
  return s;
}

/// `count` stalls of `who` ("2", or "leader"), `length` ms each, one every
/// `every` ms from 1 s on.
std::string stalls(const std::string& who, int count, int length, int every) {
  std::string spec;
  for (int i = 0; i < count; ++i) {
    auto from = 1000 + i * every;
    auto kind = who == "leader" ? std::string{"pause-leader@"} : std::string{"pause@"};
    spec += (spec.empty() ? "" : ",") + kind + std::to_string(from) + "ms-"
            + std::to_string(from + length) + "ms"
            + (who == "leader" ? std::string{} : ":" + who);
  }
  return spec;
}

} // namespace

TEST(election_liveness, stalls_shorter_than_the_detector_floor_replace_no_leader) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    // A leader stall plus the heartbeat interval it may start in must stay
    // below the 50 ms floor, or the silence is real for everyone: 35 ms.
    for (auto who : {"2", "4", "leader"}) {
      auto length = std::string{who} == "leader" ? 35 : 40;
      auto r = sim::run_simulation(fast_profile(algo, stalls(who, 20, length, 150), 1));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " " << who << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
      EXPECT_EQ(r.elections.size(), 1u) << el::to_string(algo) << " stalls of " << who;
      EXPECT_EQ(r.leader_changes, 0u) << el::to_string(algo) << " stalls of " << who;
    }
  }
}

TEST(election_liveness, random_faults_with_stalling_nodes_settle) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      auto spec =
          "random=5," + stalls("3", 10, 40, 170) + "," + stalls("leader", 5, 45, 330);
      auto r = sim::run_simulation(fast_profile(algo, spec, seed));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}

// The lead's sweeps of issue 11 (3,000 runs each: `--nodes 3,5,7,9 --runs 750
// --seed 900000`), Ring, the attack mix with one-way delays up to 30 ms (with
// and without the guard) and with 20% duplication (guard). Each seed failed
// liveness before: 900400 (a retried token dropped as a copy: hop duplicates
// were judged by the sender's highest hop only), 900547 (a member took its
// own 400 ms stall as its first round trip), 900029 and 900645 (the first
// round-trip sample, from a successor resumed after a pause, was not
// clamped), 900646 (the guarded leader spaced its rounds for a round trip
// shorter than the network had shown and stopped acting), 900238 and 900127
// (same causes; fixed with them). 900606 (n = 9) was listed too but no longer
// failed on this tree before these fixes; it stays as a replay. ring.test.cpp
// and guard_timing's comments name the core test of each cause.
TEST(election_liveness, ring_settles_after_the_faults_of_the_wide_delay_and_dup_sweeps) {
  constexpr auto delay30 = "random=6,loss=0.05,dup=0.05,delay=1ms..30ms";
  constexpr auto dup20 = "random=6,loss=0.05,dup=0.2,delay=1ms..15ms";
  struct seed_case {
    size_t n;
    uint64_t seed;
    bool guard;
    const char* spec;
  };
  for (auto c :
       {seed_case{3, 900547, true, delay30}, seed_case{3, 900646, true, delay30},
        seed_case{7, 900400, true, delay30}, seed_case{9, 900606, true, delay30},
        seed_case{7, 900029, false, delay30}, seed_case{7, 900645, false, delay30},
        seed_case{9, 900238, false, delay30}, seed_case{7, 900127, true, dup20}}) {
    // The faults found for it carry the mix's network settings.
    std::string mix = c.spec;
    EXPECT_EQ(std::string{found(c.n, c.seed)}.rfind(mix.substr(mix.find(',') + 1), 0), 0u)
        << "seed " << c.seed;
    auto r = sim::run_simulation(
        settings(el::algorithm::ring, c.n, found(c.n, c.seed), c.seed, c.guard));
    EXPECT_TRUE(r.liveness_ok) << "seed " << c.seed << " n=" << c.n << "\n"
                               << what_failed(r);
    EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
  }
}

// A non-transitive partition: one follower (node 1) cannot reach the leader
// (the highest id) in either direction but reaches everyone else, for 19.5 s.
// With the guard, the follower's pre-votes are refused by the peers that still
// hear the leader, so the first leader keeps acting through the cut: one leader
// task, no leader change, no new epoch forced on it, no split brain. (Without
// the guard, Ring re-elects the same leader in a new term every ~550 ms while
// the cut lasts, docs/design/election.md "Non-transitive partitions"; Bully does not.)
TEST(election_liveness, a_follower_cut_off_from_the_leader_alone_does_not_disturb_it) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (size_t n : {3, 5}) {
      auto top = std::to_string(n);
      auto spec = "cut@500ms-20s:1>" + top + ",cut@500ms-20s:" + top
                  + ">1,loss=0.01,delay=1ms..5ms";
      for (uint64_t seed = 1; seed <= 10; ++seed) {
        auto r = sim::run_simulation(settings(algo, n, spec.c_str(), seed, true));
        auto what = std::string{el::to_string(algo)} + " n=" + top + " seed "
                    + std::to_string(seed);
        EXPECT_TRUE(r.liveness_ok) << what << "\n" << what_failed(r);
        EXPECT_EQ(r.safety_violations, 0u) << what << "\n" << what_failed(r);
        EXPECT_EQ(r.leader_task_starts, 1u) << what;
        EXPECT_EQ(r.leader_changes, 0u) << what;
        EXPECT_EQ(r.needless_leader_changes, 0u) << what;
        EXPECT_EQ(r.split_brain_windows, 0u) << what;
      }
    }
  }
}

// conclave sim --algorithm ring --preempt --nodes 64 --runs 1 --seed 4 --faults
// 'random=30,loss=0.05,delay=1ms..5ms' (and seed 7 with --guard): the highest
// id restarted its preempting round on every heartbeat of the lower leader (a
// new token replaced the one under way), and a round of 128 hops never
// finished within a 50 ms heartbeat interval: no leader after the heal.
TEST(election_liveness, ring_preempting_at_64_candidates_finishes_its_round) {
  for (auto [seed, guard] : {std::pair<uint64_t, bool>{4, false}, {7, true}}) {
    auto r = sim::run_simulation(settings(el::algorithm::ring, 64, found(64, seed), seed,
                                          guard, /*preempt=*/true));
    EXPECT_TRUE(r.liveness_ok) << "seed " << seed << "\n" << what_failed(r);
    EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
  }
}

// conclave sim --algorithm ring --nodes 16 --seed 106 --faults
// 'random=20,loss=0.3,dup=0.1,delay=1ms..20ms': under 30 % loss the hop
// timeouts grew to 170-490 ms, and a member in a round whose token died
// dropped every lower round for 2n hop timeouts (5-15 s): no round finished
// within the liveness bound. Extinction now lasts 2n measured round trips.
TEST(election_liveness, ring_under_heavy_loss_at_16_candidates_settles) {
  auto r = sim::run_simulation(settings(el::algorithm::ring, 16, found(16, 106), 106));
  EXPECT_TRUE(r.liveness_ok) << what_failed(r);
  EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
}

// The quorum guard at the default settings on a slow, lossy network: one-way
// delays of 100 ms (200 ms round trips, twice the fixed 100 ms lease) with 10 %
// loss and random faults. With a fixed lease every run failed (the leader
// acted in bursts at best and stepped down); the lease now follows the
// measured round trip (docs/design/election.md, "Adaptive lease").
// conclave sim --guard --nodes 5 --faults 'random=10,loss=0.1,delay=100ms' --runs 20
TEST(election_liveness, the_guard_settles_at_100ms_one_way_with_10_percent_loss) {
  for (auto algo : {el::algorithm::bully, el::algorithm::ring}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      auto r = sim::run_simulation(
          settings(algo, 5, "random=10,loss=0.1,delay=100ms", seed, /*guard=*/true));
      EXPECT_TRUE(r.liveness_ok) << el::to_string(algo) << " seed " << seed << "\n"
                                 << what_failed(r);
      EXPECT_EQ(r.safety_violations, 0u) << what_failed(r);
    }
  }
}
