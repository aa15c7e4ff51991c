// lease_lock: hold a lease of a running cluster's store from your own program,
// and write only while holding it (a fenced write).
//
//   ./build/bin/lease_lock --dir /tmp/conclave-demo [--name NAME] [--hold-ms N]
//                          [--wait-ms N] [--ttl-ms N]
//   ./build/bin/lease_lock --dir /tmp/conclave-demo [--name NAME] --watch-ms N
//
// Acquires lease NAME (waiting up to --wait-ms), prints its fencing token,
// writes "last-writer" = "<token>" to dictionary "lease-example" fenced by the
// lease, keeps it --hold-ms while the lease renews itself, then releases it.
// If the lease is lost meanwhile (on_lost), it stops at once and exits 75.
// With --watch-ms it only watches the lease for that long instead, printing
// "holders: TOKEN LABEL, ..." (or "holders: none") at each change.
//
// Exit status: 0 done; 69 not granted in time; 75 lost while holding; 1 the
// fenced write was refused; 2 bad arguments or no cluster.
#include <conclave/lease.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

namespace {

bool flag(int& i, int argc, char** argv, const char* name, std::string& out) {
  if (std::strcmp(argv[i], name) != 0 || i + 1 >= argc)
    return false;
  out = argv[++i];
  return true;
}

} // namespace

int main(int argc, char** argv) {
  conclave::store_access where;
  std::string name = "example-lock", hold = "1000", wait = "5000", ttl = "3000";
  std::string watch;
  for (int i = 1; i < argc; ++i) {
    if (flag(i, argc, argv, "--dir", where.dir) || flag(i, argc, argv, "--name", name)
        || flag(i, argc, argv, "--hold-ms", hold)
        || flag(i, argc, argv, "--wait-ms", wait) || flag(i, argc, argv, "--ttl-ms", ttl)
        || flag(i, argc, argv, "--watch-ms", watch))
      continue;
    std::cerr << "lease_lock: error: unknown argument " << argv[i] << "\n";
    return 2;
  }
  conclave::store_client store{where};
  if (!store.ok()) {
    std::cerr << "lease_lock: error: " << store.error() << "\n";
    return 2;
  }
  if (!watch.empty()) {
    conclave::holder_watch w{
        store, name, [](const std::vector<conclave::store_client::holder>& hs) {
          std::string line = "holders:";
          for (auto& h : hs)
            line += " " + std::to_string(h.token) + " " + h.label + ",";
          if (hs.empty())
            line += " none";
          std::cout << line << std::endl;
        }};
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoll(watch.c_str())));
    std::cout.flush();
    std::_Exit(0);
  }
  conclave::lease_options o;
  o.ttl = std::chrono::milliseconds(std::atoll(ttl.c_str()));
  o.wait = std::chrono::milliseconds(std::atoll(wait.c_str()));
  o.label = "lease_lock example";
  conclave::lease lock{store, name, o};
  if (!lock.held()) {
    std::cerr << "lease_lock: not granted: " << lock.error() << "\n";
    std::_Exit(69);
  }
  std::atomic<bool> lost{false};
  lock.on_lost([&lost] { lost = true; });
  std::cout << "token " << lock.token() << std::endl;
  std::string why;
  if (!store.put("lease-example", "last-writer", std::to_string(lock.token()), &lock,
                 &why)) {
    std::cerr << "lease_lock: fenced write refused: " << why << "\n";
    std::_Exit(1);
  }
  auto end = std::chrono::steady_clock::now()
             + std::chrono::milliseconds(std::atoll(hold.c_str()));
  while (std::chrono::steady_clock::now() < end && !lost)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (lost) {
    std::cerr << "lease_lock: lost the lease: " << lock.error() << "\n";
    std::_Exit(75);
  }
  lock.release();
  std::cout << "released" << std::endl;
  // Skip CAF's orderly shutdown (a frozen member could hold it up).
  std::cout.flush();
  std::_Exit(0);
}
