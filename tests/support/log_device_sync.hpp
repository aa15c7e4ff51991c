// Waits for a log device's sync completion, on whatever thread the device
// completes it (tests of the file log device).
#pragma once

#include "storage/api/log_device.hpp"

#include <future>

namespace conclave::test {

inline store::result<store::lsn> sync_and_wait(store::log_device& d) {
  std::promise<store::result<store::lsn>> p;
  auto f = p.get_future();
  d.sync([&p](store::result<store::lsn> r) { p.set_value(r); });
  return f.get();
}

} // namespace conclave::test
