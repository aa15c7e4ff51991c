// lock_history_check FILE [--min-holders N]: judges a lock scenario's probe
// file (see lock_history.hpp) and prints the violations and a summary line.
// Exit status: 0 the history keeps every rule; 1 it breaks one; 2 the harness
// failed (no such file, malformed lines, fewer than N holders; N defaults to 1).
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "tests/lock_scenario/lock_history.hpp"

int main(int argc, char** argv) {
  std::string file;
  long min_holders = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--min-holders" && i + 1 < argc)
      min_holders = std::strtol(argv[++i], nullptr, 10);
    else if (file.empty() && a.rfind("--", 0) != 0)
      file = a;
    else {
      std::cerr << "usage: lock_history_check FILE [--min-holders N]\n";
      return 2;
    }
  }
  if (file.empty()) {
    std::cerr << "usage: lock_history_check FILE [--min-holders N]\n";
    return 2;
  }
  std::ifstream in(file);
  if (!in) {
    std::cerr << "lock_history_check: cannot read " << file << "\n";
    return 2;
  }
  auto r = conclave::lock_scenario::check_history(in);
  conclave::lock_scenario::print_report(r, std::cout);
  if (!r.malformed.empty() || long(r.holders.size()) < min_holders) {
    std::cerr << "lock_history_check: harness failure (" << r.malformed.size()
              << " malformed lines, " << r.holders.size()
              << " holders, expected >= " << min_holders << ")\n";
    return 2;
  }
  return r.violations.empty() ? 0 : 1;
}
