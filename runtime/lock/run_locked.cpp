#include "runtime/lock/run_locked.hpp"

#include "runtime/lock/duration_text.hpp"
#include "runtime/lock/watchdog.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace conclave::lock {

namespace {

using std::chrono::milliseconds;

constexpr const char* prefix = "conclave lock: ";

// -- CMD's path and environment, prepared before fork -------------------------

struct resolved_command {
  std::string path;
  int status = 0; // 0, lock_exit::not_found or lock_exit::cannot_execute
  std::string error;
};

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)
         && ::access(path.c_str(), X_OK) == 0;
}

// As execvp(3) would, but before fork: execvp may allocate, which a child of
// a threaded process must not.
resolved_command resolve_command(const std::string& name) {
  if (name.empty())
    return {"", lock_exit::not_found, "empty command name"};
  if (name.find('/') != std::string::npos) {
    if (executable_file(name))
      return {name, 0, ""};
    if (::access(name.c_str(), F_OK) != 0)
      return {"", lock_exit::not_found, name + ": " + std::strerror(errno)};
    return {"", lock_exit::cannot_execute, name + ": not an executable file"};
  }
  const char* env_path = std::getenv("PATH");
  std::string dirs = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  bool seen = false;
  size_t start = 0;
  for (;;) {
    auto colon = dirs.find(':', start);
    auto dir = dirs.substr(start, colon == std::string::npos ? std::string::npos
                                                             : colon - start);
    auto candidate = (dir.empty() ? std::string{"."} : dir) + "/" + name;
    if (executable_file(candidate))
      return {candidate, 0, ""};
    seen = seen || ::access(candidate.c_str(), F_OK) == 0;
    if (colon == std::string::npos)
      break;
    start = colon + 1;
  }
  if (seen)
    return {"", lock_exit::cannot_execute, name + ": not an executable file"};
  return {"", lock_exit::not_found, name + ": command not found"};
}

std::vector<std::string> child_environment(const std::string& name, uint64_t token) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry{*e};
    if (entry.rfind("CONCLAVE_LOCK_NAME=", 0) == 0
        || entry.rfind("CONCLAVE_LOCK_TOKEN=", 0) == 0)
      continue;
    env.emplace_back(entry);
  }
  env.push_back("CONCLAVE_LOCK_NAME=" + name);
  env.push_back("CONCLAVE_LOCK_TOKEN=" + std::to_string(token));
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// -- signals: a self-pipe that wakes the runner's poll ------------------------

int wake_write_fd = -1;

void on_signal(int sig) {
  int saved = errno;
  auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(wake_write_fd, &byte, 1);
  errno = saved;
}

/// SIGINT, SIGTERM and SIGCHLD write their number to a pipe for the time the
/// object lives; the previous handlers come back when it goes.
class signal_pipe {
public:
  signal_pipe() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      error_ = std::string{"cannot create a pipe: "} + std::strerror(errno);
      return;
    }
    wake_write_fd = fds_[1];
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    ::sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(signals_); ++i)
      ::sigaction(signals_[i], &sa, &previous_[i]);
  }
  ~signal_pipe() {
    if (fds_[0] < 0)
      return;
    for (size_t i = 0; i < std::size(signals_); ++i)
      ::sigaction(signals_[i], &previous_[i], nullptr);
    wake_write_fd = -1;
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  signal_pipe(const signal_pipe&) = delete;
  signal_pipe& operator=(const signal_pipe&) = delete;

  const std::string& error() const { return error_; }

  /// Waits until `deadline` or a signal; returns how many SIGINT/SIGTERM came.
  int wait(clock::time_point deadline) {
    auto now = clock::now();
    auto left = deadline <= now ? nanoseconds{0} : deadline - now;
    left = std::min<nanoseconds>(left, std::chrono::hours{1});
    timespec ts{static_cast<time_t>(left.count() / 1'000'000'000),
                static_cast<long>(left.count() % 1'000'000'000)};
    pollfd p{fds_[0], POLLIN, 0};
    ::ppoll(&p, 1, &ts, nullptr);
    int interrupts = 0;
    unsigned char buf[64];
    ssize_t n;
    while ((n = ::read(fds_[0], buf, sizeof buf)) > 0)
      for (ssize_t i = 0; i < n; ++i)
        interrupts += buf[i] == SIGINT || buf[i] == SIGTERM;
    return interrupts;
  }

private:
  static constexpr int signals_[] = {SIGINT, SIGTERM, SIGCHLD};
  int fds_[2] = {-1, -1};
  struct sigaction previous_[3]{};
  std::string error_;
};

// -- the last resort: a kernel timer that SIGKILLs the runner -----------------

/// If the runner has not SIGKILLed CMD's group itself by safe_until - margin/2
/// (it is stopped, stuck in a renewal past its budget, starved), the kernel
/// kills the runner, even a stopped one; PR_SET_PDEATHSIG then kills CMD and
/// the watchdog sees end of file. It matters most when the watchdog is
/// stopped or gone too: CMD itself still dies on time (its descendants wait
/// for the watchdog).
class self_kill_timer {
public:
  self_kill_timer() {
    sigevent sev{};
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGKILL;
    if (::timer_create(CLOCK_MONOTONIC, &sev, &id_) != 0)
      error_ = std::string{"no self-kill timer: "} + std::strerror(errno);
    else
      created_ = true;
  }
  ~self_kill_timer() {
    if (created_)
      ::timer_delete(id_);
  }
  self_kill_timer(const self_kill_timer&) = delete;
  self_kill_timer& operator=(const self_kill_timer&) = delete;

  const std::string& error() const { return error_; }

  void arm(clock::time_point at) {
    auto ns = std::chrono::duration_cast<nanoseconds>(at.time_since_epoch()).count();
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    its.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
      its.it_value.tv_nsec = 1; // zero would disarm
    if (created_)
      ::timer_settime(id_, TIMER_ABSTIME, &its, nullptr);
  }
  void disarm() {
    itimerspec its{};
    if (created_)
      ::timer_settime(id_, 0, &its, nullptr);
  }

private:
  timer_t id_{};
  bool created_ = false;
  std::string error_;
};

// -- CMD ------------------------------------------------------------------------

void write_all(int fd, const char* text) {
  size_t len = std::strlen(text);
  while (len > 0) {
    auto n = ::write(fd, text, len);
    if (n <= 0)
      return;
    text += n;
    len -= static_cast<size_t>(n);
  }
}

/// The child between fork and execve: async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t runner, int go_read, int go_write, const char* path,
                             char* const* argv, char* const* envp,
                             const char* exec_failed) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != runner) // the runner died before prctl took effect
    ::_exit(lock_exit::internal_error);
  // Default actions before the mask opens: a SIGTERM or SIGINT the runner
  // forwards before execve must end the child, not run the CLI's handler
  // (inherited across fork) and be lost, which left CMD running until the
  // grace's SIGKILL.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr); // a CLI may ignore it for its sockets
  ::sigaction(SIGTERM, &dfl, nullptr);
  ::sigaction(SIGINT, &dfl, nullptr);
  ::sigaction(SIGHUP, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::close(go_write);
  char go = 0;
  ssize_t n;
  while ((n = ::read(go_read, &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) // the runner gave up (or died) before the watchdog was in place
    ::_exit(lock_exit::internal_error);
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC); // nothing of the runner's leaks into CMD
  ::execve(path, argv, envp);
  int e = errno;
  write_all(STDERR_FILENO, exec_failed);
  ::_exit(e == ENOENT ? lock_exit::not_found : lock_exit::cannot_execute);
}

/// CMD's status as a shell reports it.
int shell_status(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED)
    return info.si_status;
  return 128 + info.si_status;
}

/// Whether `pid` (a child) has ended; its status in `info`. It stays a zombie.
bool ended(pid_t pid, siginfo_t& info) {
  info = siginfo_t{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0
         && info.si_pid == pid;
}

void reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// -- the run ------------------------------------------------------------------

enum class stop_reason { none, interrupted, lost, expired, watchdog_ended };

class runner {
public:
  runner(const lock_options& options, const lock_timing& timing, lease_session& lease,
         std::ostream& err, uint64_t token, clock::time_point safe_until)
      : options_(options), timing_(timing), lease_(lease), err_(err), token_(token),
        schedule_(timing, safe_until),
        next_renew_(safe_until - timing.ttl + timing.renew_interval) {}

  int run(const std::string& path, const std::vector<std::string>& argv,
          const run_hooks& hooks) {
    if (!signals_.error().empty())
      return fail_before_start(signals_.error());
    if (!timer_.error().empty())
      err_ << prefix << "warning: " << timer_.error() << std::endl;
    if (!start(path, argv, hooks))
      return lock_exit::internal_error;
    timer_.arm(timing_.self_kill_at(schedule_.safe_until()));
    siginfo_t status = supervise();
    return finish(status);
  }

private:
  int fail_before_start(const std::string& why) {
    err_ << prefix << why << std::endl;
    lease_.release(token_);
    return lock_exit::internal_error;
  }

  bool start(const std::string& path, const std::vector<std::string>& argv,
             const run_hooks& hooks) {
    auto args = argv;
    auto env = child_environment(options_.name, token_);
    auto arg_ptrs = pointers(args);
    auto env_ptrs = pointers(env);
    std::string exec_failed = std::string{prefix} + "cannot execute " + path + "\n";
    int go[2];
    if (::pipe2(go, O_CLOEXEC) != 0) {
      fail_before_start(std::string{"cannot create a pipe: "} + std::strerror(errno));
      return false;
    }
    pid_t self = ::getpid();
    cmd_ = ::fork();
    if (cmd_ < 0) {
      ::close(go[0]);
      ::close(go[1]);
      fail_before_start(std::string{"cannot fork: "} + std::strerror(errno));
      return false;
    }
    if (cmd_ == 0)
      exec_child(self, go[0], go[1], path.c_str(), arg_ptrs.data(), env_ptrs.data(),
                 exec_failed.c_str());
    ::close(go[0]);
    // Both sides call setpgid: the group exists once either has returned.
    std::string error;
    if (::setpgid(cmd_, cmd_) != 0)
      error = std::string{"cannot give CMD a process group: "} + std::strerror(errno);
    if (error.empty()) {
      auto w = start_watchdog(cmd_, timing_, schedule_.safe_until());
      if (w)
        watchdog_ = std::move(w.value());
      else
        error = w.error();
    }
    if (!error.empty()) {
      ::close(go[1]); // CMD reads end of file and exits without exec
      ::kill(cmd_, SIGKILL);
      reap(cmd_);
      fail_before_start(error);
      return false;
    }
    if (hooks.started)
      hooks.started(cmd_, watchdog_.pid());
    char byte = 'g';
    [[maybe_unused]] auto n = ::write(go[1], &byte, 1);
    ::close(go[1]);
    return true;
  }

  void signal_group(int sig) {
    ::kill(-cmd_, sig); // CMD is not reaped yet: the group id is still ours
  }

  void kill_group() {
    signal_group(SIGKILL);
    killed_ = true;
    timer_.disarm(); // the runner did it itself: no need to die for it
  }

  void begin_stop(stop_reason why, clock::time_point now) {
    if (reason_ != stop_reason::none)
      return;
    reason_ = why;
    if (timing_.grace <= nanoseconds{0}) {
      kill_group();
      return;
    }
    signal_group(SIGTERM);
    stop_kill_at_ =
        std::min(now + timing_.grace, timing_.kill_at(schedule_.safe_until()));
  }

  void renew_once() {
    auto sent = clock::now();
    auto budget = std::chrono::duration_cast<milliseconds>(
        timing_.renew_budget(sent, schedule_.safe_until()));
    if (budget < milliseconds{1}) {
      next_renew_ = clock::time_point::max(); // too late: the schedule stops CMD
      return;
    }
    auto outcome = lease_.renew(token_, budget);
    auto now = clock::now();
    switch (outcome) {
    case renew_outcome::ok:
      if (schedule_.extend(sent + timing_.ttl, now)) {
        watchdog_.tell(schedule_.safe_until());
        timer_.arm(timing_.self_kill_at(schedule_.safe_until()));
        next_renew_ = sent + timing_.renew_interval;
      } else {
        next_renew_ = clock::time_point::max(); // it came after the SIGTERM point
      }
      break;
    case renew_outcome::lost:
      begin_stop(stop_reason::lost, now);
      break;
    case renew_outcome::unknown:
      next_renew_ = now + timing_.retry_delay();
      break;
    }
  }

  /// Until CMD ends; returns its status (CMD stays a zombie).
  siginfo_t supervise() {
    siginfo_t info{};
    for (;;) {
      auto now = clock::now();
      switch (schedule_.due(now)) {
      case expiry_schedule::action::terminate:
        begin_stop(stop_reason::expired, now);
        break;
      case expiry_schedule::action::kill:
        if (reason_ == stop_reason::none)
          reason_ = stop_reason::expired;
        if (!killed_)
          kill_group();
        break;
      case expiry_schedule::action::none:
        break;
      }
      if (reason_ != stop_reason::none && !killed_ && now >= stop_kill_at_)
        kill_group();
      if (ended(cmd_, info))
        return info;
      siginfo_t wd;
      if (!watchdog_ended_ && ended(watchdog_.pid(), wd)) {
        watchdog_ended_ = true;
        begin_stop(stop_reason::watchdog_ended, now);
        continue;
      }
      if (reason_ == stop_reason::none && now >= next_renew_) {
        renew_once();
        continue;
      }
      auto deadline = schedule_.next();
      if (reason_ == stop_reason::none)
        deadline = std::min(deadline, next_renew_);
      else if (!killed_)
        deadline = std::min(deadline, stop_kill_at_);
      if (int interrupts = signals_.wait(deadline); interrupts > 0) {
        if (reason_ == stop_reason::none)
          begin_stop(stop_reason::interrupted, clock::now());
        else if (!killed_)
          kill_group(); // asked while already stopping CMD: no more grace
      }
    }
  }

  int finish(const siginfo_t& cmd_status) {
    // Whatever CMD left behind in its group goes now, before the lease does;
    // CMD, a zombie until reap(), keeps the group id from being reused.
    signal_group(SIGKILL);
    timer_.disarm();
    reap(cmd_);
    reap(watchdog_.pid()); // a member of the group: SIGKILLed above if not before
    watchdog_.close();
    wait_until_group_gone();
    lease_.release(token_);
    int status = shell_status(cmd_status);
    switch (reason_) {
    case stop_reason::none:
    case stop_reason::interrupted:
      return status;
    case stop_reason::lost:
      err_ << prefix << "lease '" << options_.name << "' was lost (token " << token_
           << " is no longer current); stopped CMD" << std::endl;
      return lock_exit::lease_lost;
    case stop_reason::expired:
      err_ << prefix << "lease '" << options_.name << "' could not be renewed within "
           << format_duration(timing_.renew_deadline())
           << "; stopped CMD before the lease could expire" << std::endl;
      return lock_exit::lease_lost;
    case stop_reason::watchdog_ended:
      err_ << prefix << "the watchdog process ended unexpectedly; stopped CMD"
           << std::endl;
      return lock_exit::internal_error;
    }
    return status;
  }

  /// Killed members of the group are reaped by their parents or by init; the
  /// lease is released once none is left (kill(-pgid, 0) fails with ESRCH), or
  /// once it would have expired anyway. Only probes: no signal is sent here,
  /// as the group id may be reused once empty.
  void wait_until_group_gone() {
    auto deadline =
        std::max(schedule_.safe_until(), clock::now() + std::chrono::seconds{1});
    while (::kill(-cmd_, 0) == 0 || errno == EPERM) {
      if (clock::now() >= deadline) {
        err_ << prefix << "warning: processes of CMD's group " << cmd_
             << " are still there; releasing the lease anyway, past its expiry"
             << std::endl;
        return;
      }
      signals_.wait(clock::now() + milliseconds{1});
    }
  }

  const lock_options& options_;
  const lock_timing timing_;
  lease_session& lease_;
  std::ostream& err_;
  const uint64_t token_;
  expiry_schedule schedule_;
  clock::time_point next_renew_;
  clock::time_point stop_kill_at_ = clock::time_point::max();
  signal_pipe signals_;
  self_kill_timer timer_;
  watchdog_link watchdog_;
  pid_t cmd_ = -1;
  stop_reason reason_ = stop_reason::none;
  bool killed_ = false;
  bool watchdog_ended_ = false;
};

} // namespace

int run_locked(const lock_options& options, lease_session& lease,
               const std::vector<std::string>& argv, std::ostream& err,
               const run_hooks& hooks) {
  auto timing = check_timing(options.timing);
  if (!timing) {
    err << prefix << timing.error() << std::endl;
    return lock_exit::usage;
  }
  if (argv.empty()) {
    err << prefix << "no command to run" << std::endl;
    return lock_exit::usage;
  }
  auto cmd = resolve_command(argv[0]);
  if (cmd.status != 0) {
    err << prefix << cmd.error << std::endl;
    return cmd.status;
  }
  const auto& t = timing.value();
  std::string error;
  auto sent = clock::now();
  auto token = lease.acquire(options.wait, error);
  if (!token) {
    err << prefix << "could not acquire lease '" << options.name << "': " << error
        << std::endl;
    return lock_exit::not_acquired;
  }
  // acquire() does not say when its winning request left; `sent` is only a
  // lower bound. After a long wait it is too old to count on: one renewal
  // gives a fresh send time before CMD may start.
  if (clock::now() >= sent + t.renew_interval) {
    sent = clock::now();
    auto outcome =
        lease.renew(*token, std::chrono::duration_cast<milliseconds>(t.renew_interval));
    if (outcome != renew_outcome::ok) {
      lease.release(*token);
      err << prefix << "lease '" << options.name
          << "' was granted but could not be confirmed after the wait" << std::endl;
      return lock_exit::not_acquired;
    }
  }
  runner r{options, t, lease, err, *token, sent + t.ttl};
  return r.run(cmd.path, argv, hooks);
}

} // namespace conclave::lock
