#include "runtime/node/os_priority.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>

namespace conclave::node {

namespace {

bool autogroups_on() {
  std::ifstream in{"/proc/sys/kernel/sched_autogroup_enabled"};
  int on = 0;
  return in >> on && on != 0;
}

/// Writes `nice` to the autogroup file; "" or why not.
std::string set_autogroup_nice(int nice, const std::string& file) {
  std::ofstream out{file};
  if (!out)
    return "cannot open " + file;
  out << nice << '\n';
  out.flush();
  if (!out)
    return "writing " + file + " was refused (" + std::strerror(errno) + ")";
  return {};
}

} // namespace

int current_nice() {
  errno = 0;
  return ::getpriority(PRIO_PROCESS, 0);
}

nice_result apply_nice(int nice, bool all_threads, const std::string& autogroup_file) {
  if (nice == 0)
    return {true, {}};
  // PRIO_PROCESS with 0 is the calling thread on Linux: threads started
  // afterwards inherit its value.
  if (::setpriority(PRIO_PROCESS, 0, nice) != 0)
    return {false, "could not set nice " + std::to_string(nice) + " ("
                       + std::strerror(errno)
                       + (nice < 0 ? "; a negative value needs CAP_SYS_NICE" : "")
                       + "): the node runs at the priority it was started with"};
  std::string what = "this thread runs at nice " + std::to_string(nice);
  if (all_threads) {
    // Threads started before (an embedding program's, a library's), and so
    // the threads they start.
    size_t missed = 0;
    std::error_code ec;
    for (auto& t : std::filesystem::directory_iterator{"/proc/self/task", ec}) {
      auto tid = std::strtol(t.path().filename().c_str(), nullptr, 10);
      if (tid > 0 && ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) != 0)
        ++missed;
    }
    what = "threads run at nice " + std::to_string(nice);
    if (missed > 0)
      what += " (" + std::to_string(missed) + " ended or refused)";
  }
  if (::getsid(0) != ::getpid() || !autogroups_on())
    return {true, what};
  if (auto problem = set_autogroup_nice(nice, autogroup_file); !problem.empty())
    return {false, what + ", but not its session's autogroup (" + problem
                       + "): other sessions still weigh as much as this node"};
  return {true, what + ", and so does its session's autogroup"};
}

} // namespace conclave::node
