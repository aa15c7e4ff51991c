// Liveness connections (liveness_watch.hpp): the meaning of a read and the
// tickets without sockets; then, on loopback, that only an orderly close by the
// peer's kernel (FIN: the process ended) is reported as a proof, never a reset,
// a stranger without a ticket, or a stopped process.
#include "runtime/node/liveness_watch.hpp"

#include "runtime/node/peer_identity.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using namespace conclave::node;

TEST(liveness_read, only_end_of_file_is_a_proof) {
  EXPECT_EQ(classify_liveness_read(0, 0), liveness_read::proof);
  EXPECT_EQ(classify_liveness_read(-1, ECONNRESET), liveness_read::reset);
  EXPECT_EQ(classify_liveness_read(-1, ETIMEDOUT), liveness_read::reset);
  EXPECT_EQ(classify_liveness_read(-1, EHOSTUNREACH), liveness_read::reset);
  EXPECT_EQ(classify_liveness_read(-1, EAGAIN), liveness_read::nothing);
  EXPECT_EQ(classify_liveness_read(-1, EINTR), liveness_read::nothing);
  EXPECT_EQ(classify_liveness_read(3, 0), liveness_read::unexpected);
}

TEST(liveness_tickets, a_ticket_is_good_once_and_until_it_expires) {
  liveness_tickets t{1000ms};
  auto t0 = liveness_tickets::clock::time_point{} + 1h;
  t.issue("a", {2, 7}, t0);
  t.issue("b", {3, 8}, t0);
  auto h = t.redeem("a", t0 + 10ms);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->member, 2u);
  EXPECT_EQ(h->incarnation, 7u);
  EXPECT_FALSE(t.redeem("a", t0 + 10ms));   // used up
  EXPECT_FALSE(t.redeem("zzz", t0));        // never issued
  EXPECT_FALSE(t.redeem("b", t0 + 1000ms)); // expired
  t.issue("c", {4, 1}, t0 + 2s);            // drops what expired
  EXPECT_EQ(t.size(), 1u);
}

namespace {

/// Collects the proofs a watch reports.
struct proofs {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  liveness_watch::dead_fn fn() {
    return [this](uint64_t m, uint64_t i) {
      std::lock_guard<std::mutex> lock{mtx};
      seen.emplace_back(m, i);
      cv.notify_all();
    };
  }
  /// Waits up to `d` for `n` proofs.
  bool wait_for(size_t n, std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock{mtx};
    return cv.wait_for(lock, d, [&] { return seen.size() >= n; });
  }
  size_t count() {
    std::lock_guard<std::mutex> lock{mtx};
    return seen.size();
  }
};

std::unique_ptr<liveness_watch> start_watch(proofs& p) {
  std::string error;
  auto w = liveness_watch::start(
      "127.0.0.1", p.fn(), [](const std::string&) {}, error);
  EXPECT_TRUE(w) << error;
  return w;
}

/// A raw dialer: connects to `port`, sends `nonce`, returns the fd once the
/// accepting side sent its byte (-1 if it did not).
int raw_dial(uint16_t port, const std::string& nonce) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0
      || ::send(fd, nonce.data(), nonce.size(), 0)
             != static_cast<ssize_t>(nonce.size())) {
    ::close(fd);
    return -1;
  }
  char b = 0;
  if (::recv(fd, &b, 1, 0) != 1) {
    ::close(fd);
    return -1;
  }
  return fd;
}

} // namespace

TEST(liveness_watch, an_orderly_close_is_a_proof_a_reset_is_not) {
  proofs p;
  auto w = start_watch(p);
  ASSERT_TRUE(w);
  int reset = raw_dial(w->port(), w->issue(2, 7));
  ASSERT_GE(reset, 0);
  linger l{1, 0}; // close with a reset, as a middlebox's RST looks
  ::setsockopt(reset, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  ::close(reset);
  int fin = raw_dial(w->port(), w->issue(3, 9));
  ASSERT_GE(fin, 0);
  ::close(fin); // what the kernel does to a process's sockets when it ends
  ASSERT_TRUE(p.wait_for(1, 3000ms));
  EXPECT_FALSE(p.wait_for(2, 200ms));
  ASSERT_EQ(p.count(), 1u);
  EXPECT_EQ(p.seen[0], (std::pair<uint64_t, uint64_t>{3, 9}));
  EXPECT_EQ(w->proofs(), 1u);
}

TEST(liveness_watch, a_stranger_without_a_ticket_proves_nothing) {
  proofs p;
  auto w = start_watch(p);
  ASSERT_TRUE(w);
  w->issue(2, 7);
  EXPECT_LT(raw_dial(w->port(), std::string(nonce_size, 'x')), 0); // refused
  EXPECT_FALSE(p.wait_for(1, 200ms));
}

TEST(liveness_watch, two_watches_see_each_other_die_through_one_connection) {
  proofs pa, pb;
  auto a = start_watch(pa);
  auto b = start_watch(pb);
  ASSERT_TRUE(a && b);
  // b (member 1, incarnation 5) dials a (member 2, incarnation 9).
  b->dial("127.0.0.1", a->port(), a->issue(1, 5), 2, 9);
  // b counts the connection as soon as it opens it; a once it took the ticket.
  for (int i = 0; i < 300 && !a->watching(1, 5); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(a->watching(1, 5));
  // b ends only after a's byte arrived: a dialer still waiting for it keeps
  // the connection open, which proves nothing (by design).
  for (int i = 0; i < 300 && !b->confirmed(2, 9); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(b->confirmed(2, 9));
  b->dial("127.0.0.1", a->port(), a->issue(1, 5), 2, 9); // once per incarnation
  b.reset();                                             // b's node ends: a learns of it
  ASSERT_TRUE(pa.wait_for(1, 3000ms));
  EXPECT_EQ(pa.seen[0], (std::pair<uint64_t, uint64_t>{1, 5}));
  EXPECT_FALSE(pa.wait_for(2, 100ms));
}

// The process test: a child that holds a liveness connection is stopped
// (SIGSTOP: no proof), then killed (SIGKILL: its kernel closes the connection,
// a proof). Bounded: a few seconds at most; the child is reaped.
TEST(liveness_watch, a_killed_process_is_proven_dead_a_stopped_one_is_not) {
  proofs p;
  auto w = start_watch(p);
  ASSERT_TRUE(w);
  auto nonce = w->issue(4, 11);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = raw_dial(w->port(), nonce);
    char ok = fd >= 0 ? 1 : 0;
    [[maybe_unused]] auto n = ::write(ready[1], &ok, 1);
    for (;;)
      ::pause();
  }
  ::close(ready[1]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(ok, 1);
  ::kill(child, SIGSTOP);
  EXPECT_FALSE(p.wait_for(1, 300ms));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(p.wait_for(1, 3000ms));
  EXPECT_EQ(p.seen[0], (std::pair<uint64_t, uint64_t>{4, 11}));
}

// An accepting side too slow to answer its byte within the opening timeout
// may still take the nonce and watch: the dialer must not close the
// connection then (the other end would read this live node's "death").
TEST(liveness_watch, a_dialer_whose_answer_is_late_keeps_the_connection_open) {
  proofs p;
  auto w = start_watch(p);
  ASSERT_TRUE(w);
  int l = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(l, 4), 0);
  socklen_t len = sizeof(a);
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  w->dial("127.0.0.1", ntohs(a.sin_port), std::string(nonce_size, 'n'), 7, 3);
  pollfd lp{l, POLLIN, 0};
  ASSERT_EQ(::poll(&lp, 1, 2000), 1);
  int s = ::accept(l, nullptr, nullptr);
  ASSERT_GE(s, 0);
  std::string got;
  while (got.size() < nonce_size) {
    pollfd sp{s, POLLIN, 0};
    ASSERT_EQ(::poll(&sp, 1, 2000), 1);
    char buf[nonce_size];
    auto n = ::recv(s, buf, nonce_size - got.size(), 0);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  // No byte back: the dialer's 3 s opening deadline passes. Nothing may
  // arrive here, end of file least of all.
  pollfd sp{s, POLLIN, 0};
  EXPECT_EQ(::poll(&sp, 1, 3800), 0);
  EXPECT_TRUE(w->watching(7, 3)); // and it is not dialed again
  ::close(s);
  ::close(l);
}
