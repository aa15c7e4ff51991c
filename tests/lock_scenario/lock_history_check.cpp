// lock_history_check FILE [--min-holders N] [--faults FAULT_LOG] [--max-listed N]:
// judges a lock scenario's probe file (see lock_history.hpp) and prints the
// violations and a summary line; with --faults, also a line counting the
// overlaps by the fault they followed (fault_log.hpp).
// Exit status: 0 the history keeps every rule; 1 it breaks one; 2 the harness
// failed (no such file, malformed lines, fewer than N holders; N defaults to 1).
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "tests/lock_scenario/fault_log.hpp"
#include "tests/lock_scenario/lock_history.hpp"

namespace {

int usage() {
  std::cerr << "usage: lock_history_check FILE [--min-holders N] [--faults FAULT_LOG] "
               "[--max-listed N]\n";
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  using namespace conclave::lock_scenario;
  std::string file, faults_file;
  long min_holders = 1, max_listed = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--min-holders" && i + 1 < argc)
      min_holders = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--max-listed" && i + 1 < argc)
      max_listed = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--faults" && i + 1 < argc)
      faults_file = argv[++i];
    else if (file.empty() && a.rfind("--", 0) != 0)
      file = a;
    else
      return usage();
  }
  if (file.empty() || max_listed < 0)
    return usage();
  std::ifstream in(file);
  if (!in) {
    std::cerr << "lock_history_check: cannot read " << file << "\n";
    return 2;
  }
  auto r = check_history(in);
  print_report(r, std::cout, size_t(max_listed));
  if (!faults_file.empty()) {
    std::ifstream fin(faults_file);
    if (!fin) {
      std::cerr << "lock_history_check: cannot read " << faults_file << "\n";
      return 2;
    }
    std::cout << "overlaps_by_fault";
    for (auto& [kind, n] : overlaps_by_fault(r, read_faults(fin)))
      std::cout << " " << kind << "=" << n;
    std::cout << "\n";
  }
  if (!r.malformed.empty() || long(r.holders.size()) < min_holders) {
    std::cerr << "lock_history_check: harness failure (" << r.malformed.size()
              << " malformed lines, " << r.holders.size()
              << " holders, expected >= " << min_holders << ")\n";
    return 2;
  }
  return r.violations.empty() ? 0 : 1;
}
