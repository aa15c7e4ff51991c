#include "protocols/election/core_factory.hpp"

#include "protocols/election/bully.hpp"
#include "protocols/election/ring.hpp"

namespace conclave::election {

std::unique_ptr<candidate_core> make_core(node_id self, std::vector<node_id> peers,
                                          const election_config& cfg) {
  if (cfg.algo == algorithm::ring)
    return std::make_unique<ring_core>(self, std::move(peers), cfg);
  return std::make_unique<bully_core>(self, std::move(peers), cfg);
}

} // namespace conclave::election
