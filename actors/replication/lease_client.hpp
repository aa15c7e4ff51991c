// lease_client: leases of a running cluster's replicated store
// (lease_state.hpp) from any thread of any process, blocking, on top of the
// client library (client.hpp), which finds the primary and retries.
//
// The one rule a holder must follow: a grant or renewal whose request was
// SENT at local time s lets the holder count the lease as held until
// s + ttl on its own steady clock (`safe_until`), and no longer. The acting
// primary frees the slot only after a longer wait on its own clock
// (lease_table.hpp), so no other holder is granted the slot before then,
// whatever primary changes happen in between. Every call below records the
// send time before the first attempt, so `safe_until` is conservative even
// when the client library retried the request on another member.
//
// A holder id names one holder: a grant made for it while its client was not
// waiting any more (its wait ran out, its process was slow) is picked up by
// the next acquire with the same id, with the same token. Use one id per
// process and lease (make_holder_id), not one per call.
#pragma once

#include "actors/replication/client.hpp"
#include "actors/replication/lease_state.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace conclave::replication {

using lease_clock = std::chrono::steady_clock;

struct lease_answer {
  /// ok; lease_busy (acquire: every slot held, `holders` says by whom);
  /// stale_token (renew, release: the token does not hold the lease any
  /// more); bad_request, too_large; timeout (no settling answer in time).
  errc code = errc::timeout;
  uint64_t token = 0;
  /// ok from acquire or renew: the holder may count the lease as held until
  /// then.
  lease_clock::time_point safe_until{};
  std::optional<lease> holders;
};

class lease_client {
public:
  /// `base`: the members, the lookup and the primary hint; its deadline and
  /// attempt timeout are set per call.
  lease_client(caf::actor_system& sys, client_options base);

  /// Asks for a slot and waits up to `wait` for one (FIFO at the primary;
  /// 0: one try). p.wait is ignored (set per poll).
  lease_answer acquire(const std::string& name, const std::string& holder, lease_params p,
                       std::chrono::milliseconds wait);
  /// Renews; answers within `budget` (plus kv_client::margin).
  lease_answer renew(const std::string& name, const std::string& holder, uint64_t token,
                     std::chrono::milliseconds ttl, std::chrono::milliseconds budget);
  /// Frees the slot (ok), or says it was not held with that token any more
  /// (stale_token: expired, or released by an earlier attempt).
  errc release(const std::string& name, const std::string& holder, uint64_t token,
               std::chrono::milliseconds budget);
  /// The holders as the primary applied them (nothing held: no holders).
  lease_answer holders(const std::string& name, std::chrono::milliseconds budget);

  /// "HOST/PID/RANDOM": unique per call.
  static std::string make_holder_id();
  /// "HOST pid PID" plus the user's label, shown with a holder.
  static std::string default_label(const std::string& user_label);

  /// The longest a primary keeps one acquire waiting; a longer wait polls.
  static constexpr std::chrono::milliseconds max_poll{2000};

private:
  txn_result run(const txn_request& req, std::chrono::milliseconds attempt,
                 std::chrono::milliseconds deadline);

  caf::actor_system& sys_;
  client_options base_;
};

} // namespace conclave::replication
