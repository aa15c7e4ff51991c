// conclave node: one member of a cluster as an OS process. See docs/design/node.md.
// The flags are node_flags.hpp's, and the node runs through
// conclave::embedded_node (include/conclave/node.hpp), as a program that embeds
// one does.
#include "runtime/cli/commands.hpp"
#include "runtime/cli/node_flags.hpp"

#include "conclave/node.hpp"
#include "runtime/node/node_config.hpp"

#include <memory>

namespace conclave::cli {

namespace {

struct node_command {
  node_flags flags;
  CLI::App* sub = nullptr;
};

int run(node_command& c) {
  auto cfg = finish_node_flags(c.sub, c.flags);
  if (!cfg)
    return bad_input(cfg.error());
  return embedded_node{cfg.value()}.run();
}

} // namespace

void add_node_command(command_registry& reg) {
  auto c = std::make_shared<node_command>();
  auto* sub = reg.add("node", "Run one member of a cluster (until SIGTERM)",
                      [c] { return run(*c); });
  c->sub = sub;
  add_node_flags(sub, c->flags);
}

} // namespace conclave::cli
