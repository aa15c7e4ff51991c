// The HTTP server's worker pool (http_workers.hpp) on real loopback
// connections from distinct source addresses (127.0.0.2, .3 and .4 stand
// for other hosts): admission happens as a connection is handed over, so
// connections the gate refuses never take a place that a connection of
// another source would have been admitted to.
#include "runtime/node/http_workers.hpp"

#include "tests/support/loopback_http.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace conclave::node;
using namespace std::chrono_literals;

namespace {

/// A listener on 127.0.0.1 and the server ends of the connections made to it.
struct loopback_listener {
  int fd = -1;
  std::string address;

  loopback_listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0
        && ::listen(fd, 256) == 0
        && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  }
  ~loopback_listener() {
    if (fd >= 0)
      ::close(fd);
  }

  /// Connects from `from`; returns the server's end (-1 on failure). The
  /// client's end is kept in `clients`.
  int connect_from(const char* from, std::vector<int>& clients) {
    int c = conclave::testing::tcp_connect(address, from);
    if (c < 0)
      return -1;
    clients.push_back(c);
    return ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
  }
};

/// What the pool's closures saw, and a latch that holds every closure until
/// it opens (a worker held by a slow client; a refusal that is slow to end).
struct observed {
  std::mutex mtx;
  std::condition_variable cv;
  bool open = false;
  std::vector<std::pair<int, bool>> ran; ///< socket, admitted
  std::atomic<int> refused{0};

  std::function<void()> serve(int sock) {
    return [this, sock] {
      bool admitted = http_workers::current_ticket() != nullptr;
      std::unique_lock<std::mutex> lock{mtx};
      ran.emplace_back(sock, admitted);
      cv.notify_all();
      cv.wait(lock, [&] { return open; });
      lock.unlock();
      ::close(sock);
    };
  }
  /// Waits until `sock`'s closure runs; whether it was admitted (nullopt:
  /// not run within 5 s).
  std::optional<bool> admitted(int sock) {
    std::unique_lock<std::mutex> lock{mtx};
    std::optional<bool> r;
    cv.wait_for(lock, 5s, [&] {
      for (auto& [s, a] : ran)
        if (s == sock)
          r = a;
      return r.has_value();
    });
    return r;
  }
  void release() {
    std::lock_guard<std::mutex> g{mtx};
    open = true;
    cv.notify_all();
  }
};

http_workers::hooks hooks_for(std::shared_ptr<http_gate> gate, observed& seen) {
  return {std::move(gate), true, [&seen] { ++seen.refused; }};
}

/// A gate of `max_open` connections, one per source, whose deadline never
/// strikes within a test.
std::shared_ptr<http_gate> one_per_source(size_t max_open) {
  http_gate_limits limits;
  limits.max_open = max_open;
  limits.max_open_per_source = 1;
  limits.request_deadline = 60s;
  return std::make_shared<http_gate>(limits);
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds)
    ::close(fd);
}

} // namespace

TEST(http_workers, a_burst_one_source_may_not_open_leaves_the_others_their_places) {
  loopback_listener l;
  ASSERT_FALSE(l.address.empty());
  auto gate = one_per_source(3);
  observed seen;
  std::vector<int> clients;
  {
    http_workers pool{3, hooks_for(gate, seen)};
    // Two admitted connections hold two of the three workers.
    int a1 = l.connect_from("127.0.0.2", clients);
    int c1 = l.connect_from("127.0.0.4", clients);
    ASSERT_GE(a1, 0);
    ASSERT_GE(c1, 0);
    pool.enqueue(a1, seen.serve(a1));
    pool.enqueue(c1, seen.serve(c1));
    EXPECT_EQ(seen.admitted(a1), true);
    EXPECT_EQ(seen.admitted(c1), true);
    // A burst from the first source, over its share: refused, and slow to
    // be done with (the latch holds their closures too).
    std::vector<int> burst;
    for (int i = 0; i < 20; ++i) {
      int s = l.connect_from("127.0.0.2", clients);
      ASSERT_GE(s, 0);
      burst.push_back(s);
      pool.enqueue(s, seen.serve(s));
    }
    // A connection from a third source is within both bounds: admitted to
    // the last worker, not refused behind the burst.
    int b1 = l.connect_from("127.0.0.3", clients);
    ASSERT_GE(b1, 0);
    pool.enqueue(b1, seen.serve(b1));
    EXPECT_EQ(seen.admitted(b1), true);
    EXPECT_EQ(seen.admitted(burst.front()), false);
    EXPECT_EQ(seen.refused.load(), 1) << "the refusals run one at a time";
    EXPECT_EQ(gate->stats().open, 3u);
    seen.release();
    pool.shutdown();
  }
  EXPECT_EQ(seen.refused.load(), 20);
  EXPECT_EQ(seen.ran.size(), 23u);
  EXPECT_EQ(gate->stats().open, 0u) << "every admitted connection gave its place back";
  close_all(clients);
}

TEST(http_workers, a_refused_connection_is_shut_down_without_being_read) {
  loopback_listener l;
  ASSERT_FALSE(l.address.empty());
  auto gate = one_per_source(4);
  observed seen;
  seen.release(); // closures end at once
  std::vector<int> clients;
  std::atomic<int> held_open{0};
  {
    http_workers pool{4, hooks_for(gate, seen)};
    // The first connection holds its place until told.
    std::mutex m;
    std::condition_variable cv;
    bool go = false;
    int first = l.connect_from("127.0.0.2", clients);
    ASSERT_GE(first, 0);
    pool.enqueue(first, [&, first] {
      ++held_open;
      std::unique_lock<std::mutex> lock{m};
      cv.wait(lock, [&] { return go; });
      ::close(first);
    });
    int second = l.connect_from("127.0.0.2", clients);
    ASSERT_GE(second, 0);
    pool.enqueue(second, seen.serve(second));
    EXPECT_EQ(seen.admitted(second), false);
    // The client sees its connection end with nothing written to it.
    char buf[16];
    auto n = ::recv(clients.back(), buf, sizeof(buf), 0);
    EXPECT_EQ(n, 0) << "a TLS listener writes nothing to a refused connection";
    {
      std::lock_guard<std::mutex> g{m};
      go = true;
    }
    cv.notify_all();
    pool.shutdown();
  }
  EXPECT_EQ(held_open.load(), 1);
  EXPECT_EQ(seen.refused.load(), 1);
  EXPECT_EQ(gate->stats().refused, 1u);
  close_all(clients);
}

TEST(http_workers, without_a_known_socket_the_pools_own_bound_applies) {
  observed seen;
  std::vector<int> none;
  {
    // No gate can see these connections: at most two queued or served.
    http_workers pool{2, {nullptr, true, [&seen] { ++seen.refused; }}};
    std::atomic<int> ran{0};
    std::mutex m;
    std::condition_variable cv;
    bool go = false;
    for (int i = 0; i < 5; ++i)
      pool.enqueue(-1, [&] {
        std::unique_lock<std::mutex> lock{m};
        ++ran;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      });
    {
      // Both workers hold one; the three over the bound went to the
      // refusing thread, which holds the first of them.
      std::unique_lock<std::mutex> lock{m};
      EXPECT_TRUE(cv.wait_for(lock, 5s, [&] { return ran.load() == 3; }))
          << ran.load() << " running";
    }
    {
      std::lock_guard<std::mutex> g{m};
      go = true;
    }
    cv.notify_all();
    pool.shutdown();
    EXPECT_EQ(ran.load(), 5) << "every closure runs (and closes its socket)";
  }
  EXPECT_EQ(seen.refused.load(), 0) << "an unknown socket is not shut down";
}
