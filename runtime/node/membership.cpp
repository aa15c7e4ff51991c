#include "runtime/node/membership.hpp"

namespace conclave::node {

std::string_view to_string(rejection r) {
  switch (r) {
  case rejection::none:
    return "none";
  case rejection::wrong_cluster:
    return "wrong_cluster";
  case rejection::unknown_node:
    return "unknown_node";
  case rejection::same_id:
    return "same_id";
  case rejection::wrong_node:
    return "wrong_node";
  }
  return "unknown";
}

rejection membership::admit(std::string_view c, uint64_t id) const {
  if (c != cluster)
    return rejection::wrong_cluster;
  if (id == self)
    return rejection::same_id;
  if (peers.count(id) == 0)
    return rejection::unknown_node;
  return rejection::none;
}

rejection membership::accept_answer(std::string_view c, uint64_t id,
                                    uint64_t expected) const {
  if (auto r = admit(c, id); r != rejection::none)
    return r;
  return id == expected ? rejection::none : rejection::wrong_node;
}

} // namespace conclave::node
