#include "runtime/cluster/cluster_init.hpp"

#include "runtime/cluster/cluster.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace conclave::cluster;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

init_options three_hosts() {
  init_options o;
  o.hosts = "1@10.0.0.1:7001,2@10.0.0.2:7001,3@db3.example:7001";
  o.dir = "/out";
  o.cluster = "prod";
  return o;
}

const planned_file* find(const init_plan& p, const std::string& path) {
  auto i = std::find_if(p.files.begin(), p.files.end(),
                        [&](const planned_file& f) { return f.path == path; });
  return i == p.files.end() ? nullptr : &*i;
}

} // namespace

TEST(cluster_init, hosts_parse_in_the_order_given) {
  auto h = parse_hosts(" 3@10.0.0.3:7003, 1@10.0.0.1:7001 ,2@db2.example:7002");
  ASSERT_TRUE(h) << h.error();
  ASSERT_EQ(h.value().size(), 3u);
  EXPECT_EQ(h.value()[0].id, 3u);
  EXPECT_EQ(h.value()[0].address.to_string(), "10.0.0.3:7003");
  EXPECT_EQ(h.value()[1].id, 1u);
  EXPECT_EQ(h.value()[2].address.host, "db2.example");
  EXPECT_EQ(h.value()[2].address.port, 7002);
  // Two nodes on one host, on distinct ports.
  EXPECT_TRUE(parse_hosts("1@10.0.0.1:7001,2@10.0.0.1:7002"));
}

TEST(cluster_init, bad_hosts_are_refused_with_the_entry_named) {
  auto error = [](const std::string& text) {
    auto h = parse_hosts(text);
    return h ? std::string{"accepted"} : h.error();
  };
  EXPECT_TRUE(contains(error(""), "got nothing"));
  EXPECT_TRUE(
      contains(error("10.0.0.1:7001"), "expected ID@HOST:PORT, got '10.0.0.1:7001'"));
  EXPECT_TRUE(contains(error("0@10.0.0.1:7001"), "an id of at least 1"));
  EXPECT_TRUE(contains(error("x@10.0.0.1:7001"), "got 'x@10.0.0.1:7001'"));
  EXPECT_TRUE(contains(error("1@10.0.0.1"), "in '1@10.0.0.1'"));
  EXPECT_TRUE(contains(error("1@:7001"), "the address the other hosts reach it at"));
  EXPECT_TRUE(contains(error("1@10.0.0.1:0"), "port from 1 to 65535"));
  EXPECT_TRUE(contains(error("1@10.0.0.1:70000"), "port from 1 to 65535"));
  EXPECT_TRUE(contains(error("1@0.0.0.0:7001"), "0.0.0.0 is a wildcard"));
  EXPECT_TRUE(contains(error("1@10.0.0.1:7001,"), "got ''"));
  EXPECT_TRUE(
      contains(error("1@10.0.0.1:7001,1@10.0.0.2:7001"), "node 1 is listed twice"));
  EXPECT_TRUE(contains(error("1@10.0.0.1:7001,2@10.0.0.1:7001"),
                       "nodes 1 and 2 share the address 10.0.0.1:7001"));
}

TEST(cluster_init, the_plan_lists_every_file_with_its_mode) {
  auto p = plan_init(three_hosts());
  ASSERT_TRUE(p) << p.error();
  std::vector<std::string> paths;
  for (auto& f : p.value().files)
    paths.push_back(f.path);
  std::vector<std::string> expected{"cluster.json"};
  for (auto n : {"node-1", "node-2", "node-3"})
    for (auto f : {std::string{n} + ".conf", std::string{"ca.pem"},
                   std::string{n} + ".pem", std::string{n} + ".key"})
      expected.push_back(std::string{n} + "/" + f);
  for (auto f : {"client/ca.pem", "client/client.pem", "client/client.key",
                 "conclave-node@.service"})
    expected.push_back(f);
  EXPECT_EQ(paths, expected);
  for (auto& f : p.value().files) {
    bool key = f.path.size() > 4 && f.path.substr(f.path.size() - 4) == ".key";
    EXPECT_EQ(f.mode, key ? 0600u : 0644u) << f.path;
    // Certificates and keys come from the certificate step, the rest is text.
    bool from_certs = key || f.path.substr(f.path.size() - 4) == ".pem";
    EXPECT_EQ(!f.from_ca_dir.empty(), from_certs) << f.path;
    EXPECT_EQ(f.content.empty(), from_certs) << f.path;
  }
  EXPECT_EQ(find(p.value(), "node-2/node-2.key")->from_ca_dir, "node-2.key");
  EXPECT_EQ(find(p.value(), "client/ca.pem")->from_ca_dir, "ca.pem");
  // With a metrics port, Prometheus gets its targets too.
  auto o = three_hosts();
  o.metrics_port = 9101;
  auto with_metrics = plan_init(o);
  ASSERT_TRUE(with_metrics);
  auto* targets = find(with_metrics.value(), "prometheus-targets.json");
  ASSERT_NE(targets, nullptr);
  auto j = nlohmann::json::parse(targets->content);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[2]["targets"][0], "db3.example:9101");
  EXPECT_EQ(j[2]["labels"]["node"], "3");
}

TEST(cluster_init, a_node_config_names_its_host_address_peers_and_files_on_the_host) {
  auto o = three_hosts();
  o.metrics_port = 9101;
  o.data_dir = "/srv/conclave";
  auto hosts = parse_hosts(o.hosts).value();
  auto text = node_config_text(o, hosts, hosts[1]);
  for (auto line :
       {"id = 2\n", "cluster = prod\n", "listen = 10.0.0.2:7001\n",
        "peers = 1@10.0.0.1:7001,2@10.0.0.2:7001,3@db3.example:7001\n",
        "metrics = 10.0.0.2:9101\n", "data-dir = /srv/conclave/node-2\n",
        "tls-ca = /etc/conclave/ca.pem\n", "tls-cert = /etc/conclave/node-2.pem\n",
        "tls-key = /etc/conclave/node-2.key\n"})
    EXPECT_TRUE(contains(text, line)) << line << "\n" << text;
  // Without a metrics port there is no metrics line.
  o.metrics_port = 0;
  EXPECT_FALSE(contains(node_config_text(o, hosts, hosts[0]), "metrics"));
}

TEST(cluster_init, the_unit_starts_the_instance_config_and_restarts_on_failure) {
  auto o = three_hosts();
  auto unit = systemd_unit_text(o);
  EXPECT_TRUE(contains(unit, "ExecStart=/usr/local/bin/conclave node --config "
                             "/etc/conclave/node-%i.conf\n"))
      << unit;
  EXPECT_TRUE(contains(unit, "Restart=on-failure\n"));
  EXPECT_TRUE(contains(unit, "RestartPreventExitStatus=2\n"));
  EXPECT_TRUE(contains(unit, "StateDirectory=conclave\n"));
  o.data_dir = "/srv/conclave";
  EXPECT_FALSE(contains(systemd_unit_text(o), "StateDirectory"));
}

TEST(cluster_init, bad_options_name_the_flag) {
  auto error = [](init_options o) {
    auto p = plan_init(o);
    return p ? std::string{"accepted"} : p.error();
  };
  auto o = three_hosts();
  o.hosts = "";
  EXPECT_TRUE(contains(error(o), "--hosts: required"));
  o = three_hosts();
  o.hosts = "1@10.0.0.1:7001,1@10.0.0.2:7001";
  EXPECT_TRUE(contains(error(o), "--hosts: node 1 is listed twice"));
  o = three_hosts();
  o.ca_cert = "/ca.pem";
  EXPECT_TRUE(contains(error(o), "--ca-cert: given without --ca-key"));
  o = three_hosts();
  o.ca_key = "/ca.key";
  EXPECT_TRUE(contains(error(o), "--ca-key: given without --ca-cert"));
  o = three_hosts();
  o.cluster = "a/b";
  EXPECT_TRUE(contains(error(o), "--cluster: expected"));
  o = three_hosts();
  o.metrics_port = 7001;
  EXPECT_TRUE(contains(error(o), "--metrics-port: 7001 is also the peer port of node 1"));
  o = three_hosts();
  o.hosts = "1@10.0.0.1:7001,2@10.0.0.1:7002";
  o.metrics_port = 9101;
  EXPECT_TRUE(
      contains(error(o), "--metrics-port: nodes 1 and 2 share the host 10.0.0.1"));
  o = three_hosts();
  o.data_dir = "var/lib/conclave";
  EXPECT_TRUE(contains(error(o), "--data-dir: expected an absolute path"));
  o = three_hosts();
  o.config_dir = "/etc/my conclave";
  EXPECT_TRUE(contains(error(o), "--config-dir: no spaces"));
  o = three_hosts();
  o.days = 0;
  EXPECT_TRUE(contains(error(o), "--days: expected"));
  o = three_hosts();
  o.dir = "";
  EXPECT_TRUE(contains(error(o), "--dir: required"));
}

TEST(cluster_init, cluster_json_gives_kv_the_members_and_the_client_certificate) {
  conclave::test::temp_dir out{"conclave-init-json"};
  auto o = three_hosts();
  auto plan = plan_init(o);
  ASSERT_TRUE(plan);
  std::ofstream{out / "cluster.json"} << find(plan.value(), "cluster.json")->content;
  fs::create_directories(out / "client");
  for (auto f : {"ca.pem", "client.pem", "client.key"})
    std::ofstream{out / "client" / f} << "x";
  auto a = client_access_of(out.path().string());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->cluster, "prod");
  EXPECT_EQ(a->peers, "1@10.0.0.1:7001,2@10.0.0.2:7001,3@db3.example:7001");
  EXPECT_TRUE(a->tls);
  EXPECT_EQ(a->cert, (out / "client" / "client.pem").string());
  EXPECT_EQ(a->ca, (out / "client" / "ca.pem").string());
  EXPECT_EQ(a->key, (out / "client" / "client.key").string());
}
