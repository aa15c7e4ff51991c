// `conclave cluster init` as users call it: bad input is exit 2 with one line
// and writes nothing; a good run writes the planned files, keys 0600, node
// certificates that chain to the CA and name their member, and a directory
// that `kv --cluster-dir` reads but the local-process commands refuse.
#include "tests/process/process_support.hpp"

#include <sys/stat.h>

using namespace conclave::process_test;

namespace init_cli {

namespace fs = std::filesystem;

constexpr const char* hosts = "1@10.0.0.1:7001,2@10.0.0.2:7001,3@10.0.0.3:7001";

void expect_refused(const std::string& args, const std::string& line_part) {
  auto r = run_conclave("cluster init " + args, true);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(line_part), std::string::npos) << args << "\n" << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
}

struct scratch {
  fs::path path;
  scratch() {
    path = fs::temp_directory_path()
           / ("conclave-init-cli-" + std::to_string(::getpid()) + "-"
              + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch() { fs::remove_all(path); }
};

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

} // namespace init_cli

TEST(cluster_init_cli, bad_input_is_exit_2_with_one_line_and_writes_nothing) {
  using namespace init_cli;
  scratch s;
  auto out = (s.path / "out").string();
  expect_refused("--dir " + out, "--hosts");
  expect_refused("--hosts " + std::string{hosts}, "--dir");
  expect_refused("--dir " + out + " --hosts 10.0.0.1:7001",
                 "--hosts: expected ID@HOST:PORT, got '10.0.0.1:7001'");
  expect_refused("--dir " + out + " --hosts 1@10.0.0.1", "--hosts: in '1@10.0.0.1'");
  expect_refused("--dir " + out + " --hosts 1@:7001,2@10.0.0.2:7001",
                 "the address the other hosts reach it at");
  expect_refused("--dir " + out + " --hosts 1@10.0.0.1:7001,1@10.0.0.2:7001",
                 "--hosts: node 1 is listed twice");
  expect_refused("--dir " + out + " --hosts 1@10.0.0.1:7001,2@10.0.0.1:7001",
                 "--hosts: nodes 1 and 2 share the address 10.0.0.1:7001");
  expect_refused("--dir " + out + " --hosts " + hosts + " --ca-cert /etc/hostname",
                 "--ca-cert: given without --ca-key");
  expect_refused("--dir " + out + " --hosts " + hosts + " --ca-key /etc/hostname",
                 "--ca-key: given without --ca-cert");
  expect_refused("--dir " + out + " --hosts " + hosts
                     + " --ca-cert /nonexistent/ca.pem --ca-key /nonexistent/ca.key",
                 "--ca-cert: cannot read '/nonexistent/ca.pem'");
  expect_refused("--dir " + out + " --hosts " + hosts + " --metrics-port 7001",
                 "--metrics-port: 7001 is also the peer port of node 1");
  expect_refused("--dir " + out + " --hosts " + hosts + " --data-dir relative/path",
                 "--data-dir: expected an absolute path");
  expect_refused("--dir " + out + " --hosts " + hosts + " --cluster 'a b'", "--cluster:");
  EXPECT_FALSE(fs::exists(out)); // nothing written by refused runs
  // A non-empty directory is never written into.
  fs::create_directories(out);
  std::ofstream{fs::path{out} / "keep.txt"} << "mine";
  expect_refused("--dir " + out + " --hosts " + hosts, "is not empty");
  EXPECT_EQ(std::distance(fs::directory_iterator{out}, fs::directory_iterator{}), 1);
  // So is a file given as the directory.
  expect_refused("--dir " + out + "/keep.txt --hosts " + hosts, "is not a directory");
}

TEST(cluster_init_cli, json_names_every_file_it_wrote) {
  using namespace init_cli;
  scratch s;
  auto out = s.path / "out";
  auto r = run_conclave("cluster init --json --hosts " + std::string{hosts} + " --dir "
                        + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["cluster"], "conclave");
  ASSERT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["nodes"][1]["id"], 2);
  EXPECT_EQ(j["nodes"][1]["address"], "10.0.0.2:7001");
  EXPECT_EQ(j["nodes"][1]["files"], (out / "node-2").string());
  EXPECT_EQ(j["ca_key"], (out / "ca" / "ca.key").string());
  ASSERT_GE(j["files"].size(), 15u);
  for (auto& f : j["files"])
    EXPECT_TRUE(fs::exists(f.get<std::string>())) << f;
  EXPECT_TRUE(fs::exists(j["systemd_unit"].get<std::string>()));
}

TEST(cluster_init_cli, writes_configs_certificates_and_a_unit_for_every_host) {
  using namespace init_cli;
  scratch s;
  auto out = s.path / "out";
  auto r = run_conclave("cluster init --hosts " + std::string{hosts} + " --dir "
                            + out.string() + " --cluster prod --metrics-port 9101",
                        true);
  ASSERT_EQ(r.status, 0) << r.out;
  for (int i = 1; i <= 3; ++i) {
    auto n = "node-" + std::to_string(i);
    auto nd = out / n;
    auto conf = read_file(nd / (n + ".conf"));
    EXPECT_NE(conf.find("listen = 10.0.0." + std::to_string(i) + ":7001\n"),
              std::string::npos)
        << conf;
    EXPECT_NE(conf.find("tls-key = /etc/conclave/" + n + ".key\n"), std::string::npos)
        << conf;
    EXPECT_EQ(mode_of(nd / (n + ".key")), 0600u);
    EXPECT_EQ(mode_of(nd / (n + ".pem")), 0644u);
    // Each node directory holds its own key only.
    EXPECT_EQ(std::distance(fs::directory_iterator{nd}, fs::directory_iterator{}), 4);
    auto v = conclave::testing::run_command("openssl verify -CAfile "
                                            + (nd / "ca.pem").string() + " "
                                            + (nd / (n + ".pem")).string() + " 2>&1");
    EXPECT_EQ(v.status, 0) << v.out;
    auto subject = conclave::testing::run_command("openssl x509 -noout -subject -in "
                                                  + (nd / (n + ".pem")).string());
    EXPECT_NE(subject.out.find("CN = " + n), std::string::npos) << subject.out;
    EXPECT_NE(subject.out.find("O = prod"), std::string::npos) << subject.out;
  }
  EXPECT_EQ(mode_of(out / "client" / "client.key"), 0600u);
  EXPECT_EQ(mode_of(out / "ca" / "ca.key"), 0600u);
  // The node and client keys live only in their directories.
  EXPECT_FALSE(fs::exists(out / "ca" / "node-1.key"));
  EXPECT_FALSE(fs::exists(out / "ca" / "client.key"));
  auto unit = read_file(out / "conclave-node@.service");
  EXPECT_NE(unit.find("ExecStart=/usr/local/bin/conclave node --config "
                      "/etc/conclave/node-%i.conf"),
            std::string::npos)
      << unit;
  EXPECT_TRUE(fs::exists(out / "prometheus-targets.json"));

  // The local-process commands refuse the directory; nothing runs here.
  auto st = run_conclave("cluster status --dir " + out.string(), true);
  EXPECT_EQ(st.status, 2) << st.out;
  EXPECT_NE(st.out.find("made by `conclave cluster init`"), std::string::npos) << st.out;
  EXPECT_EQ(run_conclave("cluster up --dir " + out.string()).status, 2);
  // A second run into the same directory is refused.
  EXPECT_EQ(run_conclave("cluster init --hosts " + std::string{hosts} + " --dir "
                         + out.string())
                .status,
            2);

  // Certificates for a new member, signed by the same CA, verify against it.
  auto more = s.path / "more";
  auto again =
      run_conclave("cluster init --hosts 4@10.0.0.4:7001 --dir " + more.string()
                       + " --cluster prod --ca-cert " + (out / "ca" / "ca.pem").string()
                       + " --ca-key " + (out / "ca" / "ca.key").string(),
                   true);
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_FALSE(fs::exists(more / "ca" / "ca.key"));
  auto v = conclave::testing::run_command(
      "openssl verify -CAfile " + (out / "node-1" / "ca.pem").string() + " "
      + (more / "node-4" / "node-4.pem").string() + " 2>&1");
  EXPECT_EQ(v.status, 0) << v.out;
}
