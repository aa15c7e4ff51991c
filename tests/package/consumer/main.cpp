// Uses the installed conclave package through its one header and one target:
// a node built from bad flags must refuse them with `conclave node`'s exit
// status 2 and name the flag; one built from good flags must be ready to run
// (it is not run: that needs its peers). Exits 0 only if all of that holds.
#include <conclave/node.hpp>

#include <iostream>
#include <string>

int main() {
  std::cout << "conclave " << conclave::embedded_node::version() << '\n';
  const char* bad[] = {"consumer", "--id", "1", "--no-such-flag"};
  conclave::embedded_node refused{4, bad};
  if (refused.ok() || refused.run() != 2
      || refused.error().find("--no-such-flag") == std::string::npos) {
    std::cerr << "bad flags were not refused with exit status 2: '" << refused.error()
              << "'\n";
    return 1;
  }
  const char* good[] = {"consumer",
                        "--id",
                        "2",
                        "--listen",
                        "127.0.0.1:7002",
                        "--peers",
                        "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003"};
  conclave::embedded_node node{7, good};
  if (!node.ok() || node.id() != 2) {
    std::cerr << "good flags were refused: " << node.error() << '\n';
    return 1;
  }
  node.on_leading([](const conclave::leadership& lead) {
    while (lead.wait_for(std::chrono::milliseconds(100))) {
    }
  });
  std::cout << "conclave package: conclave/node.hpp and conclave::conclave ok\n";
  return 0;
}
