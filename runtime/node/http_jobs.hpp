// /v1/jobs: the cluster's workflow jobs over HTTP, through the node's own
// workflow client (the chain `conclave job` runs in its process: replication
// client, replicated store adapter, workflow client).
//
//   POST /v1/jobs                  submit a job spec (the JSON of
//                                  `conclave job submit --file`)
//   GET  /v1/jobs?state=S&limit=N&after=ID
//                                  jobs in id order, paged:
//                                  {"jobs":[{"id","state","steps",...}],
//                                   "next": ID or null}
//   GET  /v1/jobs/ID               one job and its steps
//   POST /v1/jobs/ID/cancel        cancel it
//   POST /v1/jobs/ID/resubmit      run it again from its failed step
//   GET  /v1/jobs/ID/explain       where it is and what happens next
#pragma once

#include "protocols/workflow/errc.hpp"
#include "protocols/workflow/explain.hpp"
#include "protocols/workflow/records.hpp"
#include "runtime/node/http_kv.hpp"

#include <optional>
#include <string>
#include <vector>

namespace conclave::node {

/// The answer of one call to the workflow client: a value, or why not.
template <class T>
struct job_call {
  std::optional<T> value;
  /// The workflow's refusal, if it was one.
  std::optional<workflow::errc> code;
  /// No answer within the client's bound (the outcome of a change is then
  /// unknown).
  bool timed_out = false;
  /// A readable line for anything but a value.
  std::string error;
};

/// The workflow client as the job routes use it: blocking calls, each
/// answered within a bound.
class jobs_service {
public:
  virtual ~jobs_service() = default;
  virtual job_call<workflow::job_id> submit(const workflow::job_spec& spec) = 0;
  virtual job_call<workflow::job_view> get(const workflow::job_id& id) = 0;
  /// Every job in that state.
  virtual job_call<std::vector<workflow::job_id>> list(workflow::step_state s) = 0;
  virtual job_call<workflow::step_state> cancel(const workflow::job_id& id) = 0;
  virtual job_call<workflow::step_state> resubmit(const workflow::job_id& id) = 0;
  virtual job_call<workflow::stuck_report> explain(const workflow::job_id& id) = 0;
  /// The workflow's clock (wall-clock ns since the epoch), for ages.
  virtual workflow::timestamp now() = 0;
};

constexpr uint32_t max_jobs_page = 500;
constexpr uint32_t default_jobs_page = 100;

/// Answers /v1/jobs and /v1/jobs/...; nothing for another path. `store`
/// reads the kinds the nodes' agents serve (a submission naming another kind
/// is refused, as `conclave job submit` does).
std::optional<http_response> handle_jobs(const http_request& req, jobs_service* jobs,
                                         kv_store* store);

} // namespace conclave::node
