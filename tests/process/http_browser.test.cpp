// The status page (GET /) in a real headless Chromium, driven through
// chromedriver's WebDriver HTTP API, against a 3-node TLS cluster on
// loopback: the page shows the leader; after kill -9 of the leader (the node
// the page was loaded from) it shows the node it lost and the new leader
// within 1 s; a job submitted through POST /v1/jobs appears on it and
// reaches `processed` there. A screenshot is kept in the build
// directory. Skipped when chromium or chromedriver is not installed.
//
// The cluster's certificates come from its own CA, which Chromium does not
// know: this test (only) starts it with --ignore-certificate-errors.
#include "tests/process/process_support.hpp"

#include <httplib.h>
#include <openssl/evp.h>

#include <csignal>
#include <fcntl.h>

using namespace conclave::process_test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const char* const chromium_bin = "/usr/bin/chromium";
const char* const chromedriver_bin = "/usr/bin/chromedriver";

/// chromedriver as a child in its own process group (Chromium, which it
/// starts, joins the group): stopped with the whole group, which holds only
/// processes this test started.
class chromedriver {
public:
  chromedriver(uint16_t port, const std::filesystem::path& log) : port_{port} {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      auto p = "--port=" + std::to_string(port);
      ::execl(chromedriver_bin, chromedriver_bin, p.c_str(), "--allowed-ips=127.0.0.1",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (pid_ > 0)
      ::setpgid(pid_, pid_);
  }
  ~chromedriver() {
    if (pid_ <= 0)
      return;
    ::kill(-pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        ::kill(-pid_, SIGKILL); // a Chromium child left behind
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  uint16_t port() const { return port_; }

private:
  uint16_t port_;
  pid_t pid_ = -1;
};

/// A WebDriver session: the few commands this test needs.
class browser {
public:
  browser(uint16_t port, const std::filesystem::path& profile)
      : http_{"127.0.0.1", port} {
    http_.set_connection_timeout(2);
    http_.set_read_timeout(30);
    // chromedriver answers /status once it listens.
    for (int i = 0; i < 100; ++i) {
      if (auto r = http_.Get("/status"); r && r->status == 200)
        break;
      std::this_thread::sleep_for(50ms);
    }
    json args = json::array(
        {"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--ignore-certificate-errors",
         "--window-size=1280,900", "--user-data-dir=" + profile.string()});
    json caps{{"capabilities",
               {{"alwaysMatch",
                 {{"browserName", "chrome"},
                  {"acceptInsecureCerts", true},
                  {"goog:chromeOptions", {{"binary", chromium_bin}, {"args", args}}}}}}}};
    auto r = http_.Post("/session", caps.dump(), "application/json");
    if (!r) {
      error_ = "chromedriver did not answer POST /session";
      return;
    }
    auto j = json::parse(r->body, nullptr, false);
    if (r->status != 200 || j.is_discarded() || !j["value"].contains("sessionId")) {
      error_ = "no session: " + r->body.substr(0, 400);
      return;
    }
    session_ = j["value"]["sessionId"].get<std::string>();
  }
  ~browser() {
    if (!session_.empty())
      http_.Delete(("/session/" + session_).c_str());
  }
  const std::string& error() const { return error_; }

  bool go(const std::string& url) {
    auto r = command("url", {{"url", url}});
    return r.has_value();
  }

  /// Runs `script` (a function body) in the page; its return value.
  json eval(const std::string& script) {
    auto r = command("execute/sync", {{"script", script}, {"args", json::array()}});
    return r ? *r : json{};
  }

  /// The page as PNG bytes.
  std::string screenshot() {
    auto r = http_.Get(("/session/" + session_ + "/screenshot").c_str());
    if (!r || r->status != 200)
      return {};
    auto b64 = json::parse(r->body)["value"].get<std::string>();
    std::string out(b64.size() / 4 * 3 + 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(b64.data()),
                            static_cast<int>(b64.size()));
    if (n < 0)
      return {};
    // EVP_DecodeBlock counts the padding's zero bytes.
    size_t pad = b64.size() >= 2 && b64[b64.size() - 1] == '='
                     ? (b64[b64.size() - 2] == '=' ? 2 : 1)
                     : 0;
    out.resize(static_cast<size_t>(n) - pad);
    return out;
  }

private:
  std::optional<json> command(const std::string& what, const json& body) {
    auto r = http_.Post(("/session/" + session_ + "/" + what).c_str(), body.dump(),
                        "application/json");
    if (!r || r->status != 200)
      return std::nullopt;
    auto j = json::parse(r->body, nullptr, false);
    if (j.is_discarded())
      return std::nullopt;
    return j["value"];
  }

  httplib::Client http_;
  std::string session_;
  std::string error_;
};

std::string text_of(browser& b, const std::string& id) {
  auto v = b.eval("var e = document.getElementById('" + id
                  + "'); return e ? e.textContent : '';");
  return v.is_string() ? v.get<std::string>() : "";
}

/// The leader the page shows (0: none).
uint64_t page_leader(browser& b) {
  auto v = b.eval("return document.getElementById('leader').dataset.leader;");
  return v.is_string() ? std::stoull(v.get<std::string>()) : 0;
}

using http_browser = cluster_test;

TEST_F(http_browser, the_status_page_follows_a_leader_kill_and_a_job) {
  if (::access(chromium_bin, X_OK) != 0 || ::access(chromedriver_bin, X_OK) != 0)
    GTEST_SKIP() << "chromium or chromedriver not installed (" << chromium_bin << ", "
                 << chromedriver_bin
                 << "): apt-get install chromium chromium-driver (scripts/setup.sh)";
  up(3);
  auto st = status();
  auto leader = st["nodes"][0]["leader"].get<uint64_t>();
  ASSERT_NE(leader, 0u);
  std::string leader_http;
  int leader_pid = 0;
  for (auto& n : st["nodes"])
    if (n["id"].get<uint64_t>() == leader) {
      leader_http = n["http"].get<std::string>();
      leader_pid = n["pid"].get<int>();
    }
  ASSERT_FALSE(leader_http.empty());
  ASSERT_GT(leader_pid, 1);

  std::filesystem::create_directories(dir / "chromium-profile");
  chromedriver driver{free_port(), dir / "chromedriver.log"};
  browser b{driver.port(), dir / "chromium-profile"};
  ASSERT_TRUE(b.error().empty()) << b.error() << "\n"
                                 << read_file(dir / "chromedriver.log");
  ASSERT_TRUE(b.go("https://" + leader_http + "/"));

  // The page shows the leader and that it is live from the stream.
  ASSERT_TRUE(eventually([&] { return page_leader(b) == leader; }, 10s))
      << "page shows leader " << page_leader(b) << ", cluster says " << leader;
  ASSERT_TRUE(
      eventually([&] { return has(text_of(b, "connection"), "live from node"); }, 5s))
      << text_of(b, "connection");
  // The members come from /v1/cluster, fetched after the page loads; the page
  // can move to another member after the kill only once it knows them.
  nlohmann::json members;
  ASSERT_TRUE(eventually(
      [&] {
        members = b.eval("return document.querySelectorAll('#members tbody tr').length;");
        return members == 3;
      },
      10s))
      << "members shown: " << members.dump();

  // kill -9 of the leader, a process this test's cluster started.
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(leader_pid, SIGKILL), 0);
  uint64_t shown = leader;
  bool moved = eventually(
      [&] {
        shown = page_leader(b);
        return shown != 0 && shown != leader;
      },
      10s);
  auto took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now()
                                                        - killed_at)
                  .count();
  ASSERT_TRUE(moved) << "page still shows leader " << shown;
  std::cout << "[ figures ] kill -9 of the leader to the new leader (node " << shown
            << ") on the page: " << took << " ms\n";
  EXPECT_LT(took, 1000.0);
  EXPECT_TRUE(has(text_of(b, "lost"), "lost node " + std::to_string(leader)))
      << text_of(b, "lost");
  // The page agrees with the cluster.
  ASSERT_TRUE(eventually(
      [&] {
        auto s = run_conclave("cluster status --json --dir " + dir.string());
        auto j = json::parse(s.out, nullptr, false);
        if (j.is_discarded())
          return false;
        for (auto& n : j["nodes"])
          if (n.value("alive", false) && n.value("leader", uint64_t{0}) == shown)
            return true;
        return false;
      },
      5s));

  // A job submitted through the API (with the client certificate writes
  // need) appears on the page and reaches `processed` there.
  auto now_base = b.eval("return window.conclaveStatus.base;");
  ASSERT_TRUE(now_base.is_string());
  auto base = now_base.get<std::string>().substr(std::string{"https://"}.size());
  httplib::SSLClient api{
      base.substr(0, base.rfind(':')), std::stoi(base.substr(base.rfind(':') + 1)),
      (dir / "tls" / "client.pem").string(), (dir / "tls" / "client.key").string()};
  api.enable_server_certificate_verification(false);
  api.set_connection_timeout(2);
  api.set_read_timeout(8);
  auto sub = api.Post("/v1/jobs", R"({"steps": [{"kind": "sleep", "payload": "200"}]})",
                      "application/json");
  ASSERT_TRUE(sub);
  ASSERT_EQ(sub->status, 201) << sub->body;
  auto id = json::parse(sub->body)["id"].get<std::string>();
  auto state_of = [&] {
    auto v = b.eval("var r = document.querySelector('#jobs tr[data-job-id=\"" + id
                    + "\"]'); return r ? r.dataset.state : '';");
    return v.is_string() ? v.get<std::string>() : "";
  };
  EXPECT_TRUE(eventually([&] { return !state_of().empty(); }, 10s))
      << "job " << id << " never appeared";
  EXPECT_TRUE(eventually([&] { return state_of() == "processed"; }, 30s))
      << "job " << id << " is " << state_of();

  auto png = b.screenshot();
  EXPECT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  std::ofstream{BROWSER_SCREENSHOT, std::ios::binary} << png;
  std::cout << "[ note ] screenshot: " << BROWSER_SCREENSHOT << "\n";
}

} // namespace
