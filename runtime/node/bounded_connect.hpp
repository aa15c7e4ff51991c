// A bound on CAF 0.17.6's blocking TCP connect. The middleman (plain and
// OpenSSL) dials with a blocking connect() on its own thread, one dial at a
// time (docs/design/caf-0.17.md). A member whose host is cut off by the
// network (its packets vanish: a pulled cable, a partition, a host that died
// without its kernel answering) never answers the SYN, and the kernel retries
// it for about two minutes: every other dial of the process waits behind it.
// A `conclave kv` whose cached primary was cut off reached no member within
// its timeout, and a node could not redial the members it still reaches.
// (A stopped process is different: its kernel completes the connect.)
//
// This executable interposes connect() (found by the dynamic linker before
// libc's, as socket_numbers.cpp does for socket() and accept()): a blocking
// connect of a TCP socket (IPv4 or IPv6) waits at most the connect timeout,
// then fails with ETIMEDOUT, which CAF reports as a failed dial. Non-blocking
// sockets and other socket kinds are passed on untouched.
//
// Dials in parallel: the bound still makes a cut-off member cost every dial
// queued behind it up to the timeout. probe_connect() dials a member on a
// thread of its own with a non-blocking connect; once the TCP connection is
// up, the caller asks the middleman to dial as usual, and the interposed
// connect() takes the probe's connected socket over at once (it moves it onto
// the middleman's descriptor): no connection is made twice, and only members
// that answered ever reach the middleman's queue.
//
// The timeout is CONCLAVE_CONNECT_TIMEOUT_MS from the environment, read once
// per process: default 1000 ms; 0 turns the bound off. A SYN-ACK takes one
// round trip, so a live host answers well within it on any network a cluster
// spans; on a network with round trips near a second, raise it.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace conclave::node {

/// The default bound on a blocking connect, in milliseconds.
constexpr int default_connect_timeout_ms = 1000;

/// The bound this process uses (CONCLAVE_CONNECT_TIMEOUT_MS, else the
/// default; 0: none). A value that is not a number up to 3,600,000 gives the
/// default.
int connect_timeout_ms();

/// The bound for an environment value (nullptr: unset); pure.
int parse_connect_timeout(const char* value);

using connect_fn = int (*)(int, const sockaddr*, socklen_t);

/// connect(fd, addr, len) through `real`, waiting at most `timeout_ms` if
/// `fd` is a blocking TCP socket (then -1 with errno ETIMEDOUT past it; the
/// socket is left for the caller to close, as after any failed connect).
/// Otherwise, or with `timeout_ms` <= 0, just `real`.
int connect_within(int fd, const sockaddr* addr, socklen_t len, int timeout_ms,
                   connect_fn real);

/// Starts a TCP connect to host:port (an IPv4 or IPv6 address, or a name
/// resolved here) on a thread of its own, waiting at most `timeout`; then
/// calls `done(0)` if it connected, else `done(errno)`, on that thread. A
/// connected socket waits (up to ten seconds) for this process's next
/// blocking connect() to the same address, which takes it over.
void probe_connect(const std::string& host, uint16_t port,
                   std::chrono::milliseconds timeout,
                   std::function<void(int error)> done);

/// Connected probe sockets waiting to be taken over (for tests).
size_t probes_waiting();

/// True if the interposer is in place; calling it also keeps it in the link.
bool bounded_connect_active();

} // namespace conclave::node
