#include "runtime/node/sched_slice.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace conclave::node {

namespace {

/// The kernel's struct sched_attr (glibc 2.36 has no wrapper).
struct sched_attr_v1 {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

bool get_attr(sched_attr_v1& a) {
  std::memset(&a, 0, sizeof(a));
  return ::syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) == 0;
}

} // namespace

std::string request_cpu_slice(std::chrono::microseconds slice) {
  if (slice < std::chrono::microseconds{100}
      || slice > std::chrono::microseconds{100'000})
    return "slice out of range (100 us to 100 ms)"; // the kernel would clamp it
  sched_attr_v1 a;
  if (!get_attr(a))
    return std::string{"sched_getattr: "} + std::strerror(errno);
  if (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH)
    return "not an ordinary (SCHED_OTHER) thread";
  a.size = sizeof(a);
  a.sched_flags = 0;
  a.sched_runtime = static_cast<uint64_t>(slice.count()) * 1000u;
  if (::syscall(SYS_sched_setattr, 0, &a, 0) != 0)
    return std::string{"sched_setattr: "} + std::strerror(errno);
  if (current_cpu_slice() != slice)
    return "the kernel keeps its own slice (before Linux 6.12)";
  return {};
}

std::chrono::microseconds current_cpu_slice() {
  sched_attr_v1 a;
  if (!get_attr(a))
    return std::chrono::microseconds{0};
  return std::chrono::microseconds{static_cast<int64_t>(a.sched_runtime / 1000u)};
}

} // namespace conclave::node
