// One shell command run as a child process in its own process group, its
// stdout and stderr captured through one pipe: what the exec agent kind runs
// per try (builtin_agents.hpp).
//
// Threads: wait() blocks and is meant for one dedicated thread; kill() may be
// called from any thread, any number of times, before, during or after wait().
// kill() never signals a reused pid: until wait() has reaped the child, the
// child (at worst a zombie) still holds its pid and with it its process group id.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace conclave::agents {

class child_process {
public:
  /// How the command ended, and the end of what it wrote.
  struct result {
    /// The wait status (WIFEXITED, WEXITSTATUS, WIFSIGNALED, WTERMSIG).
    int status = 0;
    /// The exit could not be collected (someone else reaped the child, e.g.
    /// SIGCHLD ignored): `status` means nothing.
    bool lost = false;
    /// The last bytes of the combined output, cut at a UTF-8 character boundary.
    std::string output_tail;
  };

  /// Starts `/bin/sh -c command` in a new process group, stdin /dev/null, with
  /// the environment `env` ("NAME=value" each). On failure returns null and
  /// sets `error` to the reason.
  static std::shared_ptr<child_process> start(const std::string& command,
                                              const std::vector<std::string>& env,
                                              std::string& error);

  /// The calling process's environment with `extra` ("NAME=value" each) added;
  /// an entry of the environment with a name that `extra` sets is left out.
  static std::vector<std::string> environment_with(const std::vector<std::string>& extra);

  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// The child's pid, which is also its process group id.
  pid_t pid() const noexcept { return pid_; }

  /// Blocks: reads the output until it is closed (or until kill()), keeping
  /// the last `tail_bytes`, then waits for the child to exit and reaps it.
  /// Call once.
  result wait(size_t tail_bytes);

  /// Sends SIGKILL to the child's process group unless the child has been
  /// reaped, and makes a running wait() stop reading the output.
  void kill();

private:
  child_process(pid_t pid, int output_fd, int wake_read_fd, int wake_write_fd);

  pid_t pid_;
  int output_fd_;
  /// A pipe that kill() writes to, to wake wait() from poll().
  int wake_read_fd_;
  int wake_write_fd_;
  std::mutex mtx_;
  bool reaped_ = false;
};

} // namespace conclave::agents
