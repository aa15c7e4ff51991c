// The HTTP API's listening socket is created by cpp-httplib, whose Debian
// build (0.11) listens with a queue of 5 pending connections. A burst of new
// connections (many clients at once, or an attacker opening hundreds) fills
// it before the accept thread runs again; the kernel then drops the next SYN
// and a well-behaved client's connect waits for its retransmission, 1 s and
// then 3 s later. Calling listen() again on a listening socket only changes
// its queue length, so the server widens it right after binding.
#pragma once

namespace conclave::node {

/// Pending connections the HTTP listener queues (the kernel caps it at
/// net.core.somaxconn).
constexpr int http_listen_queue = 1024;

/// Sets the queue of pending connections of the listening socket `fd` to
/// `length`. False (errno set) if `fd` is not a bound stream socket.
bool widen_listen_queue(int fd, int length = http_listen_queue);

} // namespace conclave::node
