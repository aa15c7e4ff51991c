#include "runtime/cluster/certificates.hpp"

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
  ASSERT_EQ(cmds.size(), 5u); // the CA, then a request and a signature per node
  auto has = [](const std::vector<std::string>& c, const std::string& s) {
    return std::find(c.begin(), c.end(), s) != c.end();
  };
  EXPECT_TRUE(has(cmds[0], "-x509"));
  EXPECT_TRUE(has(cmds[3], "/O=prod/CN=node-7"));
  EXPECT_TRUE(has(cmds[4], "/d/node-7.pem"));
  EXPECT_EQ(certificate_of("/d", 7).key, "/d/node-7.key");
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
