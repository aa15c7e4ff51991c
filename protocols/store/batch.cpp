#include "protocols/store/batch.hpp"

namespace conclave::store {

bool check_holds(const batch_check& c, const op_result& read) {
  switch (c.kind) {
  case check_kind::equals:
    return read.found && read.value == c.value;
  case check_kind::absent:
    return !read.found;
  case check_kind::at_most:
    return !read.found || read.value <= c.value;
  }
  return false;
}

batch_run::batch_run(op_batch b, txn_id t)
    : checks_(std::move(b.checks)), commit_(b.commit) {
  requests_.reserve(checks_.size() + b.ops.size());
  for (auto& c : checks_) {
    op_request r;
    r.txn = t;
    r.op = operation::try_get;
    r.collection = c.collection;
    r.key = c.key;
    r.mode = read_mode::update;
    requests_.push_back(std::move(r));
  }
  for (auto& op : b.ops) {
    op.txn = t;
    requests_.push_back(std::move(op));
  }
  result_.txn = t;
  result_.results.reserve(b.ops.size());
}

bool batch_run::accept(op_result r) {
  auto i = next_++;
  if (i < checks_.size()) {
    if (!check_holds(checks_[i], r)) {
      result_.failed_check = static_cast<uint32_t>(i + 1);
      return false;
    }
    return true;
  }
  result_.results.push_back(std::move(r));
  return true;
}

} // namespace conclave::store
