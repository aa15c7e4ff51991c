// Leases as replicated state (lease_state.hpp): the codecs refuse garbage and
// round-trip what they wrote, and the ops do the same thing on every replica:
// one grant per free slot, tokens from the granting record's lsn, renewals
// and releases only with the current token, fencing by token.
#include "actors/replication/lease_state.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace conclave::replication;
using namespace std::chrono_literals;

namespace {

txn_op acquire(const std::string& name, const std::string& holder, uint32_t limit = 1,
               std::chrono::milliseconds ttl = 1000ms) {
  lease_params p;
  p.ttl = ttl;
  p.limit = limit;
  p.label = "node 1 pid " + holder;
  return txn_op{name, holder, encode_params(p), op_kind::lease_acquire};
}

txn_op with_token(op_kind k, const std::string& name, const std::string& holder,
                  uint64_t token) {
  return txn_op{name, holder, format_token(token), k};
}

/// Applies ops in order, each at the next lsn, like records of a log.
struct replica {
  std::optional<lease> state;
  uint64_t next = 1;
  lease_step step(const txn_op& op) {
    auto s = apply_lease_op(state, op, lsn{next++});
    if (s.code == errc::ok && s.changed)
      state = s.after.holders.empty() ? std::nullopt : std::optional<lease>(s.after);
    return s;
  }
};

} // namespace

TEST(lease_state, params_and_leases_round_trip) {
  lease_params p{1234ms, 3, 5000ms, "node 2 pid 77 label x"};
  auto d = decode_params(encode_params(p));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ttl, p.ttl);
  EXPECT_EQ(d->limit, 3u);
  EXPECT_EQ(d->wait, p.wait);
  EXPECT_EQ(d->label, p.label);
  lease l{2, {{"a", 7, 10ms, "x"}, {"b", 9, 20ms, ""}}};
  auto e = decode_lease(encode_lease(l));
  ASSERT_TRUE(e);
  ASSERT_EQ(e->holders.size(), 2u);
  EXPECT_EQ(e->holders[1].holder, "b");
  EXPECT_EQ(e->holders[1].token, 9u);
  EXPECT_EQ(e->holders[0].ttl, 10ms);
}

TEST(lease_state, garbage_never_decodes_into_something_else) {
  std::mt19937_64 rng(7);
  auto good_params = encode_params({1000ms, 1, 0ms, "label"});
  auto good_lease = encode_lease({1, {{"h", 3, 1000ms, "l"}}});
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string b = i % 2 ? good_params : good_lease;
    // Flip, cut or extend.
    switch (rng() % 3) {
    case 0:
      b[rng() % b.size()] ^= static_cast<char>(1 + rng() % 255);
      break;
    case 1:
      b.resize(rng() % b.size());
      break;
    default:
      b.push_back(static_cast<char>(rng()));
    }
    if (i % 2) {
      if (auto p = decode_params(b)) {
        ++decoded; // a flipped label byte or ttl: still well formed
        EXPECT_EQ(encode_params(*p), b);
      }
    } else if (auto l = decode_lease(b)) {
      ++decoded;
      EXPECT_EQ(encode_lease(*l), b);
      EXPECT_LE(l->holders.size(), l->limit);
    }
  }
  EXPECT_LT(decoded, 20000);
  EXPECT_FALSE(decode_params(""));
  EXPECT_FALSE(decode_lease(""));
}

TEST(lease_state, tokens_parse_only_as_plain_positive_decimals) {
  EXPECT_EQ(parse_token("1"), 1u);
  EXPECT_EQ(parse_token("18446744073709551615"), UINT64_MAX);
  for (auto bad : {"", "0", "01", "-1", "+1", "1 ", " 1", "18446744073709551616", "1x",
                   "99999999999999999999"})
    EXPECT_FALSE(parse_token(bad)) << bad;
}

TEST(lease_state, a_mutex_grants_one_holder_and_tokens_grow_with_every_grant) {
  replica r;
  auto a = r.step(acquire("m", "a"));
  ASSERT_EQ(a.code, errc::ok);
  EXPECT_EQ(a.out.value, "1");
  auto b = r.step(acquire("m", "b"));
  EXPECT_EQ(b.code, errc::lease_busy);
  auto listed = decode_lease(b.out.value);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->holders.size(), 1u);
  EXPECT_EQ(listed->holders[0].holder, "a");
  // The holder asking again gets its own token back (a retry).
  EXPECT_EQ(r.step(acquire("m", "a")).out.value, "1");
  EXPECT_EQ(r.step(with_token(op_kind::lease_renew, "m", "a", 1)).code, errc::ok);
  EXPECT_EQ(r.step(with_token(op_kind::lease_renew, "m", "b", 1)).code,
            errc::stale_token);
  EXPECT_EQ(r.step(with_token(op_kind::lease_release, "m", "a", 2)).code,
            errc::stale_token);
  EXPECT_EQ(r.step(with_token(op_kind::lease_release, "m", "a", 1)).code, errc::ok);
  EXPECT_FALSE(r.state);
  auto b2 = r.step(acquire("m", "b"));
  ASSERT_EQ(b2.code, errc::ok);
  EXPECT_GT(*parse_token(b2.out.value), 1u);
  // The old holder's token no longer fences anything; the new one does.
  EXPECT_EQ(r.step(with_token(op_kind::expect_lease, "m", "", 1)).code,
            errc::stale_token);
  EXPECT_EQ(r.step(txn_op{"m", "", b2.out.value, op_kind::expect_lease}).code, errc::ok);
  // An expired holder is gone like a released one.
  EXPECT_EQ(r.step(txn_op{"m", "b", b2.out.value, op_kind::lease_expire}).code, errc::ok);
  EXPECT_EQ(r.step(txn_op{"m", "b", b2.out.value, op_kind::lease_renew}).code,
            errc::stale_token);
}

TEST(lease_state, a_semaphore_grants_its_limit_and_keeps_it_while_held) {
  replica r;
  std::vector<uint64_t> tokens;
  for (auto h : {"a", "b", "c"}) {
    auto s = r.step(acquire("s", h, 3));
    ASSERT_EQ(s.code, errc::ok) << h;
    tokens.push_back(*parse_token(s.out.value));
  }
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()));
  EXPECT_EQ(r.step(acquire("s", "d", 3)).code, errc::lease_busy);
  // Another limit while held: busy, the limit stays.
  EXPECT_EQ(r.step(with_token(op_kind::lease_release, "s", "a", tokens[0])).code,
            errc::ok);
  EXPECT_EQ(r.step(acquire("s", "d", 5)).code, errc::lease_busy);
  EXPECT_EQ(r.step(acquire("s", "d", 3)).code, errc::ok);
  EXPECT_EQ(r.state->limit, 3u);
}

TEST(lease_state, malformed_lease_ops_are_refused_before_proposing) {
  EXPECT_EQ(check_lease_op(acquire("m", "a")), errc::ok);
  EXPECT_EQ(check_lease_op(acquire("", "a")), errc::bad_request);
  EXPECT_EQ(check_lease_op(acquire("m", "")), errc::bad_request);
  EXPECT_EQ(check_lease_op(acquire("m", "a", 0)), errc::bad_request);
  EXPECT_EQ(check_lease_op(acquire("m", "a", max_lease_limit + 1)), errc::bad_request);
  EXPECT_EQ(check_lease_op(acquire("m", "a", 1, 0ms)), errc::bad_request);
  EXPECT_EQ(check_lease_op(acquire("m", "a", 1, max_lease_ttl + 1ms)), errc::bad_request);
  EXPECT_EQ(check_lease_op(acquire("m", "a", 1, max_lease_ttl)), errc::ok);
  EXPECT_EQ(check_lease_op(txn_op{"m", "a", "garbage", op_kind::lease_acquire}),
            errc::bad_request);
  EXPECT_EQ(check_lease_op(txn_op{"m", "a", "0", op_kind::lease_renew}),
            errc::bad_request);
  EXPECT_EQ(check_lease_op(txn_op{"m", "a", "5", op_kind::lease_expire}),
            errc::bad_request);
  EXPECT_EQ(check_lease_op(txn_op{lease_collection, "a", "5", op_kind::lease_renew}),
            errc::bad_request);
  EXPECT_EQ(check_lease_op(txn_op{"m", "", "5", op_kind::expect_lease}), errc::ok);
}
