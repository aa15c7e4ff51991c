// front_directory against a stand-in gate published on loopback by a second
// actor system in this process: connects to every member, reports the ones it
// cannot reach, follows a front that goes down to the next one, and refuses
// a gate of another cluster. Bounded waits on real sockets (127.0.0.1 only).
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
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    std::lock_guard<std::mutex> guard{script->mtx};
    caf::anon_send_exit(script->front, caf::exit_reason::user_shutdown);
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
