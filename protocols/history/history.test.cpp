#include "protocols/history/history.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace conclave::history;

namespace {

timestamp t_(int64_t n) {
  return timestamp{n};
}

TEST(history, an_invoked_call_stays_unanswered_until_its_response_is_recorded) {
  client_history h;
  auto put = h.invoke(client_id{1}, t_(10), call::put("k", "v"));
  auto get = h.invoke(client_id{2}, t_(11), call::get("k"));
  h.respond(get, t_(14), outcome::read("v"));
  EXPECT_FALSE(h[put].completed());
  ASSERT_TRUE(h[get].completed());
  EXPECT_EQ(*h[get].responded, t_(14));
  EXPECT_EQ(to_string(h[put]), "client 1: put(k, \"v\") -> unknown [10, ?)");
  EXPECT_EQ(to_string(h[get]), "client 2: get(k) -> \"v\" [11, 14]");
}

TEST(history, a_response_before_its_invocation_or_given_twice_is_refused) {
  client_history h;
  auto op = h.invoke(client_id{1}, t_(10), call::incr("n", 2));
  EXPECT_THROW(h.respond(op, t_(9), outcome::counter(2)), std::invalid_argument);
  h.respond(op, t_(10), outcome::counter(2));
  EXPECT_THROW(h.respond(op, t_(11), outcome::counter(2)), std::invalid_argument);
  EXPECT_THROW(h.respond(op + 1, t_(11), outcome::done()), std::invalid_argument);
  operation bad;
  bad.invoked = t_(5);
  bad.responded = t_(4);
  EXPECT_THROW(h.add(bad), std::invalid_argument);
}

TEST(history, every_call_prints_with_its_observed_result) {
  client_history h;
  auto add = [&](call c, outcome o) {
    operation op;
    op.client = client_id{7};
    op.invoked = t_(1);
    op.responded = t_(2);
    op.what = std::move(c);
    op.seen = std::move(o);
    return to_string(h[h.add(op)]);
  };
  EXPECT_EQ(add(call::remove("k"), outcome::removed(false)),
            "client 7: remove(k) -> not found [1, 2]");
  EXPECT_EQ(add(call::cas("k", std::nullopt, "b"), outcome::cas_failed("a")),
            "client 7: cas(k, absent, \"b\") -> failed, held \"a\" [1, 2]");
  EXPECT_EQ(add(call::cas("k", "a", std::nullopt), outcome::done()),
            "client 7: cas(k, \"a\", remove) -> ok [1, 2]");
  EXPECT_EQ(add(call::incr("n", 3), outcome::counter(5)),
            "client 7: incr(n, 3) -> 5 [1, 2]");
  EXPECT_EQ(add(call::enqueue("q", "x"), outcome::done()),
            "client 7: enqueue(q, \"x\") -> ok [1, 2]");
  EXPECT_EQ(add(call::dequeue("q"), outcome::read(std::nullopt)),
            "client 7: dequeue(q) -> empty [1, 2]");
}

} // namespace
