#include "protocols/election/detector.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
namespace el = conclave::election;

TEST(detector, fixed_timeout_suspects_exactly_after_the_timeout) {
  el::detector_config cfg;
  cfg.kind = el::detector_kind::fixed;
  cfg.timeout = 150ms;
  el::failure_detector d(cfg, 50ms);
  d.reset(el::timestamp{0});
  d.heartbeat(el::timestamp{40ms});
  EXPECT_EQ(d.suspect_at(), el::timestamp{190ms});
  EXPECT_FALSE(d.suspected(el::timestamp{189ms}));
  EXPECT_TRUE(d.suspected(el::timestamp{190ms}));
}

TEST(detector, a_late_heartbeat_makes_the_peer_trusted_again) {
  el::detector_config cfg;
  el::failure_detector d(cfg, 50ms);
  d.reset(el::timestamp{0});
  EXPECT_TRUE(d.suspected(el::timestamp{500ms}));
  d.heartbeat(el::timestamp{500ms});
  EXPECT_FALSE(d.suspected(el::timestamp{501ms}));
}

TEST(detector, phi_threshold_maps_to_the_normal_upper_tail) {
  // P(Z > 5.612) ≈ 1e-8 and P(Z > 1.2816) ≈ 0.1 for a standard normal Z.
  EXPECT_NEAR(el::phi_threshold_to_sigmas(8.0), 5.612, 0.01);
  EXPECT_NEAR(el::phi_threshold_to_sigmas(1.0), 1.2816, 0.001);
}

TEST(detector, phi_grows_with_silence) {
  el::detector_config cfg;
  cfg.kind = el::detector_kind::phi;
  cfg.timeout = 10ms;
  el::failure_detector d(cfg, 50ms);
  d.reset(el::timestamp{0});
  for (int i = 1; i <= 20; ++i)
    d.heartbeat(el::timestamp{i * 50ms + (i % 2 ? 3ms : -3ms)});
  auto last = d.last_heartbeat();
  double prev = -1;
  for (auto dt : {10ms, 50ms, 60ms, 80ms, 120ms}) {
    double phi = d.phi(last + dt);
    EXPECT_GT(phi, prev) << dt.count();
    prev = phi;
  }
  EXPECT_GE(d.phi(d.suspect_at()), cfg.phi_threshold - 0.01);
  EXPECT_LT(d.phi(d.suspect_at() - 1ms), cfg.phi_threshold);
}

TEST(detector, phi_waits_longer_for_a_jittery_peer) {
  el::detector_config cfg;
  cfg.kind = el::detector_kind::phi;
  cfg.timeout = 10ms;
  cfg.min_std_dev = 1ms;
  el::failure_detector steady(cfg, 50ms), jittery(cfg, 50ms);
  steady.reset(el::timestamp{0});
  jittery.reset(el::timestamp{0});
  el::timestamp t1{0}, t2{0};
  for (int i = 0; i < 40; ++i) {
    t1 += 50ms;
    t2 += (i % 2 ? 20ms : 80ms);
    steady.heartbeat(t1);
    jittery.heartbeat(t2);
  }
  EXPECT_GT(jittery.suspect_at() - jittery.last_heartbeat(),
            steady.suspect_at() - steady.last_heartbeat());
}

TEST(detector, phi_never_suspects_before_its_minimum_timeout) {
  el::detector_config cfg;
  cfg.kind = el::detector_kind::phi;
  cfg.timeout = 200ms;
  el::failure_detector d(cfg, 10ms);
  d.reset(el::timestamp{0});
  for (int i = 1; i <= 10; ++i)
    d.heartbeat(el::timestamp{i * 10ms});
  EXPECT_EQ(d.suspect_at(), el::timestamp{100ms + 200ms});
}
