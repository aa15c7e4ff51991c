#include "runtime/lock/watchdog.hpp"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace conclave::lock {

namespace {

constexpr int watchdog_setup_failed = 70;

bool synchronous_fault(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL
         || sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS;
}

timespec until(clock::time_point deadline, clock::time_point now) {
  auto left = deadline <= now ? nanoseconds{0} : deadline - now;
  // Cap one wait at an hour: time_point::max() minus now does not fit timespec math.
  left = std::min<nanoseconds>(left, std::chrono::hours{1});
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(left.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(left.count() % 1'000'000'000);
  return ts;
}

[[noreturn]] void kill_group(pid_t pgid) {
  ::kill(-pgid, SIGKILL); // the watchdog is a member: this ends it too
  ::_exit(0);
}

// The watchdog process's body. Async-signal-safe calls only.
[[noreturn]] void watch(int fd, pid_t pgid, const lock_timing& timing,
                        clock::time_point safe_until) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && !synchronous_fault(sig))
      ::sigaction(sig, &ignore, nullptr); // fails harmlessly for glibc's reserved ones
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Only the socket and stderr stay open: not the runner's stdin and stdout
  // (a reader waiting for the end of a pipe), nor the lease client's sockets.
  ::close(STDIN_FILENO);
  ::close(STDOUT_FILENO);
  if (fd > STDERR_FILENO + 1)
    ::close_range(STDERR_FILENO + 1, static_cast<unsigned>(fd) - 1, 0);
  ::close_range(static_cast<unsigned>(fd) + 1, ~0U, 0);

  expiry_schedule schedule{timing, safe_until};
  for (;;) {
    auto now = clock::now();
    switch (schedule.due(now)) {
    case expiry_schedule::action::terminate:
      ::kill(-pgid, SIGTERM);
      break;
    case expiry_schedule::action::kill:
      kill_group(pgid);
    case expiry_schedule::action::none:
      break;
    }
    auto wait = until(schedule.next(), now);
    pollfd p{fd, POLLIN, 0};
    int ready = ::ppoll(&p, 1, &wait, nullptr);
    if (ready < 0 && errno != EINTR)
      kill_group(pgid);
    if (ready <= 0)
      continue;
    for (;;) {
      int64_t ns = 0;
      auto got = ::recv(fd, &ns, sizeof ns, MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      if (got < 0 && errno == EINTR)
        continue;
      if (got != static_cast<ssize_t>(sizeof ns))
        kill_group(pgid); // end of file (the runner is gone), an error, or garbage
      schedule.extend(clock::time_point{nanoseconds{ns}}, clock::now());
    }
  }
}

} // namespace

watchdog_link::watchdog_link(watchdog_link&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)) {}

watchdog_link& watchdog_link::operator=(watchdog_link&& other) noexcept {
  if (this != &other) {
    close();
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

watchdog_link::~watchdog_link() {
  close();
}

void watchdog_link::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

bool watchdog_link::tell(clock::time_point safe_until) const {
  int64_t ns =
      std::chrono::duration_cast<nanoseconds>(safe_until.time_since_epoch()).count();
  return fd_ >= 0
         && ::send(fd_, &ns, sizeof ns, MSG_NOSIGNAL | MSG_DONTWAIT)
                == static_cast<ssize_t>(sizeof ns);
}

outcome::result<watchdog_link, std::string>
start_watchdog(pid_t pgid, const lock_timing& timing, clock::time_point safe_until) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return std::string{"cannot create the watchdog's socket: "} + std::strerror(errno);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return std::string{"cannot fork the watchdog: "} + std::strerror(e);
  }
  if (pid == 0) {
    ::close(sv[0]);
    if (::setpgid(0, pgid) != 0)
      ::_exit(watchdog_setup_failed);
    watch(sv[1], pgid, timing, safe_until);
  }
  ::close(sv[1]);
  // Both sides call setpgid, so the watchdog is in the group once either returns.
  if (::setpgid(pid, pgid) != 0) {
    int e = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(sv[0]);
    return std::string{"cannot put the watchdog into CMD's process group: "}
           + std::strerror(e);
  }
  return watchdog_link{pid, sv[0]};
}

} // namespace conclave::lock
