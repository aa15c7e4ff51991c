#include "protocols/history/history.hpp"

#include <stdexcept>
#include <utility>

namespace conclave::history {

call call::put(std::string key, std::string value) {
  call c;
  c.kind = op_kind::put;
  c.target = std::move(key);
  c.value = std::move(value);
  return c;
}

call call::get(std::string key) {
  call c;
  c.kind = op_kind::get;
  c.target = std::move(key);
  return c;
}

call call::remove(std::string key) {
  call c;
  c.kind = op_kind::remove;
  c.target = std::move(key);
  return c;
}

call call::cas(std::string key, std::optional<std::string> expected,
               std::optional<std::string> desired) {
  call c;
  c.kind = op_kind::cas;
  c.target = std::move(key);
  c.expected = std::move(expected);
  c.value = std::move(desired);
  return c;
}

call call::incr(std::string key, int64_t by) {
  call c;
  c.kind = op_kind::incr;
  c.target = std::move(key);
  c.by = by;
  return c;
}

call call::enqueue(std::string queue, std::string value) {
  call c;
  c.kind = op_kind::enqueue;
  c.target = std::move(queue);
  c.value = std::move(value);
  return c;
}

call call::dequeue(std::string queue) {
  call c;
  c.kind = op_kind::dequeue;
  c.target = std::move(queue);
  return c;
}

outcome outcome::done() {
  return outcome{};
}

outcome outcome::removed(bool found) {
  outcome o;
  o.found = found;
  return o;
}

outcome outcome::read(std::optional<std::string> value) {
  outcome o;
  o.value = std::move(value);
  return o;
}

outcome outcome::cas_failed(std::optional<std::string> current) {
  outcome o;
  o.ok = false;
  o.value = std::move(current);
  return o;
}

outcome outcome::counter(int64_t value) {
  outcome o;
  o.number = value;
  return o;
}

namespace {

std::string quoted(const std::optional<std::string>& v, const char* none) {
  return v ? "\"" + *v + "\"" : std::string{none};
}

std::string call_text(const call& c) {
  const std::string& t = c.target;
  switch (c.kind) {
  case op_kind::put:
    return "put(" + t + ", " + quoted(c.value, "?") + ")";
  case op_kind::get:
    return "get(" + t + ")";
  case op_kind::remove:
    return "remove(" + t + ")";
  case op_kind::cas:
    return "cas(" + t + ", " + quoted(c.expected, "absent") + ", "
           + quoted(c.value, "remove") + ")";
  case op_kind::incr:
    return "incr(" + t + ", " + std::to_string(c.by) + ")";
  case op_kind::enqueue:
    return "enqueue(" + t + ", " + quoted(c.value, "?") + ")";
  case op_kind::dequeue:
    return "dequeue(" + t + ")";
  }
  return "?";
}

std::string outcome_text(const call& c, const outcome& o) {
  switch (c.kind) {
  case op_kind::put:
  case op_kind::enqueue:
    return "ok";
  case op_kind::get:
    return quoted(o.value, "absent");
  case op_kind::remove:
    return o.found ? (*o.found ? "found" : "not found") : "ok";
  case op_kind::cas:
    return o.ok ? "ok" : "failed, held " + quoted(o.value, "absent");
  case op_kind::incr:
    return std::to_string(o.number);
  case op_kind::dequeue:
    return quoted(o.value, "empty");
  }
  return "?";
}

} // namespace

std::string to_string(const operation& op) {
  std::string s = "client " + std::to_string(op.client.value) + ": " + call_text(op.what);
  if (op.responded) {
    s += " -> " + outcome_text(op.what, op.seen) + " ["
         + std::to_string(op.invoked.count()) + ", "
         + std::to_string(op.responded->count()) + "]";
  } else {
    s += " -> unknown [" + std::to_string(op.invoked.count()) + ", ?)";
  }
  return s;
}

client_history::op_index client_history::invoke(client_id client, timestamp at,
                                                call what) {
  operation op;
  op.client = client;
  op.invoked = at;
  op.what = std::move(what);
  ops_.push_back(std::move(op));
  return ops_.size() - 1;
}

void client_history::respond(op_index op, timestamp at, outcome seen) {
  if (op >= ops_.size())
    throw std::invalid_argument("client_history::respond: no such operation");
  operation& o = ops_[op];
  if (o.responded)
    throw std::invalid_argument(
        "client_history::respond: the operation already has an answer");
  if (at < o.invoked)
    throw std::invalid_argument("client_history::respond: answer before invocation");
  o.responded = at;
  o.seen = std::move(seen);
}

client_history::op_index client_history::add(operation op) {
  if (op.responded && *op.responded < op.invoked)
    throw std::invalid_argument("client_history::add: answer before invocation");
  ops_.push_back(std::move(op));
  return ops_.size() - 1;
}

} // namespace conclave::history
