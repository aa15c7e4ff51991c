// `conclave node` and `conclave cluster` refuse bad input up front: exit 2 and
// one line on stderr naming the problem.
#include "tests/process/process_support.hpp"

#include <netinet/in.h>

using namespace conclave::process_test;

namespace {

void expect_exit(const std::string& args, int status, const std::string& line_part) {
  auto r = run_conclave(args, true);
  EXPECT_EQ(r.status, status) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(line_part), std::string::npos) << args << "\n" << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
}

void expect_bad_input(const std::string& args, const std::string& line_part) {
  auto r = run_conclave(args, true);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(line_part), std::string::npos) << args << "\n" << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
}

struct temp_file {
  std::filesystem::path path;
  explicit temp_file(const std::string& content) {
    path = std::filesystem::temp_directory_path()
           / ("conclave-cfg-" + std::to_string(::getpid()) + "-"
              + std::to_string(counter()++) + ".ini");
    std::ofstream{path} << content;
  }
  ~temp_file() { std::filesystem::remove(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

} // namespace

TEST(node_cli, bad_flags_are_exit_2_with_the_right_line) {
  expect_bad_input("node --bogus 1", "--bogus");
  expect_bad_input("node --listen 127.0.0.1:7001", "--id: required");
  expect_bad_input("node --id 1", "--listen: required");
  expect_bad_input("node --id 1 --listen 127.0.0.1", "--listen: expected HOST:PORT");
  expect_bad_input("node --id 1 --listen 127.0.0.1:7001 --peers 2@nowhere",
                   "--peers: in '2@nowhere'");
  expect_bad_input("node --id 1 --listen 127.0.0.1:7001 --peers "
                   "2@127.0.0.1:7002,2@127.0.0.1:7003",
                   "--peers: node 2 is listed twice");
  expect_bad_input("node --id 1 --listen 127.0.0.1:7001 --peers 1@127.0.0.1:7009",
                   "--peers: lists this node (1) with 127.0.0.1:7009");
  expect_bad_input("node --id 1 --listen 127.0.0.1:7001 --peers 1@:7001 --algorithm raft",
                   "--algorithm:");
  expect_bad_input("node --id x --listen 127.0.0.1:7001", "--id");
  expect_bad_input("cluster up --nodes 0 --dir /tmp/x", "--nodes: expected 1 to 64");
  expect_bad_input("cluster up --dir /tmp/x --log-format xml", "--log-format: expected");
  expect_bad_input("node --id 1 --listen :7001 --peers 1@:7001 --log-format xml",
                   "--log-format: expected text or json");
  // Plaintext links are loopback-only; TLS files come all together.
  expect_bad_input("node --id 1 --listen 0.0.0.0:7001 --peers 1@0.0.0.0:7001",
                   "--listen: 0.0.0.0:7001 is beyond loopback");
  expect_bad_input("node --id 1 --listen :7001 --peers 1@:7001 --tls-ca /etc/hostname",
                   "give all three or none");
  // Readable TLS files that hold no certificate or key (checked before CAF's
  // OpenSSL module would abort on them).
  auto port = std::to_string(free_port());
  expect_bad_input("node --id 1 --listen :" + port + " --peers 1@:" + port
                       + " --tls-ca /etc/hostname --tls-cert /etc/hostname "
                         "--tls-key /etc/hostname",
                   "--tls-ca: /etc/hostname holds no PEM CA certificate");
  expect_bad_input("node --id 1 --listen :7001 --peers 1@:7001 --lease-ms 500",
                   "--lease-ms");
  expect_bad_input("cluster kill --dir /nonexistent --node 1",
                   "no cluster in /nonexistent");
  expect_bad_input("cluster kill --dir /tmp --node 1 --signal HUP", "--signal:");
}

TEST(node_cli, a_port_in_use_is_its_own_exit_status) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  auto port = std::to_string(ntohs(sa.sin_port));
  // 4 (not 2): `cluster up` retries on new ports when a node exits with it.
  expect_exit("node --id 1 --peers 1@127.0.0.1:" + port + " --listen 127.0.0.1:" + port,
              4, "port in use");
  expect_exit("node --id 1 --peers 1@127.0.0.1:1 --listen 127.0.0.1:1 --metrics "
              "127.0.0.1:"
                  + port,
              4, "--metrics: cannot listen on 127.0.0.1:" + port);
  ::close(fd);
}

TEST(node_cli, bad_config_files_are_exit_2_naming_file_and_setting) {
  temp_file unknown{"id = 1\nlisten = 127.0.0.1:7001\ncolour = blue\n"};
  expect_bad_input("node --config " + unknown.path.string(), "unknown setting 'colour'");
  temp_file other_section{"[store]\ndir = /tmp/x\n"};
  expect_bad_input("node --config " + other_section.path.string(),
                   "unknown section '[store]'");
  temp_file bad_value{"id = one\n"};
  expect_bad_input("node --config " + bad_value.path.string(), "setting 'id'");
  temp_file bad_peers{"id = 1\nlisten = 127.0.0.1:7001\npeers = 1@127.0.0.1:7001,3\n"};
  expect_bad_input("node --config " + bad_peers.path.string(),
                   "--peers: expected ID@HOST:PORT");
  expect_bad_input("node --config /nonexistent.ini", "--config: cannot read");
}

TEST(node_cli, flags_beat_environment_which_beats_the_config_file) {
  // Each source gives a different malformed --peers: the error names the winner.
  temp_file cfg{"id = 1\nlisten = 127.0.0.1:7001\npeers = 2@from-file\n"};
  auto args = "node --config " + cfg.path.string();
  auto r = run_conclave(args, true);
  EXPECT_NE(r.out.find("'2@from-file'"), std::string::npos) << r.out;
  ::setenv("CONCLAVE_PEERS", "2@unscoped", 1); // another command's: ignored
  r = run_conclave(args, true);
  EXPECT_NE(r.out.find("'2@from-file'"), std::string::npos) << r.out;
  ::unsetenv("CONCLAVE_PEERS");
  ::setenv("CONCLAVE_NODE_PEERS", "2@from-env", 1);
  r = run_conclave(args, true);
  EXPECT_NE(r.out.find("'2@from-env'"), std::string::npos) << r.out;
  r = run_conclave(args + " --peers 2@from-flag", true);
  EXPECT_NE(r.out.find("'2@from-flag'"), std::string::npos) << r.out;
  ::unsetenv("CONCLAVE_NODE_PEERS");
  EXPECT_EQ(r.status, 2);
}

TEST(node_cli, a_config_file_may_put_the_settings_in_a_node_section) {
  // Same malformed peers as above, under [node]: the error proves it was read.
  temp_file cfg{"[node]\nid = 1\nlisten = 127.0.0.1:7001\npeers = 2@from-section\n"};
  auto r = run_conclave("node --config " + cfg.path.string(), true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("'2@from-section'"), std::string::npos) << r.out;
}

TEST(node_cli, peers_are_required) {
  expect_bad_input("node --id 1 --listen 127.0.0.1:7001", "--peers: required");
}

TEST(node_cli, version_and_unknown_commands) {
  auto v = run_conclave("--version", true);
  EXPECT_EQ(v.status, 0) << v.out;
  EXPECT_EQ(v.out.rfind("conclave ", 0), 0u) << v.out;
  expect_bad_input("foo", "unknown command 'foo'; commands: version, sim, node, cluster");
}

TEST(node_cli, every_client_command_takes_the_same_cluster_access_flags) {
  // kv, job, lock, elect and leader reach a cluster the same way: the same
  // flags with the same help, each with its own CONCLAVE_<COMMAND>_ variable.
  auto flag_lines = [](const std::string& help) {
    std::map<std::string, std::string> out;
    std::istringstream in{help};
    std::string flag;
    for (std::string l; std::getline(in, l);) {
      for (auto f :
           {"--dir", "--peers", "--cluster", "--tls-ca", "--tls-cert", "--tls-key"})
        if (l.find(std::string{"  "} + f + " ") == 0) {
          flag = f;
          out[flag] = "";
          l.clear();
        }
      if (!flag.empty() && l.rfind("    ", 0) == 0)
        out[flag] += l.substr(l.find_first_not_of(' ')) + " ";
      else if (!l.empty())
        flag.clear();
    }
    return out;
  };
  std::map<std::string, std::string> first;
  for (std::string cmd : {"kv", "job submit", "lock", "elect", "leader"}) {
    auto r = run_conclave(cmd + " --help");
    EXPECT_EQ(r.status, 0) << cmd << "\n" << r.out;
    auto lines = flag_lines(r.out);
    EXPECT_EQ(lines.size(), 6u) << cmd << "\n" << r.out;
    for (auto& [flag, text] : lines) {
      if (first.count(flag) == 0)
        first[flag] = text;
      EXPECT_EQ(text, first[flag]) << cmd << " " << flag;
    }
    auto upper = cmd.substr(0, cmd.find(' '));
    for (auto& c : upper)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_NE(r.out.find("CONCLAVE_" + upper + "_TLS_CERT"), std::string::npos) << r.out;
  }
}
