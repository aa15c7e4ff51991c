#include "runtime/node/listen_queue.hpp"

#include <sys/socket.h>

namespace conclave::node {

bool widen_listen_queue(int fd, int length) {
  return fd >= 0 && ::listen(fd, length) == 0;
}

} // namespace conclave::node
