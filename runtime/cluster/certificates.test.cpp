#include "runtime/cluster/certificates.hpp"

#include "runtime/node/peer_identity.hpp"
#include "tests/support/process_tools.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

using namespace conclave::cluster;
namespace fs = std::filesystem;

TEST(certificates, commands_name_each_node_in_its_subject) {
  auto cmds = certificate_commands("/d", "prod", {1, 7});
  // The CA, then a request and a signature per node and for the client.
  ASSERT_EQ(cmds.size(), 7u);
  auto has = [](const std::vector<std::string>& c, const std::string& s) {
    return std::find(c.begin(), c.end(), s) != c.end();
  };
  EXPECT_TRUE(has(cmds[0], "-x509"));
  EXPECT_TRUE(has(cmds[3], "/O=prod/CN=node-7"));
  EXPECT_TRUE(has(cmds[4], "/d/node-7.pem"));
  EXPECT_EQ(certificate_of("/d", 7).key, "/d/node-7.key");
  EXPECT_TRUE(has(cmds[5], "/O=prod/CN=client"));
  EXPECT_TRUE(has(cmds[6], "/d/client.pem"));
  EXPECT_EQ(client_certificate_of("/d").cert, "/d/client.pem");
}

TEST(certificates, a_given_ca_signs_and_no_new_one_is_made) {
  certificate_options o;
  o.ca_cert = "/ca/root.pem";
  o.ca_key = "/ca/root.key";
  o.days = 365;
  auto cmds = certificate_commands("/d", "prod", {1}, o);
  // No CA request: a request and a signature for the node and the client.
  ASSERT_EQ(cmds.size(), 4u);
  for (auto& c : cmds)
    EXPECT_EQ(std::find(c.begin(), c.end(), "-x509"), c.end());
  auto& sign = cmds[1];
  auto after = [&](const std::string& flag) {
    auto i = std::find(sign.begin(), sign.end(), flag);
    return i == sign.end() || i + 1 == sign.end() ? std::string{} : *(i + 1);
  };
  EXPECT_EQ(after("-CA"), "/ca/root.pem");
  EXPECT_EQ(after("-CAkey"), "/ca/root.key");
  EXPECT_EQ(after("-CAserial"), "/d/ca.srl"); // never next to the user's CA
  EXPECT_EQ(after("-days"), "365");
}

TEST(certificates, certificates_of_a_given_ca_verify_against_it) {
  auto dir =
      fs::temp_directory_path() / ("conclave-own-ca-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto first = (dir / "first").string();
  ASSERT_TRUE(make_certificates(first, "test", {1}));
  certificate_options o;
  o.ca_cert = first + "/ca.pem";
  o.ca_key = first + "/ca.key";
  auto second = (dir / "second").string();
  auto made = make_certificates(second, "test", {2}, o);
  ASSERT_TRUE(made) << made.error();
  EXPECT_FALSE(fs::exists(second + "/ca.key"));
  auto f = certificate_of(second, 2);
  // ca.pem is a copy of the given CA: the first set's certificates verify too.
  for (auto cert : {f.cert, certificate_of(first, 1).cert}) {
    auto v = conclave::testing::run_command("openssl verify -CAfile " + f.ca + " " + cert
                                            + " 2>&1");
    EXPECT_EQ(v.status, 0) << v.out;
  }
  fs::remove_all(dir);
}

TEST(certificates, the_tool_makes_node_certificates_the_ca_verifies) {
  auto dir = fs::temp_directory_path() / ("conclave-certs-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto made = make_certificates(dir.string(), "test", {1, 2});
  ASSERT_TRUE(made) << made.error();
  for (uint64_t id : {1, 2}) {
    auto f = certificate_of(dir.string(), id);
    auto v = conclave::testing::run_command("openssl verify -CAfile " + f.ca + " "
                                            + f.cert + " 2>&1");
    EXPECT_EQ(v.status, 0) << v.out;
    auto subject =
        conclave::testing::run_command("openssl x509 -noout -subject -in " + f.cert);
    EXPECT_NE(subject.out.find("CN = node-" + std::to_string(id)), std::string::npos)
        << subject.out;
    struct stat st {};
    ASSERT_EQ(::stat(f.key.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  // A certificate of another CA does not verify against this one.
  auto other = dir / "other";
  ASSERT_TRUE(make_certificates(other.string(), "test", {1}));
  auto v = conclave::testing::run_command(
      "openssl verify -CAfile " + certificate_of(dir.string(), 1).ca + " "
      + certificate_of(other.string(), 1).cert + " 2>&1");
  EXPECT_NE(v.status, 0) << v.out;
  fs::remove_all(dir);
}

TEST(certificates, the_client_certificate_chains_to_the_ca_but_proves_no_member_id) {
  auto dir =
      fs::temp_directory_path() / ("conclave-client-cert-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ASSERT_TRUE(make_certificates(dir.string(), "test", {1, 2}));
  auto c = client_certificate_of(dir.string());
  auto v = conclave::testing::run_command("openssl verify -CAfile " + c.ca + " " + c.cert
                                          + " 2>&1");
  EXPECT_EQ(v.status, 0) << v.out;
  auto identity = conclave::node::node_identity::load(c.cert, c.key);
  ASSERT_TRUE(identity) << identity.error();
  EXPECT_FALSE(identity.value().named_member());
  auto verifier = conclave::node::proof_verifier::load(c.ca);
  ASSERT_TRUE(verifier) << verifier.error();
  // A hello claiming member 1 (or 2) signed with the client's key: its
  // certificate is the CA's, its signature is good, its name is no member's.
  for (uint64_t claimed : {1, 2}) {
    conclave::node::proof_statement s;
    s.cluster = "test";
    s.prover = claimed;
    s.verifier = 3 - claimed;
    s.verifier_nonce = std::string(conclave::node::nonce_size, 'a');
    s.prover_nonce = std::string(conclave::node::nonce_size, 'b');
    s.prover_candidate = "candidate";
    EXPECT_EQ(verifier.value().verify(identity.value().prove(s), s),
              conclave::node::identity_refusal::wrong_member_id);
  }
  // The same statement signed by node 1's own certificate passes: the
  // refusal is about the name, not the setup.
  auto node1 = certificate_of(dir.string(), 1);
  auto n1 = conclave::node::node_identity::load(node1.cert, node1.key);
  ASSERT_TRUE(n1);
  conclave::node::proof_statement s;
  s.cluster = "test";
  s.prover = 1;
  s.verifier = 2;
  s.verifier_nonce = std::string(conclave::node::nonce_size, 'a');
  s.prover_nonce = std::string(conclave::node::nonce_size, 'b');
  s.prover_candidate = "candidate";
  EXPECT_EQ(verifier.value().verify(n1.value().prove(s), s),
            conclave::node::identity_refusal::none);
  fs::remove_all(dir);
}
