// conclave/lease.hpp: leases and fenced writes on a running cluster's
// replicated store, from any program.
//
//   #include <conclave/lease.hpp>
//
//   conclave::store_access where;
//   where.dir = "/tmp/conclave-demo";                       // or peers + TLS files
//   conclave::store_client store{where};
//   conclave::lease_options o;
//   o.ttl = std::chrono::seconds(10);
//   o.wait = std::chrono::seconds(30);
//   conclave::lease lock{store, "nightly-report", o};      // blocks up to o.wait
//   if (!lock.held())
//     return fail(lock.error());
//   lock.on_lost([] { stop_working_now(); });               // never missed
//   store.put("reports", "last", "...", &lock);              // refused once stale
//   // ~lease releases it
//
// A lease is held until valid_until(): the moment the last successful grant
// or renewal was SENT, plus the ttl, on this machine's steady clock. The
// cluster grants the lease to nobody else before then, whatever fails in
// between (docs/locks.md). A thread of the lease renews it every ttl / 3;
// when a renewal is refused, or none succeeds until shortly before
// valid_until(), the lease is lost: held() turns false and the on_lost
// callback runs, before valid_until(). Each grant carries a fencing token
// larger than every earlier grant's: writes passed a lease are refused by the
// store once another holder has been granted it.
//
// Link the CMake target conclave::conclave. This header includes only the
// standard library.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace conclave {

/// How to reach a cluster: a `conclave cluster up` / `cluster init`
/// directory, or the members and TLS files.
struct store_access {
  std::string dir;
  /// ID@HOST:PORT,... (as given to the nodes).
  std::string peers;
  std::string cluster = "conclave";
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
};

class lease;
class holder_watch;

/// One client connection to a cluster's store (to every member; the client
/// finds the primary and retries on its own).
class store_client {
public:
  explicit store_client(store_access access);
  ~store_client();
  store_client(const store_client&) = delete;
  store_client& operator=(const store_client&) = delete;

  /// False when the access was incomplete or wrong; error() says why.
  bool ok() const;
  const std::string& error() const;

  /// Writes key = value in dictionary `collection` once a majority has it.
  /// With `fence`: only while that lease's token still holds it (else false
  /// and *why = "stale_token"). False with *why on any other failure.
  bool put(const std::string& collection, const std::string& key,
           const std::string& value, const lease* fence = nullptr,
           std::string* why = nullptr);
  /// The value of a key (nothing if absent or on failure, *why says which).
  std::optional<std::string> get(const std::string& collection, const std::string& key,
                                 std::string* why = nullptr);

  struct holder {
    std::string id;
    uint64_t token = 0;
    std::string label;
  };
  /// Who holds lease `name` now (empty: nobody), as the primary applied it.
  std::vector<holder> holders(const std::string& name, std::string* why = nullptr);

  struct impl;

private:
  friend class lease;
  friend class holder_watch;
  std::shared_ptr<impl> impl_;
};

struct lease_options {
  /// How long the lease lasts without a renewal. 1 ms .. 24 h.
  std::chrono::milliseconds ttl{10000};
  /// Slots: 1 is a mutex, N a semaphore.
  uint32_t limit = 1;
  /// How long the constructor waits for a slot (FIFO); 0: one try.
  std::chrono::milliseconds wait{0};
  /// Shown with the holder, after "HOST pid PID".
  std::string label;
};

/// A held lease; released when destroyed (a scoped holder).
class lease {
public:
  /// Acquires lease `name`, waiting up to o.wait. held() says whether it
  /// did, error() why not.
  lease(store_client& s, std::string name, lease_options o = {});
  ~lease();
  lease(lease&&) noexcept;
  lease& operator=(lease&&) noexcept;

  /// Granted, not lost, not released, and before valid_until() less a small
  /// margin.
  bool held() const;
  explicit operator bool() const { return held(); }
  /// The fencing token of this grant (0: none).
  uint64_t token() const;
  const std::string& name() const;
  std::chrono::steady_clock::time_point valid_until() const;
  /// Why the lease was not granted, or was lost ("" otherwise).
  std::string error() const;
  /// Runs `f` once when the lease is lost (refused renewal, or no renewal
  /// before valid_until()), on the renewal thread. If it is already lost,
  /// runs `f` at once on this thread. Not run after release().
  void on_lost(std::function<void()> f);
  /// Frees the slot for the next waiter; held() is false afterwards.
  void release();

  struct state;

private:
  std::shared_ptr<state> s_;
};

/// Watches who holds a lease: calls `on_change` with the holders once at the
/// start and again each time they change (a grant, a release, an expiry), on
/// a thread of its own, until destroyed. It asks the cluster's primary every
/// `interval`; while no primary answers it reports nothing new.
class holder_watch {
public:
  using callback = std::function<void(const std::vector<store_client::holder>&)>;
  holder_watch(store_client& s, std::string name, callback on_change,
               std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  ~holder_watch();
  holder_watch(const holder_watch&) = delete;
  holder_watch& operator=(const holder_watch&) = delete;

  struct state;

private:
  std::shared_ptr<state> s_;
};

} // namespace conclave
