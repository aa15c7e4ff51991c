// A program that is a conclave node: it takes the flags of `conclave node`
// (or --config FILE, as `conclave cluster up --program` writes it) and, while
// it leads, logs "leading in term E/L" every second; it logs "stopped leading"
// the moment it stops. See docs/concepts/nodes.md, "Embed a node in your
// program".
//
//   conclave cluster up --nodes 3 --dir /tmp/e --program ./build/bin/embedded_node
#include <conclave/node.hpp>

#include <chrono>

int main(int argc, char** argv) {
  conclave::embedded_node node{argc, argv};
  node.on_leading([&node](const conclave::leadership& lead) {
    // Stamp the term on everything the leader does: it fences older leaders.
    auto term = lead.term().to_string();
    do
      node.log("leading in term " + term);
    while (lead.wait_for(std::chrono::seconds(1)));
    node.log("stopped leading in term " + term);
  });
  return node.run(); // until SIGTERM or SIGINT; 2 on bad flags
}
