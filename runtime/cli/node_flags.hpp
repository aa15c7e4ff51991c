// The flags of `conclave node`, defined once: the `node` subcommand and a
// program that embeds a node (conclave/node.hpp) parse the same options, the
// same CONCLAVE_NODE_* variables and the same config file, in the same order
// of precedence (flag > environment > config file).
#pragma once

#include "runtime/node/node_config.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace conclave::cli {

/// What the flags fill in.
struct node_flags {
  node::node_options o;
  std::string config; ///< --config FILE, or empty
};

/// Adds every `conclave node` flag to `app`, bound to `f`; each can also come
/// from its CONCLAVE_NODE_* variable.
void add_node_flags(CLI::App* app, node_flags& f);

/// After `app` parsed: fills what neither a flag nor the environment set from
/// --config, then validates. The error is one line for the user (exit 2).
node::result<node::node_config> finish_node_flags(CLI::App* app, node_flags& f);

} // namespace conclave::cli
