// conclave lock | elect | leader: leases of a running cluster's store from the
// shell (docs/locks.md).
//
// - lock NAME -- CMD ARGS...: acquires the lease (a semaphore with -n N),
//   runs CMD under it (runtime/lock/run_locked.hpp: own process group,
//   renewals, SIGTERM then SIGKILL before the lease can be granted to anyone
//   else, a watchdog process for when this process is stopped), releases it
//   and exits with CMD's status.
// - elect NAME [-- CMD]: campaigns for the lease (waits as long as it takes),
//   prints "elected", then runs CMD like lock does, or without CMD
//   holds the lease until SIGINT or SIGTERM. --observe prints each new holder
//   instead of campaigning.
// - leader [--watch]: the node whose replica acts as primary of the cluster,
//   as the acting primary itself answers (and each change, with --watch).
#include "runtime/cli/access_flags.hpp"
#include "runtime/cli/commands.hpp"

#include "actors/replication/lease_client.hpp"
#include "runtime/cluster/store_access.hpp"
#include "runtime/lock/duration_text.hpp"
#include "runtime/lock/run_locked.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

namespace conclave::cli {

namespace {

namespace rp = conclave::replication;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

struct lease_cli_options {
  cluster::store_access access;
  std::string name;
  std::string ttl = "10s";
  std::string grace = "2s";
  std::string renew_interval;
  std::string margin;
  std::string wait = "0";
  std::string interval = "200ms";
  uint32_t limit = 1;
  std::string label;
  bool observe = false;
  bool watch = false;
  bool json = false;
  std::vector<std::string> cmd;
};

/// Ends the process without CAF's orderly shutdown (see kv_command.cpp:
/// a frozen member's unfinished TLS handshake would hold it up).
[[noreturn]] void lock_exit_now(int status) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(status);
}

ms ceil_ms(std::chrono::nanoseconds d) {
  return std::chrono::ceil<ms>(d);
}

/// The lease as `conclave lock` sees it: lease_client over the connection.
class store_lease_session final : public lock::lease_session {
public:
  store_lease_session(cluster::store_connection& conn, std::string name,
                      rp::lease_params params)
      : client_(conn.system(), conn.client_options()), name_(std::move(name)),
        holder_(rp::lease_client::make_holder_id()), params_(std::move(params)) {}

  std::optional<uint64_t> acquire(ms wait, std::string& error) override {
    auto r = client_.acquire(name_, holder_, params_, wait);
    if (r.code == rp::errc::ok)
      return r.token;
    error = describe_refusal(r);
    return std::nullopt;
  }

  lock::renew_outcome renew(uint64_t token, ms budget) override {
    auto r = client_.renew(name_, holder_, token, params_.ttl, budget);
    if (r.code == rp::errc::ok)
      return lock::renew_outcome::ok;
    if (r.code == rp::errc::stale_token)
      return lock::renew_outcome::lost;
    return lock::renew_outcome::unknown;
  }

  void release(uint64_t token) override {
    (void)client_.release(name_, holder_, token, 2000ms);
  }

  static std::string describe_refusal(const rp::lease_answer& r) {
    if (r.code == rp::errc::lease_busy) {
      std::string out = "busy";
      if (r.holders && !r.holders->holders.empty()) {
        out += ", held by";
        for (auto& h : r.holders->holders)
          out += " [" + h.label + " token " + std::to_string(h.token) + "]";
      }
      return out;
    }
    if (r.code == rp::errc::timeout)
      return "no answer from the cluster's primary in time";
    return std::string{rp::to_string(r.code)};
  }

private:
  rp::lease_client client_;
  std::string name_;
  std::string holder_;
  rp::lease_params params_;
};

std::optional<std::chrono::nanoseconds>
duration_flag(const std::string& flag, const std::string& text, std::string& error) {
  auto d = lock::parse_duration(text);
  if (!d) {
    error = flag + ": " + d.error();
    return std::nullopt;
  }
  return d.value();
}

/// Settles the access, the name and the timing; the one-line error otherwise.
std::optional<std::string> settle(lease_cli_options& o, lock::lock_timing& timing,
                                  std::map<uint64_t, node::address>& members) {
  if (auto e = cluster::settle_access(o.access))
    return e;
  if (auto e = cluster::parse_members(o.access, members))
    return e;
  if (o.name.empty())
    return std::string{"NAME: the lease's name must not be empty"};
  if (o.limit == 0 || o.limit > rp::max_lease_limit)
    return "-n: expected 1.." + std::to_string(rp::max_lease_limit);
  std::string err;
  lock::lock_timing_options t;
  auto ttl = duration_flag("--ttl", o.ttl, err);
  if (!ttl)
    return err;
  t.ttl = *ttl;
  auto grace = duration_flag("--grace", o.grace, err);
  if (!grace)
    return err;
  t.grace = *grace;
  if (!o.renew_interval.empty()) {
    auto d = duration_flag("--renew-interval", o.renew_interval, err);
    if (!d)
      return err;
    t.renew_interval = *d;
  }
  if (!o.margin.empty()) {
    auto d = duration_flag("--margin", o.margin, err);
    if (!d)
      return err;
    t.margin = *d;
  }
  auto checked = lock::check_timing(t);
  if (!checked)
    return checked.error();
  timing = checked.value();
  return std::nullopt;
}

rp::lease_params params_of(const lease_cli_options& o, const lock::lock_timing& t) {
  rp::lease_params p;
  // The store's ttl is never shorter than the holder's: rounded up.
  p.ttl = ceil_ms(t.ttl);
  p.limit = o.limit;
  p.label = rp::lease_client::default_label(o.label);
  return p;
}

int run_lock(lease_cli_options& o, bool campaign) {
  lock::lock_timing timing;
  std::map<uint64_t, node::address> members;
  if (auto e = settle(o, timing, members))
    return bad_input(*e);
  std::string err;
  ms wait = campaign ? ms(std::chrono::hours(24 * 365)) : ms(0);
  if (!campaign) {
    auto w = duration_flag("--wait", o.wait, err);
    if (!w)
      return bad_input(err);
    wait = ceil_ms(*w);
  }
  if (!campaign && o.cmd.empty())
    return bad_input(
        "give the command to run after --: conclave lock NAME -- CMD ARGS...");
  cluster::store_connection conn{o.access, members};
  conn.wait_ready(500ms);
  store_lease_session session{conn, o.name, params_of(o, timing)};
  bool hold_only = o.cmd.empty();
  if (hold_only) {
    // elect without a command: hold until SIGINT / SIGTERM.
    o.cmd = {"/bin/sh", "-c", "exec sleep 2147483647"};
  }
  lock::lock_options lo;
  lo.name = o.name;
  lo.timing = lock::lock_timing_options{timing.ttl, timing.grace, timing.renew_interval,
                                        timing.margin};
  lo.wait = wait;
  lock::run_hooks hooks;
  if (campaign)
    hooks.started = [&](pid_t, pid_t) { std::cout << "elected" << std::endl; };
  auto status = lock::run_locked(lo, session, o.cmd, std::cerr, hooks);
  // Holding without a command, SIGTERM or SIGINT is how one stops: exit 0.
  if (hold_only && (status == 128 + SIGTERM || status == 128 + SIGINT))
    status = exit_ok;
  lock_exit_now(status);
}

std::atomic<bool> lock_interrupted{false};

extern "C" void lock_on_interrupt(int) {
  lock_interrupted.store(true);
}

/// Runs `poll` every interval until SIGINT or SIGTERM.
void until_interrupted(ms interval, const std::function<void()>& poll) {
  std::signal(SIGINT, lock_on_interrupt);
  std::signal(SIGTERM, lock_on_interrupt);
  while (!lock_interrupted.load()) {
    poll();
    auto end = std::chrono::steady_clock::now() + interval;
    while (!lock_interrupted.load() && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::min<ms>(interval, 20ms));
  }
}

std::string utc_now() {
  auto t = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(t);
  auto millis = std::chrono::duration_cast<ms>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                tm.tm_sec, static_cast<int>(millis));
  return buf;
}

/// --interval and the access of observe and leader: the one-line error.
std::optional<std::string> settle_watch(lease_cli_options& o,
                                        std::chrono::nanoseconds& interval,
                                        std::map<uint64_t, node::address>& members) {
  std::string err;
  auto i = duration_flag("--interval", o.interval, err);
  if (!i)
    return err;
  if (*i < 1ms)
    return std::string{"--interval: at least 1ms"};
  interval = *i;
  if (auto e = cluster::settle_access(o.access))
    return e;
  return cluster::parse_members(o.access, members);
}

int run_observe(lease_cli_options& o) {
  std::chrono::nanoseconds interval{0};
  std::map<uint64_t, node::address> members;
  if (auto e = settle_watch(o, interval, members))
    return bad_input(*e);
  if (o.name.empty())
    return bad_input("NAME: the lease's name must not be empty");
  cluster::store_connection conn{o.access, members};
  conn.wait_ready(500ms);
  rp::lease_client client{conn.system(), conn.client_options()};
  std::optional<std::string> last;
  until_interrupted(ceil_ms(interval), [&] {
    auto r = client.holders(o.name, 2000ms);
    if (r.code != rp::errc::ok || !r.holders)
      return; // no primary right now: the last line printed still stands
    std::string line;
    nlohmann::json holders = nlohmann::json::array();
    for (auto& h : r.holders->holders) {
      line += (line.empty() ? "" : ", ") + h.label + " token " + std::to_string(h.token);
      holders.push_back({{"holder", h.holder}, {"token", h.token}, {"label", h.label}});
    }
    if (line.empty())
      line = "none";
    if (last && *last == line)
      return;
    last = line;
    if (o.json)
      std::cout << nlohmann::json{{"time", utc_now()},
                                  {"lease", o.name},
                                  {"holders", holders}}
                       .dump()
                << std::endl;
    else
      std::cout << utc_now() << " " << o.name << ": " << line << std::endl;
  });
  lock_exit_now(exit_ok);
}

int run_leader(lease_cli_options& o) {
  std::chrono::nanoseconds interval{0};
  std::map<uint64_t, node::address> members;
  if (auto e = settle_watch(o, interval, members))
    return bad_input(*e);
  cluster::store_connection conn{o.access, members};
  conn.wait_ready(500ms);
  // A read is answered only by an acting primary (the others send the client
  // on): whoever answers leads now.
  auto ask = [&]() -> uint64_t {
    auto opts = conn.client_options();
    opts.deadline = 2s;
    opts.attempt_timeout = 500ms;
    rp::kv_client c{conn.system(), opts};
    auto r = c.get(rp::lease_collection, "");
    return r.code == rp::errc::ok ? r.primary.value : 0;
  };
  auto print = [&](uint64_t id) {
    auto where = members.count(id) ? members.at(id).to_string() : std::string{};
    if (o.json)
      std::cout << nlohmann::json{{"time", utc_now()}, {"leader", id}, {"address", where}}
                       .dump()
                << std::endl;
    else if (o.watch)
      std::cout << utc_now() << " leader " << id << " " << where << std::endl;
    else
      std::cout << id << " " << where << std::endl;
  };
  if (!o.watch) {
    auto id = ask();
    if (id == 0) {
      std::cerr << "conclave: error: no acting leader answered within 2 s\n";
      lock_exit_now(exit_failure);
    }
    print(id);
    lock_exit_now(exit_ok);
  }
  uint64_t last = 0;
  until_interrupted(ceil_ms(interval), [&] {
    auto id = ask();
    if (id != 0 && id != last) {
      last = id;
      print(id);
    }
  });
  lock_exit_now(exit_ok);
}

void add_lease_flags(CLI::App* sub, lease_cli_options& o) {
  add_access_flags(sub, o.access);
  option(sub, "--ttl", o.ttl, "how long the lease lasts without a renewal")
      ->capture_default_str();
  option(sub, "--grace", o.grace,
         "between SIGTERM and SIGKILL when the lease is lost or cannot be renewed")
      ->capture_default_str();
  option(sub, "--renew-interval", o.renew_interval,
         "how often to renew (default: ttl/3)");
  option(sub, "--margin", o.margin,
         "allowance for this host's clock and for a kill to take effect (default: "
         "max(ttl/50, 50ms))");
  option(sub, "--label", o.label, "shown with the holder, after \"HOST pid PID\"");
}

} // namespace

void add_lock_commands(command_registry& reg) {
  auto defaults = lock::check_timing(lock::lock_timing_options{});
  std::string inequality =
      defaults ? lock::describe_timing(defaults.value()) : std::string{};

  auto lk = std::make_shared<lease_cli_options>();
  auto* lock =
      reg.add("lock",
              "Run a command while holding a lease of the cluster's store; it is killed "
              "before anyone else can be granted the lease (defaults: "
                  + inequality + ")",
              [lk] { return run_lock(*lk, false); });
  lock->add_option("NAME", lk->name, "the lease")->required();
  lock->add_option("CMD", lk->cmd, "the command and its arguments, after --");
  add_lease_flags(lock, *lk);
  lock->add_option("-n,--limit", lk->limit, "slots of the lease (a semaphore when > 1)")
      ->envname(env_name("--limit"))
      ->capture_default_str();
  option(lock, "--wait", lk->wait, "how long to wait for the lease (0: one try)")
      ->capture_default_str();
  lock->footer("Exit status: CMD's own (128+N if signal N ended it); 69 lease not "
               "granted within --wait; 75 CMD stopped because the lease was lost; "
               "2 bad input; 70 internal error. CMD gets CONCLAVE_LOCK_NAME and "
               "CONCLAVE_LOCK_TOKEN (the fencing token).");

  auto el = std::make_shared<lease_cli_options>();
  auto* elect = reg.add(
      "elect",
      "Campaign for a lease of the cluster's store and lead while holding it: run a "
      "command (killed like `lock` does when leadership is lost) or hold until "
      "SIGINT; --observe prints each new leader",
      [el] { return el->observe ? run_observe(*el) : run_lock(*el, true); });
  elect->add_option("NAME", el->name, "the lease")->required();
  elect->add_option("CMD", el->cmd, "the command to run while leading, after --");
  add_lease_flags(elect, *el);
  elect->add_flag("--observe", el->observe, "print each new holder, do not campaign");
  option(elect, "--interval", el->interval, "--observe: how often to look")
      ->capture_default_str();
  elect->add_flag("--json", el->json, "--observe: one JSON object per change");

  auto ld = std::make_shared<lease_cli_options>();
  auto* leader =
      reg.add("leader", "Print the node that leads the cluster (its acting primary)",
              [ld] { return run_leader(*ld); });
  add_access_flags(leader, ld->access);
  leader->add_flag("--watch", ld->watch, "print each change until SIGINT");
  option(leader, "--interval", ld->interval, "--watch: how often to ask")
      ->capture_default_str();
  leader->add_flag("--json", ld->json, "one JSON object per line");
}

} // namespace conclave::cli
