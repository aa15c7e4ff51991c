// lock_probe_child: the command a lock runs in the lock scenario
// (scripts/lock-scenario.sh). It stands for "the work protected by the lock"
// and leaves a trace another program can check (lock_history_check):
//
//   lock_probe_child --token-env VAR --out FILE --duration-ms N
//                    [--interval-ms 5] [--label L]
//   lock_probe_child --print-clock     prints CLOCK_MONOTONIC in ns (the
//                                      driver stamps its fault log with it)
//
// reads its fencing token from the environment variable VAR
// (CONCLAVE_LOCK_TOKEN for `conclave lock`, ETCD_LOCK_REV for `etcdctl lock`),
// then appends to FILE (O_APPEND, one write() per line, so the lines of
// concurrent probes never interleave):
//
//   start TOKEN T LABEL PID PPID     once, first
//   alive TOKEN T LABEL PID PPID     every interval
//   end   TOKEN T LABEL PID PPID     once, after N ms, then exits 0
//
// T is CLOCK_MONOTONIC in nanoseconds (one clock for every process of the
// machine). LABEL names the lock loop that started it (the driver maps it to the
// lock client's pid), PPID is the process that started it. The probe is meant
// to be killed by any signal at any time: its last line is then the last
// moment it is known to have run. No CAF, no library: it must start fast.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace {

int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until_ns(int64_t deadline) {
  timespec ts{};
  ts.tv_sec = deadline / 1'000'000'000;
  ts.tv_nsec = deadline % 1'000'000'000;
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

bool parse_u64(const char* s, uint64_t& out) {
  if (s == nullptr || *s == '\0')
    return false;
  errno = 0;
  char* end = nullptr;
  auto v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || *s == '-')
    return false;
  out = v;
  return true;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "lock_probe_child: %s\nusage: lock_probe_child --token-env VAR --out FILE "
               "--duration-ms N [--interval-ms 5] [--label L]\n",
               why);
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--print-clock") {
    std::printf("%lld\n", static_cast<long long>(monotonic_ns()));
    return 0;
  }
  const char* token_env = nullptr;
  const char* out = nullptr;
  const char* label = "-";
  uint64_t duration_ms = 0, interval_ms = 5;
  bool have_duration = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc)
      return usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    if (a == "--token-env")
      token_env = v;
    else if (a == "--out")
      out = v;
    else if (a == "--label")
      label = v;
    else if (a == "--duration-ms")
      have_duration = parse_u64(v, duration_ms);
    else if (a == "--interval-ms") {
      if (!parse_u64(v, interval_ms) || interval_ms == 0)
        return usage("--interval-ms: expected a number >= 1");
    } else
      return usage(("unknown option " + a).c_str());
  }
  if (token_env == nullptr || out == nullptr || !have_duration)
    return usage("--token-env, --out and --duration-ms are required");
  uint64_t token = 0;
  if (!parse_u64(std::getenv(token_env), token)) {
    std::fprintf(stderr, "lock_probe_child: %s is not set to a token (a number)\n",
                 token_env);
    return 2;
  }
  int fd = ::open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "lock_probe_child: %s: %s\n", out, std::strerror(errno));
    return 2;
  }
  auto pid = long(::getpid()), ppid = long(::getppid());
  auto emit = [&](const char* kind) {
    char line[256];
    int n = std::snprintf(line, sizeof line, "%s %llu %lld %s %ld %ld\n", kind,
                          static_cast<unsigned long long>(token),
                          static_cast<long long>(monotonic_ns()), label, pid, ppid);
    if (n <= 0 || size_t(n) >= sizeof line || ::write(fd, line, size_t(n)) != n) {
      std::fprintf(stderr, "lock_probe_child: write to %s failed\n", out);
      std::exit(2);
    }
  };
  emit("start");
  auto t0 = monotonic_ns();
  auto end = t0 + int64_t(duration_ms) * 1'000'000;
  auto step = int64_t(interval_ms) * 1'000'000;
  for (auto next = t0 + step; next < end; next += step) {
    sleep_until_ns(next);
    emit("alive");
  }
  sleep_until_ns(end);
  emit("end");
  return 0;
}
