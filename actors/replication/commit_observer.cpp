#include "actors/replication/commit_observer.hpp"

#include "actors/replication/lease_state.hpp"

namespace conclave::replication {

const char* to_string(lease_change_kind k) noexcept {
  switch (k) {
  case lease_change_kind::granted:
    return "granted";
  case lease_change_kind::released:
    return "released";
  case lease_change_kind::expired:
    return "expired";
  }
  return "?";
}

std::vector<lease_change> lease_changes(const std::vector<txn_op>& ops,
                                        const apply_outcome& outcome, lsn at) {
  std::vector<lease_change> out;
  if (outcome.duplicate || outcome.code != errc::ok)
    return out;
  for (size_t i = 0; i < ops.size() && i < outcome.outputs.size(); ++i) {
    auto& op = ops[i];
    switch (op.kind) {
    case op_kind::lease_acquire: {
      auto token = parse_token(outcome.outputs[i].value);
      if (token && *token == at.value)
        out.push_back({op.collection, op.key, *token, lease_change_kind::granted});
      break;
    }
    case op_kind::lease_release:
    case op_kind::lease_expire: {
      auto token = parse_token(op.value);
      out.push_back({op.collection, op.key, token.value_or(0),
                     op.kind == op_kind::lease_release ? lease_change_kind::released
                                                       : lease_change_kind::expired});
      break;
    }
    default:
      break;
    }
  }
  return out;
}

} // namespace conclave::replication
