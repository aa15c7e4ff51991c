#include "runtime/node/replica_storage.hpp"

#include "actors/store/memory_log_device.hpp"

namespace conclave::node {

result<replica_storage> open_replica_storage(const std::string& data_dir) {
  (void)data_dir;
  replica_storage s;
  s.device = std::make_shared<store::memory_log_device>();
  s.terms = std::make_shared<replication::memory_term_file>();
  s.durable = false;
  return s;
}

} // namespace conclave::node
