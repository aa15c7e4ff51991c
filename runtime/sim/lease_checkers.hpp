// The checkers of the lease workload (`conclave sim --workload lease`;
// docs/design/simulation.md, "Lease workload"). They read what the run's
// lease clients recorded and name what is wrong; none of them is part of the
// run. Histories made up to break one property make its checker complain
// (lease_checkers.test.cpp).
//
// A client's belief: the client contract of leases (docs/locks.md) lets a
// client whose acquire or renewal was SENT at its local time s and answered
// ok consider itself the holder until local s + ttl. The workload turns that
// into run (real, virtual) time with the client's clock rate r: from the
// moment the client reads the answer until send + ttl / r; a release ends it
// at the release's send time. Beliefs are what the guarantee is about:
//
//   mutual_exclusion   (safety) at no instant do more clients believe they
//                      hold a lease than its limit (1: a mutex)
//   tokens_grow        (safety) a grant requested after another holder's
//                      grant was acknowledged carries a larger fencing token
//                      (the committed log orders every grant of every lease)
//   granted_after_heal (liveness) once faults heal, some client is granted a
//                      lease within the bound
#pragma once

#include "runtime/sim/repl_checkers.hpp"

#include <memory>
#include <string>
#include <vector>

namespace conclave::sim {

/// One stretch of run time during which a client believed it held a lease.
struct lease_belief {
  size_t client = 0;
  /// Index of the lease in lease_observation::leases.
  size_t lease = 0;
  std::string holder;
  uint64_t token = 0;
  repl::timestamp from{0};
  /// Exclusive: the belief is over at `until`.
  repl::timestamp until{0};
};

/// One grant (an acquire answered ok) as the client saw it.
struct lease_grant {
  size_t client = 0;
  size_t lease = 0;
  std::string holder;
  uint64_t token = 0;
  /// Run time the request was sent, and the answer read.
  repl::timestamp sent{0};
  repl::timestamp acked{0};
};

struct lease_observation {
  struct lease_info {
    std::string name;
    uint32_t limit = 1;
  };
  std::vector<lease_info> leases;
  std::vector<lease_belief> beliefs;
  std::vector<lease_grant> grants;
  repl::timestamp heal{0};
  repl::duration bound{0};
  /// Liveness is judged only if a majority was up when faults healed.
  bool judge_liveness = true;
};

class lease_checker {
public:
  virtual ~lease_checker() = default;
  virtual const char* name() const = 0;
  virtual bool safety() const { return true; }
  /// Appends one violation per problem found (checker and safety filled in
  /// by run_lease_checkers).
  virtual void check(const lease_observation& obs,
                     std::vector<repl_violation>& out) const = 0;
};

/// The three checkers above, in that order.
std::vector<std::unique_ptr<lease_checker>> standard_lease_checkers();

std::vector<repl_violation>
run_lease_checkers(const std::vector<std::unique_ptr<lease_checker>>& checkers,
                   const lease_observation& obs, size_t max_per_checker = 20);

/// The most clients believing they hold lease `lease` at one instant.
size_t max_believers(const lease_observation& obs, size_t lease);

} // namespace conclave::sim
