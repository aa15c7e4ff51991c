#include "runtime/agents/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace conclave::agents {

namespace {

/// Closes a file descriptor, ignoring EINTR (Linux closes it anyway).
void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

std::string name_of(const std::string& entry) {
  return entry.substr(0, entry.find('='));
}

/// Keeps the last `n` bytes of `s`.
void keep_tail(std::string& s, size_t n) {
  if (s.size() > n)
    s.erase(0, s.size() - n);
}

/// Drops leading UTF-8 continuation bytes (at most 3, the rest of one cut
/// character) so that `s` starts at a character boundary.
void cut_at_character(std::string& s) {
  size_t i = 0;
  while (i < s.size() && i < 3 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80)
    ++i;
  s.erase(0, i);
}

} // namespace

std::vector<std::string>
child_process::environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  std::vector<std::string> names;
  names.reserve(extra.size());
  for (auto& e : extra)
    names.push_back(name_of(e));
  for (char** p = environ; p && *p; ++p) {
    std::string entry{*p};
    auto n = name_of(entry);
    bool overridden = false;
    for (auto& x : names)
      overridden = overridden || x == n;
    if (!overridden)
      out.push_back(std::move(entry));
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::shared_ptr<child_process> child_process::start(const std::string& command,
                                                    const std::vector<std::string>& env,
                                                    std::string& error) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    error = std::string{"pipe: "} + std::strerror(errno);
    return nullptr;
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    error = std::string{"pipe: "} + std::strerror(errno);
    ::close(out[0]);
    ::close(out[1]);
    return nullptr;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Nothing else of the node's (sockets, files without O_CLOEXEC) leaks into
  // the command.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group (pgid = its pid), so that kill() reaches the
  // processes the command starts; default signal dispositions and an empty
  // mask, whatever the node ignores or blocks (SIGPIPE).
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK
                                      | POSIX_SPAWN_SETSIGDEF);
  std::string sh = "sh", dash_c = "-c";
  std::string cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  std::vector<std::string> env_copy = env;
  std::vector<char*> envp;
  envp.reserve(env_copy.size() + 1);
  for (auto& e : env_copy)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  if (rc != 0) {
    error = std::string{"posix_spawn: "} + std::strerror(rc);
    ::close(out[0]);
    ::close(wake[0]);
    ::close(wake[1]);
    return nullptr;
  }
  return std::shared_ptr<child_process>{new child_process(pid, out[0], wake[0], wake[1])};
}

child_process::child_process(pid_t pid, int output_fd, int wake_read_fd,
                             int wake_write_fd)
    : pid_(pid), output_fd_(output_fd), wake_read_fd_(wake_read_fd),
      wake_write_fd_(wake_write_fd) {
  // Nothing to do.
}

child_process::~child_process() {
  // Never reaped (wait() was not called): do not leave the group running, nor
  // a zombie behind.
  bool reaped;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    reaped = reaped_;
  }
  if (!reaped) {
    ::killpg(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      // again
    }
  }
  close_fd(output_fd_);
  close_fd(wake_read_fd_);
  close_fd(wake_write_fd_);
}

child_process::result child_process::wait(size_t tail_bytes) {
  result r;
  char buf[8192];
  // Read until the output is closed or kill() wakes us. The tail is trimmed
  // only when it has grown to twice its size, to keep erasing cheap.
  for (;;) {
    pollfd fds[2] = {{output_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (fds[1].revents != 0)
      break;
    if (fds[0].revents == 0)
      continue;
    auto got = ::read(output_fd_, buf, sizeof(buf));
    if (got > 0) {
      r.output_tail.append(buf, static_cast<size_t>(got));
      if (r.output_tail.size() > 2 * tail_bytes + sizeof(buf))
        keep_tail(r.output_tail, tail_bytes);
      continue;
    }
    if (got == 0 || (errno != EINTR && errno != EAGAIN))
      break;
  }
  close_fd(output_fd_);
  keep_tail(r.output_tail, tail_bytes);
  cut_at_character(r.output_tail);
  // Wait for the exit without reaping: kill() may still signal the group
  // meanwhile, its id cannot be reused before the child is reaped.
  siginfo_t info;
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0
         && errno == EINTR) {
    // again
  }
  {
    std::lock_guard<std::mutex> guard{mtx_};
    reaped_ = true;
  }
  int status = 0;
  pid_t got = -1;
  while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    // again
  }
  r.status = status;
  r.lost = got != pid_;
  return r;
}

void child_process::kill() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!reaped_)
    ::killpg(pid_, SIGKILL);
  char one = 1;
  [[maybe_unused]] auto n = ::write(wake_write_fd_, &one, 1);
}

} // namespace conclave::agents
