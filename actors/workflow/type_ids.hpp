// The CAF type-ID block of the workflows (type_id_offset::workflow): every
// message type of the scheduler, agent, supervisor and client, in alphabetical
// order, the module's atoms, and the conversion of workflow errors to
// caf::error. Register in every process: add_workflow_types(cfg).
#pragma once

#include "actors/workflow/inspect.hpp"
#include "protocols/type_id_offsets.hpp"
#include "protocols/workflow/errc.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/type_id.hpp>

#include <string>
#include <vector>

namespace conclave::workflow {

/// What an agent asks its service: one try of one step.
struct service_call {
  std::string idempotency_key;
  workflow::attempt attempt;
  bool compensation = false;
  std::string payload;
  /// The dispatch's deadline: a service may stop early past it.
  timestamp deadline{0};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, service_call& x) {
  return f(caf::meta::type_name("service_call"), x.idempotency_key, x.attempt,
           x.compensation, x.payload, x.deadline);
}

} // namespace conclave::workflow

CAF_BEGIN_TYPE_ID_BLOCK(conclave_workflow, conclave::type_id_offset::workflow)

CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::dispatch))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::job_event))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::job_id))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::job_spec))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::job_view))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::service_call))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::step_outcome))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::step_state))
CAF_ADD_TYPE_ID(conclave_workflow, (conclave::workflow::stuck_report))
CAF_ADD_TYPE_ID(conclave_workflow, (std::vector<conclave::workflow::job_event>))
CAF_ADD_TYPE_ID(conclave_workflow, (std::vector<conclave::workflow::job_id>))
CAF_ADD_TYPE_ID(conclave_workflow, (std::vector<conclave::workflow::stuck_report>))

CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, cancel_atom, "wf_cancel")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, events_atom, "wf_events")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, explain_atom, "wf_why")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, flush_atom, "wf_flush")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, list_atom, "wf_list")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, poll_atom, "wf_poll")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, resubmit_atom, "wf_resub")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, retry_atom, "wf_retry")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, scan_atom, "wf_scan")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, start_atom, "wf_start")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, submit_atom, "wf_submit")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, unsubscribe_atom, "wf_unsub")
CAF_ADD_ATOM(conclave_workflow, conclave::workflow_atoms, watch_atom, "wf_watch")

CAF_END_TYPE_ID_BLOCK(conclave_workflow)

namespace conclave::workflow {

/// The category atom of workflow errors inside caf::error.
constexpr caf::atom_value error_category_atom = caf::atom("cncl_wf");

/// A workflow error as caf::error (code = errc value, context = its name).
inline caf::error make_error(errc e) {
  return caf::error{static_cast<uint8_t>(e), error_category_atom,
                    caf::make_message(std::string{to_string(e)})};
}

inline caf::error to_caf_error(const std::error_code& ec) {
  if (ec.category() == workflow_category())
    return make_error(static_cast<errc>(ec.value()));
  return make_error(errc::store_failure);
}

/// The workflow error inside a caf::error, if it is one.
inline std::optional<errc> to_errc(const caf::error& e) {
  if (!e || e.category() != error_category_atom)
    return std::nullopt;
  return static_cast<errc>(e.code());
}

/// Registers the workflow message types and a readable rendering of workflow
/// errors. Supervisors also receive leadership events: register the election
/// block (caf::id_block::conclave_election) and the store's (add_store_types).
inline void add_workflow_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::conclave_workflow>();
  cfg.add_error_category(
      error_category_atom, [](uint8_t code, caf::atom_value, const caf::message&) {
        return std::string{"conclave.workflow: "} + to_string(static_cast<errc>(code));
      });
}

} // namespace conclave::workflow
