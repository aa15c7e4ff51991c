// For a child just forked by the launcher: stdin from /dev/null, stdout and
// stderr appended to a log file. Only async-signal-safe calls (open, dup2), so
// it may run between fork() and exec().
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

namespace conclave::cluster {

/// Points the calling (child) process's stdio at `log` (created with `mode`)
/// and /dev/null. A file that cannot be opened leaves that stream as it was.
inline void redirect_child_stdio(const char* log, mode_t mode) {
  int fd = ::open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode);
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  if (in >= 0)
    ::dup2(in, 0);
}

} // namespace conclave::cluster
