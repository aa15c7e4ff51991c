// Builds the protocol core of the configured algorithm.
#pragma once

#include "protocols/election/candidate_core.hpp"

#include <memory>

namespace conclave::election {

std::unique_ptr<candidate_core> make_core(node_id self, std::vector<node_id> peers,
                                          const election_config& cfg);

} // namespace conclave::election
