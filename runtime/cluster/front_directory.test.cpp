// front_directory against stand-in gates published on loopback by a second
// actor system in this process: connects to every member, reports the ones it
// cannot reach, follows a front that goes down to the next one, and refuses
// a gate of another cluster. With a first member to dial: only that one is
// dialed while it serves as the primary, and the others once it fails, stays
// silent, names another primary, or a lookup asks for them. Bounded waits on
// real sockets (127.0.0.1 only).
#include "runtime/cluster/front_directory.hpp"

#include "runtime/cluster/client_connect.hpp"
#include "runtime/node/gate_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
namespace cl = conclave::cluster;
namespace nd = conclave::node;

namespace {

/// What the stand-in gate hands out; the test swaps the front.
struct gate_script {
  std::mutex mtx;
  caf::actor front;
  uint64_t primary = 0;
  int client_hellos = 0;
};

nd::gate_actor::behavior_type stand_in_gate(nd::gate_actor::pointer,
                                            std::shared_ptr<gate_script> script) {
  return {
      [](nd::challenge_atom, const std::string&, uint64_t, const std::string&) {
        return std::make_tuple(std::string{"unsupported"}, std::string{}, std::string{},
                               std::string{}, std::string{});
      },
      [](nd::hello_atom, const std::string&, uint64_t, const caf::actor&,
         const std::string&, const std::string&, const std::string&) {
        return std::make_tuple(std::string{}, uint64_t{0}, caf::actor{},
                               std::string{"unsupported"});
      },
      [](nd::replica_hello_atom, const std::string&, uint64_t, const caf::actor&) {
        return std::make_tuple(caf::actor{}, std::string{"unsupported"});
      },
      [](nd::liveness_atom, const std::string&, uint64_t, uint64_t) {
        return std::make_tuple(uint64_t{0}, std::string{}, uint64_t{0},
                               std::string{"off"});
      },
      [](nd::link_check_atom, const std::string&, uint64_t, const caf::actor&) {
        return false;
      },
      [script](nd::client_hello_atom, const std::string& cluster) {
        std::lock_guard<std::mutex> guard{script->mtx};
        ++script->client_hellos;
        if (cluster != "c1")
          return std::make_tuple(caf::actor{}, uint64_t{1}, uint64_t{0}, std::string{},
                                 std::string{"wrong_cluster"});
        return std::make_tuple(script->front, uint64_t{1}, script->primary, std::string{},
                               std::string{});
      },
  };
}

caf::behavior idle_front() {
  return {[](int x) { return x; }};
}

/// A loopback socket that listens but never accepts: the kernel completes
/// the TCP handshake, nothing ever answers (a frozen member). Closed by the
/// destructor.
struct silent_listener {
  int fd = -1;
  uint16_t port = 0;
  silent_listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 8);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~silent_listener() { ::close(fd); }
};

/// A loopback port nothing listens on (bound, then closed).
uint16_t closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct configured : caf::actor_system_config {
  configured() { cl::configure_client(*this, "", "", ""); }
};

class front_directory_test : public ::testing::Test {
protected:
  front_directory_test() : server_sys(server_cfg), client_sys(client_cfg) {
    script = std::make_shared<gate_script>();
    script->front = server_sys.spawn(idle_front);
    script->primary = 1;
    gate = server_sys.spawn(stand_in_gate, script);
    auto port = server_sys.middleman().publish(gate, 0, "127.0.0.1");
    EXPECT_TRUE(port) << server_sys.render(port.error());
    gate_port = port ? *port : 0;
  }

  ~front_directory_test() override {
    for (auto& g : extras) {
      caf::anon_send_exit(g.gate, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(g.script->front, caf::exit_reason::user_shutdown);
    }
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    std::lock_guard<std::mutex> guard{script->mtx};
    caf::anon_send_exit(script->front, caf::exit_reason::user_shutdown);
  }

  /// Another member's stand-in gate (its own script, naming `primary`).
  struct extra_gate {
    std::shared_ptr<gate_script> script;
    nd::gate_actor gate;
    uint16_t port = 0;
    int hellos() {
      std::lock_guard<std::mutex> guard{script->mtx};
      return script->client_hellos;
    }
  };
  extra_gate publish_gate(uint64_t primary) {
    extra_gate g;
    g.script = std::make_shared<gate_script>();
    g.script->front = server_sys.spawn(idle_front);
    g.script->primary = primary;
    g.gate = server_sys.spawn(stand_in_gate, g.script);
    auto port = server_sys.middleman().publish(g.gate, 0, "127.0.0.1");
    EXPECT_TRUE(port) << server_sys.render(port.error());
    g.port = port ? *port : 0;
    extras.push_back(g);
    return g;
  }

  int hellos() {
    std::lock_guard<std::mutex> guard{script->mtx};
    return script->client_hellos;
  }

  cl::front_directory_options options(std::string cluster) {
    cl::front_directory_options o;
    o.cluster = std::move(cluster);
    o.members[1] = nd::address{"127.0.0.1", gate_port};
    o.step_timeout = 2000ms;
    o.retry_first = 10ms;
    o.retry_max = 50ms;
    return o;
  }

  /// Polls `pred` every 5 ms for at most `limit`.
  template <class Pred>
  static bool eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
    for (auto end = std::chrono::steady_clock::now() + limit;
         std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(5ms))
      if (pred())
        return true;
    return pred();
  }

  configured server_cfg;
  configured client_cfg;
  caf::actor_system server_sys;
  caf::actor_system client_sys;
  std::shared_ptr<gate_script> script;
  nd::gate_actor gate;
  uint16_t gate_port = 0;
  std::vector<extra_gate> extras;
};

} // namespace

TEST_F(front_directory_test, connects_to_the_reachable_members_and_names_the_others) {
  auto o = options("c1");
  o.members[2] = nd::address{"127.0.0.1", closed_port()};
  cl::front_directory dir{client_sys, o};
  // Both first attempts end (one connected, one refused by the kernel).
  EXPECT_EQ(dir.wait_connected(2, 5000ms), 1u);
  EXPECT_TRUE(dir.lookup(1));
  EXPECT_FALSE(dir.lookup(2));
  EXPECT_FALSE(dir.lookup(3)); // not a member
  EXPECT_EQ(dir.primary_hint(), 1u);
  EXPECT_NE(dir.last_error().find("node 2"), std::string::npos) << dir.last_error();
}

TEST_F(front_directory_test, a_front_that_goes_down_is_replaced_by_the_next_one) {
  cl::front_directory dir{client_sys, options("c1")};
  ASSERT_EQ(dir.wait_connected(1, 5000ms), 1u);
  auto first = dir.lookup(1);
  ASSERT_TRUE(first);
  // The node's replica front dies; the gate hands out a new one.
  caf::actor old;
  {
    std::lock_guard<std::mutex> guard{script->mtx};
    old = script->front;
    script->front = server_sys.spawn(idle_front);
  }
  caf::anon_send_exit(old, caf::exit_reason::kill);
  EXPECT_TRUE(eventually([&] {
    auto now = dir.lookup(1);
    return now && now != first;
  })) << dir.last_error();
}

TEST_F(front_directory_test, a_gate_of_another_cluster_is_refused_and_retried) {
  cl::front_directory dir{client_sys, options("c2")};
  EXPECT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> guard{script->mtx};
    return script->client_hellos >= 3; // asked again after each refusal
  })) << dir.last_error();
  EXPECT_FALSE(dir.lookup(1));
  EXPECT_EQ(dir.wait_connected(1, 50ms), 0u);
  EXPECT_NE(dir.last_error().find("refused: wrong_cluster"), std::string::npos)
      << dir.last_error();
}

// Members 2 and 3 below are stand-in gates too; the test's own gate (member
// 1) names member 1 as the primary unless a test changes its script.

TEST_F(front_directory_test, the_first_member_alone_is_dialed_while_it_is_the_primary) {
  auto o = options("c1");
  auto g2 = publish_gate(1), g3 = publish_gate(1);
  o.members[2] = nd::address{"127.0.0.1", g2.port};
  o.members[3] = nd::address{"127.0.0.1", g3.port};
  o.first = 1;
  o.spread_after = 10000ms; // never, within this test
  cl::front_directory dir{client_sys, o};
  EXPECT_EQ(dir.wait_ready(5000ms), 1u);
  EXPECT_TRUE(dir.lookup(1));
  EXPECT_EQ(dir.primary_hint(), 1u);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(dir.dialed(2));
  EXPECT_FALSE(dir.dialed(3));
  EXPECT_EQ(g2.hellos() + g3.hellos(), 0);
  // The client library asks for member 3 (a not_primary hint, say): it is
  // dialed then, and joins.
  EXPECT_FALSE(dir.lookup(3));
  EXPECT_TRUE(eventually([&] { return static_cast<bool>(dir.lookup(3)); }))
      << dir.last_error();
  EXPECT_EQ(g3.hellos(), 1);
  EXPECT_FALSE(dir.dialed(2));
}

TEST_F(front_directory_test, a_first_member_naming_another_primary_gets_that_one_dialed) {
  auto o = options("c1");
  auto g2 = publish_gate(2), g3 = publish_gate(2);
  {
    std::lock_guard<std::mutex> guard{script->mtx};
    script->primary = 2; // member 1 is a secondary now
  }
  o.members[2] = nd::address{"127.0.0.1", g2.port};
  o.members[3] = nd::address{"127.0.0.1", g3.port};
  o.first = 1;
  o.spread_after = 10000ms;
  cl::front_directory dir{client_sys, o};
  // Ready once the primary member 1 named is connected.
  EXPECT_EQ(dir.wait_ready(5000ms), 2u);
  EXPECT_TRUE(dir.lookup(2));
  EXPECT_EQ(dir.primary_hint(), 2u);
  EXPECT_EQ(hellos(), 1);
  EXPECT_FALSE(dir.dialed(3));
}

TEST_F(front_directory_test,
       a_first_member_that_refuses_the_connection_brings_the_others_at_once) {
  auto o = options("c1");
  o.members[2] = nd::address{"127.0.0.1", closed_port()};
  o.first = 2;
  o.spread_after = 10000ms;
  cl::front_directory dir{client_sys, o};
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(dir.wait_ready(5000ms), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2000ms);
  EXPECT_TRUE(dir.lookup(1));
}

TEST_F(front_directory_test, a_silent_first_member_brings_the_others_after_spread_after) {
  silent_listener frozen;
  auto o = options("c1");
  o.members[2] = nd::address{"127.0.0.1", frozen.port};
  o.first = 2;
  o.spread_after = 100ms;
  cl::front_directory dir{client_sys, o};
  auto t0 = std::chrono::steady_clock::now();
  // Member 1 (the primary its gate names) joins after about 100 ms, long
  // before member 2's connect step (2 s) ends.
  EXPECT_TRUE(dir.wait_for(1, 1500ms));
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 90ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_EQ(dir.wait_ready(1000ms), 1u);
  EXPECT_FALSE(dir.lookup(2));
}

TEST_F(front_directory_test, a_first_member_outside_the_members_means_every_member) {
  auto o = options("c1");
  auto g2 = publish_gate(1);
  o.members[2] = nd::address{"127.0.0.1", g2.port};
  o.first = 9;
  o.spread_after = 10000ms;
  cl::front_directory dir{client_sys, o};
  EXPECT_EQ(dir.wait_connected(2, 5000ms), 2u);
}
