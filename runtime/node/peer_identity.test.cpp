// Identity proofs (peer_identity.hpp) with certificates the `openssl` tool
// makes: the pure checks by plain calls, then the gate's handshake driven by
// an actor on CAF's test coordinator (no sockets, no sleeping), which shows
// each refusal counted in conclave_rejected_messages_total.
#include "runtime/node/peer_identity.hpp"

#include "runtime/node/gate_actor.hpp"
#include "runtime/node/replica_link.hpp"
#include "tests/support/coordinator_fixture.hpp"
#include "tests/support/test_certificates.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace conclave::node;
using namespace std::chrono_literals;
using conclave::test::test_certificates;

namespace {

/// Nodes 1, 2, 3 of one CA; node 9 has CN "node-09" (not a member name);
/// `other` is another CA with its own node 2.
struct pki {
  test_certificates ours{{1, 2, 3, 9}, {"node-1", "node-2", "node-3", "node-09"}};
  test_certificates other{{2}};

  node_identity identity(uint64_t id, const test_certificates& c) const {
    auto r = node_identity::load(c.cert(id), c.key(id));
    if (!r)
      throw std::runtime_error(r.error());
    return std::move(r.value());
  }
  proof_verifier verifier() const { return proof_verifier::load(ours.ca()).value(); }
};

const pki& certs() {
  static const pki p; // made once: the openssl tool takes a few ms per file
  return p;
}

proof_statement statement(uint64_t prover, uint64_t verifier) {
  return {proof_role::dialing, "conclave",   prover,     verifier,
          make_nonce(),        make_nonce(), "node@1/42"};
}

std::string read(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

// -- pure checks ---------------------------------------------------------------

TEST(peer_identity, a_certificate_names_the_member_of_its_cn) {
  EXPECT_EQ(member_id_named(read(certs().ours.cert(2))), std::optional<uint64_t>{2});
  EXPECT_EQ(member_id_named(read(certs().ours.cert(9))), std::nullopt); // "node-09"
  EXPECT_EQ(member_id_named(read(certs().ours.ca())), std::nullopt);
  EXPECT_EQ(member_id_named("not a certificate"), std::nullopt);
}

TEST(peer_identity, a_proof_by_the_member_it_names_verifies) {
  auto s = statement(2, 1);
  auto p = certs().identity(2, certs().ours).prove(s);
  EXPECT_FALSE(p.signature.empty());
  EXPECT_EQ(certs().verifier().verify(p, s), identity_refusal::none);
}

TEST(peer_identity, a_certificate_for_node_2_used_by_a_process_claiming_id_3_is_refused) {
  auto s = statement(3, 1);
  auto p = certs().identity(2, certs().ours).prove(s); // signs "I am 3" with node 2's key
  EXPECT_EQ(certs().verifier().verify(p, s), identity_refusal::wrong_member_id);
  auto odd = statement(9, 1);
  EXPECT_EQ(certs().verifier().verify(certs().identity(9, certs().ours).prove(odd), odd),
            identity_refusal::wrong_member_id); // CN node-09 names no member
}

TEST(peer_identity, a_forged_signature_is_refused) {
  auto s = statement(3, 1);
  auto p = certs().identity(3, certs().ours).prove(s);
  auto flipped = p;
  flipped.signature[flipped.signature.size() / 2] ^= 0x01;
  EXPECT_EQ(certs().verifier().verify(flipped, s), identity_refusal::bad_signature);
  // Node 3's certificate with a signature of node 2's key.
  auto borrowed = certs().identity(2, certs().ours).prove(s);
  borrowed.certificate_pem = p.certificate_pem;
  EXPECT_EQ(certs().verifier().verify(borrowed, s), identity_refusal::bad_signature);
  auto garbage = p;
  garbage.signature = std::string(70, 'x');
  EXPECT_EQ(certs().verifier().verify(garbage, s), identity_refusal::bad_signature);
}

TEST(peer_identity, a_proof_does_not_cover_another_verifier_nonce_role_or_candidate) {
  auto s = statement(2, 1);
  auto p = certs().identity(2, certs().ours).prove(s);
  auto v = certs().verifier();
  auto changed = [&](auto edit) {
    auto t = s;
    edit(t);
    return v.verify(p, t);
  };
  // Relayed to node 3, replayed with a new nonce, reflected into the other
  // role, carried by another actor, shown to another cluster: all refused.
  EXPECT_EQ(changed([](auto& t) { t.verifier = 3; }), identity_refusal::bad_signature);
  EXPECT_EQ(changed([](auto& t) { t.verifier_nonce = make_nonce(); }),
            identity_refusal::bad_signature);
  EXPECT_EQ(changed([](auto& t) { t.prover_nonce = make_nonce(); }),
            identity_refusal::bad_signature);
  EXPECT_EQ(changed([](auto& t) { t.role = proof_role::accepting; }),
            identity_refusal::bad_signature);
  EXPECT_EQ(changed([](auto& t) { t.prover_candidate = "node@1/43"; }),
            identity_refusal::bad_signature);
  EXPECT_EQ(changed([](auto& t) { t.cluster = "prod"; }),
            identity_refusal::bad_signature);
}

TEST(peer_identity, fields_cannot_slide_into_each_other_in_the_signed_bytes) {
  proof_statement a{proof_role::dialing, "ab", 1, 2, "c", "d", "e"};
  proof_statement b{proof_role::dialing, "a", 1, 2, "bc", "d", "e"};
  EXPECT_NE(a.encode(), b.encode());
  b = a;
  b.prover = 2;
  b.verifier = 1;
  EXPECT_NE(a.encode(), b.encode());
}

TEST(peer_identity, a_certificate_of_another_ca_or_none_is_untrusted) {
  auto s = statement(2, 1);
  auto foreign = certs().identity(2, certs().other).prove(s);
  EXPECT_EQ(certs().verifier().verify(foreign, s),
            identity_refusal::untrusted_certificate);
  auto p = certs().identity(2, certs().ours).prove(s);
  auto junk = p;
  junk.certificate_pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  EXPECT_EQ(certs().verifier().verify(junk, s), identity_refusal::untrusted_certificate);
  auto huge = p;
  huge.certificate_pem = p.certificate_pem + std::string(70'000, '\n');
  EXPECT_EQ(certs().verifier().verify(huge, s), identity_refusal::untrusted_certificate);
  auto none = p;
  none.certificate_pem.clear();
  EXPECT_EQ(certs().verifier().verify(none, s), identity_refusal::missing_proof);
  none = p;
  none.signature.clear();
  EXPECT_EQ(certs().verifier().verify(none, s), identity_refusal::missing_proof);
}

TEST(peer_identity, loading_bad_files_fails_with_one_line_naming_the_flag) {
  auto& c = certs().ours;
  auto no_key = node_identity::load(c.cert(1), c.file("missing.key"));
  ASSERT_FALSE(no_key);
  EXPECT_NE(no_key.error().find("--tls-key"), std::string::npos) << no_key.error();
  auto key_as_cert = node_identity::load(c.key(1), c.key(1));
  ASSERT_FALSE(key_as_cert);
  EXPECT_NE(key_as_cert.error().find("--tls-cert"), std::string::npos);
  auto cert_as_key = node_identity::load(c.cert(1), c.cert(1));
  ASSERT_FALSE(cert_as_key);
  EXPECT_EQ(cert_as_key.error().find('\n'), std::string::npos);
  auto ca = proof_verifier::load(c.key(1));
  ASSERT_FALSE(ca);
  EXPECT_NE(ca.error().find("--tls-ca"), std::string::npos);
  EXPECT_TRUE(peer_authenticator::load(c.ca(), c.cert(1), c.key(1)));
}

TEST(challenge_book, a_nonce_is_redeemed_once_and_only_by_its_member) {
  challenge_book book{2};
  auto n = book.issue(2, "theirs");
  EXPECT_EQ(n.size(), nonce_size);
  EXPECT_EQ(book.redeem(3, n), std::nullopt);
  EXPECT_EQ(book.redeem(2, n), std::optional<std::string>{"theirs"});
  EXPECT_EQ(book.redeem(2, n), std::nullopt);
  auto a = book.issue(2, "a");
  book.issue(3, "b");
  book.issue(3, "c"); // beyond capacity 2: the oldest is forgotten
  EXPECT_EQ(book.open(), 2u);
  EXPECT_EQ(book.redeem(2, a), std::nullopt);
}

// -- the gate's handshake ------------------------------------------------------

namespace {

/// What a scripted dialer saw.
struct dial_result {
  bool done = false;
  std::string challenge_refused;
  identity_refusal gate_proof = identity_refusal::missing_proof;
  std::string hello_refused;
};

/// How the scripted dialer misbehaves.
struct dial_script {
  uint64_t claimed_id = 2;
  const node_identity* identity = nullptr; ///< nullptr: plaintext, no challenge
  bool flip_signature = false;
  int hellos = 1; ///< > 1: replays the same hello
};

class gate_fixture : public conclave::testing::coordinator_fixture {
protected:
  std::ostringstream log_text;
  std::shared_ptr<node_probe> probe;
  std::shared_ptr<peer_links> links;
  gate_actor gate;
  caf::actor fake_candidate;
  /// The member whose certificate the (simulated) TLS session carrying the
  /// dialer's messages holds; 0: the member the dialer claims to be.
  uint64_t session_cert = 0;

  /// Gate of node 1 (members 1, 2, 3) with node 1's identity, or plaintext.
  void start_gate(bool tls) {
    node_options o;
    o.id = 1;
    o.listen = "127.0.0.1:7001";
    o.peers = "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003";
    auto cfg = make_node_config(o).value();
    probe = std::make_shared<node_probe>(
        cfg, std::make_shared<status_writer>("", node_status{}));
    links = std::make_shared<peer_links>(
        membership{"conclave", 1, {2, 3}}, probe,
        std::make_shared<conclave::election::directory_transport>(),
        std::make_shared<node_log>(1, log_format::text, &log_text));
    if (tls) {
      auto& c = certs().ours;
      links->set_authenticator(
          peer_authenticator::load(c.ca(), c.cert(1), c.key(1)).value());
    }
    // No real TLS session here: the fixture says whose certificate it holds.
    links->set_session_check([this](const caf::node_id&, uint64_t member) {
      return session_cert == 0 || session_cert == member;
    });
    gate = track(spawn_gate(sys(), links));
    fake_candidate = track(sys().spawn([] { return caf::behavior{[](int) {}}; }));
  }

  double rejected(const std::string& reason) {
    for (auto& f : probe->registry()->Collect())
      if (f.name == "conclave_rejected_messages_total")
        for (auto& m : f.metric)
          for (auto& l : m.label)
            if (l.name == "reason" && l.value == reason)
              return m.counter.value;
    return 0;
  }

  dial_result dial(dial_script script) {
    auto out = std::make_shared<dial_result>();
    auto g = gate;
    auto candidate = fake_candidate;
    auto verifier = certs().verifier();
    track(sys().spawn([=](caf::event_based_actor* self) {
      auto hello = [=](const std::string& gate_nonce, identity_proof proof) {
        for (int i = 0; i < script.hellos; ++i)
          self->request(g, 1s, hello_atom::value, std::string{"conclave"},
                        script.claimed_id, candidate, gate_nonce, proof.certificate_pem,
                        proof.signature)
              .then(
                  [=](const std::string&, uint64_t, const caf::actor&,
                      const std::string& refused) {
                    out->hello_refused = refused;
                    out->done = true;
                  },
                  [=](caf::error&) { out->done = true; });
      };
      if (script.identity == nullptr) {
        hello(std::string{}, identity_proof{});
        return;
      }
      auto nonce = make_nonce();
      self->request(g, 1s, challenge_atom::value, std::string{"conclave"},
                    script.claimed_id, nonce)
          .then(
              [=](const std::string& refused, const std::string& gate_nonce,
                  const std::string& cert, const std::string& sig,
                  const std::string& gate_candidate) {
                out->challenge_refused = refused;
                if (!refused.empty()) {
                  out->done = true;
                  return;
                }
                out->gate_proof = verifier.verify(
                    {cert, sig}, {proof_role::accepting, "conclave", 1, script.claimed_id,
                                  nonce, gate_nonce, gate_candidate});
                auto proof = script.identity->prove({proof_role::dialing, "conclave",
                                                     script.claimed_id, 1, gate_nonce,
                                                     nonce, handle_identity(candidate)});
                if (script.flip_signature)
                  proof.signature[0] ^= 0x01;
                hello(gate_nonce, proof);
              },
              [=](caf::error&) { out->done = true; });
    }));
    run();
    return *out;
  }

  /// Gives node 1 a replica endpoint (a stand-in host) and returns its transport.
  std::shared_ptr<peer_replica_transport> with_replica() {
    auto ep = std::make_shared<replica_endpoint>();
    ep->host = track(sys().spawn([] { return caf::behavior{[](int) {}}; }));
    ep->transport = std::make_shared<peer_replica_transport>();
    links->set_replica(ep);
    return ep->transport;
  }

  /// A replica hello claiming member `id` and offering `host`: the refusal.
  std::string replica_hello(uint64_t id, const caf::actor& host) {
    auto out = std::make_shared<std::string>("no answer");
    auto g = gate;
    track(sys().spawn([=](caf::event_based_actor* self) {
      self->request(g, 1s, replica_hello_atom::value, std::string{"conclave"}, id, host)
          .then([=](const caf::actor&, const std::string& refused) { *out = refused; },
                [=](caf::error&) { *out = "error"; });
    }));
    run();
    return *out;
  }
};

} // namespace

TEST_F(gate_fixture, a_member_proving_its_own_id_is_linked_and_the_gate_proves_its_own) {
  start_gate(true);
  auto two = certs().identity(2, certs().ours);
  auto r = dial({2, &two});
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.challenge_refused, "");
  EXPECT_EQ(r.gate_proof, identity_refusal::none);
  EXPECT_EQ(r.hello_refused, "");
  EXPECT_EQ(links->linked(), 1u);
}

TEST_F(gate_fixture, a_certificate_for_node_2_claiming_id_3_is_refused_and_counted) {
  start_gate(true);
  auto two = certs().identity(2, certs().ours);
  auto r = dial({3, &two});
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.hello_refused, "wrong_member_id");
  EXPECT_EQ(links->linked(), 0u);
  EXPECT_EQ(rejected("wrong_member_id"), 1.0);
  EXPECT_NE(log_text.str().find("refused a handshake from node 3"), std::string::npos)
      << log_text.str();
}

TEST_F(gate_fixture, a_valid_proof_of_node_3_over_node_2s_tls_session_is_refused) {
  // Node 3's proof is genuine (as a relay of node 3's own handshake would
  // be), but the TLS session that carries the hello holds node 2's
  // certificate: the proof is bound to the session, so it is refused.
  start_gate(true);
  session_cert = 2;
  auto three = certs().identity(3, certs().ours);
  auto r = dial({3, &three});
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.gate_proof, identity_refusal::none); // the gate proved itself
  EXPECT_EQ(r.hello_refused, "wrong_session");
  EXPECT_EQ(links->linked(), 0u);
  EXPECT_EQ(rejected("wrong_session"), 1.0);
  EXPECT_NE(log_text.str().find("refused a handshake from node 3 of cluster 'conclave': "
                                "wrong_session"),
            std::string::npos)
      << log_text.str();
  // The same proof over node 3's own session is taken.
  session_cert = 3;
  auto again = dial({3, &three});
  EXPECT_EQ(again.hello_refused, "");
  EXPECT_EQ(links->linked(), 1u);
}

TEST_F(gate_fixture, a_forged_signature_is_refused_and_counted) {
  start_gate(true);
  auto two = certs().identity(2, certs().ours);
  dial_script s{2, &two};
  s.flip_signature = true;
  auto r = dial(s);
  EXPECT_EQ(r.hello_refused, "bad_signature");
  EXPECT_EQ(links->linked(), 0u);
  EXPECT_EQ(rejected("bad_signature"), 1.0);
}

TEST_F(gate_fixture, another_cas_certificate_is_refused_and_counted) {
  start_gate(true);
  auto foreign = certs().identity(2, certs().other);
  auto r = dial({2, &foreign});
  EXPECT_EQ(r.hello_refused, "untrusted_certificate");
  EXPECT_EQ(rejected("untrusted_certificate"), 1.0);
}

TEST_F(gate_fixture, a_replayed_hello_finds_its_nonce_used) {
  start_gate(true);
  auto two = certs().identity(2, certs().ours);
  dial_script s{2, &two};
  s.hellos = 2; // the second answer is the one kept
  auto r = dial(s);
  EXPECT_EQ(r.hello_refused, "stale_nonce");
  EXPECT_EQ(rejected("stale_nonce"), 1.0);
  EXPECT_EQ(links->linked(), 1u); // the first one got through
}

TEST_F(gate_fixture, with_tls_a_hello_without_proof_is_refused) {
  start_gate(true);
  auto r = dial({2, nullptr});
  EXPECT_EQ(r.hello_refused, "missing_proof");
  EXPECT_EQ(rejected("missing_proof"), 1.0);
  EXPECT_EQ(links->linked(), 0u);
}

TEST_F(gate_fixture, in_plaintext_the_hello_needs_no_proof_as_before) {
  start_gate(false);
  auto r = dial({2, nullptr});
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.hello_refused, "");
  EXPECT_EQ(links->linked(), 1u);
}

TEST_F(gate_fixture, a_replica_hello_is_taken_only_from_a_linked_member) {
  start_gate(false);
  auto transport = with_replica();
  ASSERT_EQ(dial({2, nullptr}).hello_refused, "");
  auto host = track(sys().spawn([] { return caf::behavior{[](int) {}}; }));
  // Member 3 passed no hello: its claim is refused and counted.
  EXPECT_EQ(replica_hello(3, host), "replica_peer_not_linked");
  EXPECT_FALSE(transport->knows(3));
  EXPECT_EQ(rejected("replica_peer_not_linked"), 1.0);
  // Member 2 is linked, and the host is on its candidate's node.
  EXPECT_EQ(replica_hello(2, host), "");
  EXPECT_TRUE(transport->knows(2));
}

TEST_F(gate_fixture, the_link_check_says_whether_the_gate_holds_that_candidate) {
  start_gate(false);
  auto check = [&](const std::string& cluster, uint64_t id, const caf::actor& candidate) {
    auto out = std::make_shared<std::string>("no answer");
    auto g = gate;
    track(sys().spawn([=](caf::event_based_actor* self) {
      self->request(g, 1s, link_check_atom::value, cluster, id, candidate)
          .then([=](bool held) { *out = held ? "held" : "not held"; },
                [=](caf::error&) { *out = "error"; });
    }));
    run();
    return *out;
  };
  // Nothing linked yet.
  EXPECT_EQ(check("conclave", 2, fake_candidate), "not held");
  ASSERT_EQ(dial({2, nullptr}).hello_refused, "");
  EXPECT_EQ(check("conclave", 2, fake_candidate), "held");
  // Another candidate, another member, another cluster: not that link.
  auto other = track(sys().spawn([] { return caf::behavior{[](int) {}}; }));
  EXPECT_EQ(check("conclave", 2, other), "not held");
  EXPECT_EQ(check("conclave", 3, fake_candidate), "not held");
  EXPECT_EQ(check("other", 2, fake_candidate), "not held");
  EXPECT_EQ(rejected("wrong_cluster"), 1.0); // a stranger's check is counted
  EXPECT_EQ(check("conclave", 2, caf::actor{}), "not held");
  // The gate unlinks it (its connection ended): the dialer hears "not held".
  links->forget(2, fake_candidate);
  EXPECT_EQ(links->linked(), 0u);
  EXPECT_EQ(check("conclave", 2, fake_candidate), "not held");
}

TEST(replica_peer_refusal, a_host_must_live_on_the_node_of_the_linked_candidate) {
  // With the middleman loaded (no socket opened) each system has its own
  // CAF node id, as two processes do.
  caf::actor_system_config cfg_a;
  caf::actor_system_config cfg_b;
  cfg_a.load<caf::io::middleman>();
  cfg_b.load<caf::io::middleman>();
  caf::actor_system a{cfg_a};
  caf::actor_system b{cfg_b}; // another CAF node id
  auto stub = [] { return caf::behavior{[](int) {}}; };
  auto candidate = a.spawn(stub);
  auto same_node_host = a.spawn(stub);
  auto other_node_host = b.spawn(stub);
  ASSERT_NE(a.node(), b.node());
  EXPECT_EQ(replica_peer_refusal(candidate, same_node_host), "");
  EXPECT_EQ(replica_peer_refusal(candidate, other_node_host), "replica_peer_other_node");
  EXPECT_EQ(replica_peer_refusal(caf::actor{}, same_node_host),
            "replica_peer_not_linked");
  EXPECT_EQ(replica_peer_refusal(candidate, caf::actor{}), "unknown_node");
  for (auto& x : {candidate, same_node_host, other_node_host})
    caf::anon_send_exit(x, caf::exit_reason::kill);
}
