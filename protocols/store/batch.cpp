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

namespace {

bool groups_cover(const std::vector<batch_group>& gs, size_t n_checks, size_t n_ops) {
  uint64_t checks = 0, ops = 0;
  for (auto& g : gs) {
    checks += g.checks;
    ops += g.ops;
  }
  return checks == n_checks && ops == n_ops;
}

} // namespace

bool groups_valid(const op_batch& b) {
  return b.groups.empty() || groups_cover(b.groups, b.checks.size(), b.ops.size());
}

batch_run::batch_run(op_batch b, txn_id t)
    : checks_(std::move(b.checks)), commit_(b.commit) {
  if (!b.groups.empty() && groups_cover(b.groups, checks_.size(), b.ops.size())) {
    // Requests are the checks, then the operations: number both by group.
    group_of_.resize(checks_.size() + b.ops.size());
    size_t c = 0, o = checks_.size();
    for (uint32_t g = 0; g < b.groups.size(); ++g) {
      for (uint32_t k = 0; k < b.groups[g].checks; ++k)
        group_of_[c++] = g;
      for (uint32_t k = 0; k < b.groups[g].ops; ++k)
        group_of_[o++] = g;
    }
    group_failed_.assign(b.groups.size(), false);
  }
  reads_.reserve(checks_.size());
  for (auto& c : checks_) {
    op_request r;
    r.txn = t;
    r.op = operation::try_get;
    r.collection = std::move(c.collection); // a check needs only its value
    r.key = std::move(c.key);
    r.mode = read_mode::update;
    reads_.push_back(std::move(r));
  }
  // The operations stay in the batch's vector (no move per request).
  ops_ = std::move(b.ops);
  for (auto& op : ops_)
    op.txn = t;
  result_.txn = t;
  result_.results.reserve(ops_.size());
}

bool batch_run::accept(op_result r) {
  auto i = next_++;
  if (i < checks_.size()) {
    if (!check_holds(checks_[i], r)) {
      if (group_of_.empty()) {
        result_.failed_check = static_cast<uint32_t>(i + 1);
        return false;
      }
      auto g = group_of_[i];
      group_failed_[g] = true;
      result_.failed_groups.push_back(g);
    }
    skip_failed();
    return true;
  }
  result_.results.push_back(std::move(r));
  skip_failed();
  return true;
}

void batch_run::skip_failed() {
  if (group_of_.empty())
    return;
  while (next_ < size() && group_failed_[group_of_[next_]]) {
    if (next_ >= checks_.size())
      result_.results.emplace_back();
    ++next_;
  }
}

} // namespace conclave::store
