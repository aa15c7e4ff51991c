// conclave kv get|put|delete|list|enqueue|dequeue: a client of a running
// cluster's replicated store, for scripts and operators. See docs/node.md
// ("conclave kv").
//
// It asks a member's gate for the replica's front (client hello), sends the
// transaction or read there, and follows the answer: a secondary or a
// syncing primary answers with the primary's id, and kv retries on that
// member (its address from --peers); a member that does not answer is
// skipped for the next one. Everything is bounded by --timeout-ms.
#include "runtime/cli/commands.hpp"

#include "actors/replication/type_ids.hpp"
#include "runtime/cluster/client_connect.hpp"
#include "runtime/cluster/cluster.hpp"
#include "runtime/node/node_config.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

namespace conclave::cli {

namespace {

namespace rp = conclave::replication;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

struct kv_options {
  std::string peers;
  std::string cluster = "conclave";
  std::string cluster_dir;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string collection = "kv";
  unsigned timeout_ms = 5000;
  uint64_t at = 0;
  bool weak = false;
  bool json = false;
  std::string key;
  std::string value;
  CLI::App* get = nullptr;
  CLI::App* put = nullptr;
  CLI::App* del = nullptr;
  CLI::App* list = nullptr;
  CLI::App* enqueue = nullptr;
  CLI::App* dequeue = nullptr;
  uint32_t limit = 0;
};

/// Where to go next: the members in order, the primary first once named.
class route {
public:
  explicit route(std::map<uint64_t, node::address> members)
      : members_(std::move(members)), next_(members_.begin()) {}

  std::pair<uint64_t, node::address> next() {
    if (preferred_) {
      auto id = *preferred_;
      preferred_.reset();
      if (auto i = members_.find(id); i != members_.end())
        return *i;
    }
    if (next_ == members_.end())
      next_ = members_.begin();
    return *next_++;
  }
  void prefer(uint64_t id) {
    if (id != 0 && members_.count(id) > 0)
      preferred_ = id;
  }

private:
  std::map<uint64_t, node::address> members_;
  std::map<uint64_t, node::address>::iterator next_;
  std::optional<uint64_t> preferred_;
};

struct session {
  caf::actor_system& sys;
  caf::scoped_actor self;
  std::string cluster;
  clock_type::time_point deadline;
  std::string last_error;

  session(caf::actor_system& s, std::string c, clock_type::time_point d)
      : sys(s), self(s), cluster(std::move(c)), deadline(d) {}

  std::chrono::milliseconds left() const {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline
                                                                   - clock_type::now());
    return std::max(d, 1ms);
  }
  bool expired() const { return clock_type::now() >= deadline; }

  /// The front of member `id` at `where` (client hello), or a null actor.
  caf::actor front_of(uint64_t id, const node::address& where, uint64_t& primary) {
    auto a = cluster::connect_front(self, cluster, id, where,
                                    std::min(left(), std::chrono::milliseconds{1000}));
    if (!a.front) {
      last_error = a.error;
      return {};
    }
    primary = a.primary;
    return a.front;
  }
};

std::optional<std::string> settle_access(kv_options& o) {
  if (!o.cluster_dir.empty()) {
    if (!o.peers.empty() || !o.tls_ca.empty())
      return std::string{"give either --cluster-dir or --peers (and --tls-*), not both"};
    auto a = cluster::client_access_of(o.cluster_dir);
    if (!a)
      return "--cluster-dir: no cluster in " + o.cluster_dir
             + " (no readable cluster.json)";
    o.peers = a->peers;
    o.cluster = a->cluster;
    if (a->tls) {
      o.tls_ca = a->ca;
      o.tls_cert = a->cert;
      o.tls_key = a->key;
    }
  }
  if (o.peers.empty())
    return std::string{"give --peers ID@HOST:PORT,... or --cluster-dir DIR"};
  int tls_given = !o.tls_ca.empty() + !o.tls_cert.empty() + !o.tls_key.empty();
  if (tls_given != 0 && tls_given != 3)
    return std::string{"give all of --tls-ca, --tls-cert and --tls-key, or none"};
  return std::nullopt;
}

int print_read(const kv_options& o, const rp::read_result& r, uint64_t node_id) {
  if (o.json) {
    std::cout << nlohmann::json{{"node", node_id},
                                {"found", r.found},
                                {"value", r.found ? nlohmann::json(r.value)
                                                  : nlohmann::json(nullptr)},
                                {"applied_lsn", r.applied.value},
                                {"behind", r.behind},
                                {"role", std::string{rp::to_string(r.replica_role)}}}
                     .dump()
              << '\n';
    return r.found ? exit_ok : exit_failure;
  }
  if (!r.found) {
    std::cerr << "conclave: key not found\n";
    return exit_failure;
  }
  std::cout << r.value << '\n';
  return exit_ok;
}

int print_commit(const kv_options& o, const rp::txn_result& r, uint64_t node_id) {
  if (o.dequeue->parsed()) {
    bool taken = !r.outputs.empty() && r.outputs.front().found;
    if (o.json)
      std::cout << nlohmann::json{{"node", node_id},
                                  {"lsn", r.at.value},
                                  {"found", taken},
                                  {"value", taken
                                                ? nlohmann::json(r.outputs.front().value)
                                                : nlohmann::json(nullptr)}}
                       .dump()
                << '\n';
    else if (taken)
      std::cout << r.outputs.front().value << '\n';
    if (!taken && !o.json)
      std::cerr << "conclave: queue empty\n";
    return taken ? exit_ok : exit_failure;
  }
  if (o.json)
    std::cout << nlohmann::json{{"node", node_id}, {"lsn", r.at.value}}.dump() << '\n';
  else
    std::cout << "ok lsn " << r.at.value << '\n';
  return exit_ok;
}

int print_list(const kv_options& o, const rp::list_result& r, uint64_t node_id) {
  if (o.json) {
    auto items = nlohmann::json::array();
    for (auto& i : r.items)
      items.push_back({{"key", i.key}, {"value", i.value}});
    std::cout << nlohmann::json{{"node", node_id},
                                {"items", items},
                                {"more", r.more},
                                {"applied_lsn", r.applied.value},
                                {"behind", r.behind},
                                {"role", std::string{rp::to_string(r.replica_role)}}}
                     .dump()
              << '\n';
  } else {
    for (auto& i : r.items)
      std::cout << i.key << '\t' << i.value << '\n';
    if (r.more)
      std::cerr << "conclave: more keys follow (raise --limit)\n";
  }
  return exit_ok;
}

/// Answers that end the command with an error (not retried).
std::optional<std::string> final_error(rp::errc e) {
  switch (e) {
  case rp::errc::bad_request:
  case rp::errc::too_large:
  case rp::errc::condition_failed:
  case rp::errc::unknown_collection:
  case rp::errc::wrong_kind:
    return std::string{rp::to_string(e)};
  default:
    return std::nullopt;
  }
}

int run_kv(kv_options& o) {
  if (auto err = settle_access(o))
    return bad_input(*err);
  auto members = node::parse_peers(o.peers);
  if (!members)
    return bad_input("--peers: " + members.error());
  if (o.at != 0 && members.value().count(o.at) == 0)
    return bad_input("--at: node " + std::to_string(o.at) + " is not in --peers");
  bool reading = o.get->parsed() || o.list->parsed();
  if (o.at != 0 && !reading)
    return bad_input("--at: only for get and list (writes go to the primary)");
  caf::actor_system_config cfg;
  cluster::configure_client(cfg, o.tls_ca, o.tls_cert, o.tls_key);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  session s{sys, o.cluster, clock_type::now() + std::chrono::milliseconds{o.timeout_ms}};
  route r{members.value()};
  if (o.at != 0)
    r.prefer(o.at);
  int status = -1;
  while (status < 0 && !s.expired()) {
    auto [id, where] = o.at != 0 ? std::pair{o.at, members.value().at(o.at)} : r.next();
    uint64_t primary = 0;
    auto front = s.front_of(id, where, primary);
    if (!front) {
      if (o.at != 0)
        break;
      std::this_thread::sleep_for(20ms);
      continue;
    }
    auto fail_with = [&](const std::string& why) {
      std::cerr << "conclave: error: node " << id << ": " << why << '\n';
      status = exit_failure;
    };
    if (o.get->parsed() || o.list->parsed()) {
      auto answer = [&](auto& res, auto print) {
        if (auto err = final_error(res.code))
          return fail_with(*err);
        // A primary without its lease does not answer (not_primary): try
        // another node, or (--at) the same one again until the timeout.
        if (res.code == rp::errc::not_primary) {
          s.last_error = "node " + std::to_string(id) + " is not an acting primary";
          r.prefer(res.primary.value != id ? res.primary.value : primary);
          return;
        }
        // Without --at, only the primary's answer is the latest.
        if (o.at == 0 && res.replica_role != rp::role::primary) {
          s.last_error = "node " + std::to_string(id) + " is "
                         + std::string{rp::to_string(res.replica_role)};
          r.prefer(res.primary.value != id ? res.primary.value : primary);
          return;
        }
        status = print(o, res, id);
      };
      auto on_error = [&](caf::error& e) {
        s.last_error = "node " + std::to_string(id) + ": " + sys.render(e);
      };
      if (o.get->parsed())
        s.self->request(front, s.left(), rp::read_request{o.collection, o.key})
            .receive([&](rp::read_result& res) { answer(res, print_read); }, on_error);
      else
        s.self
            ->request(front, s.left(),
                      rp::list_request{o.collection, o.key, std::string{}, o.limit})
            .receive([&](rp::list_result& res) { answer(res, print_list); }, on_error);
    } else {
      rp::txn_request req;
      rp::txn_op op;
      op.collection = o.collection;
      op.key = o.key;
      op.value = o.value;
      op.kind = o.del->parsed()       ? rp::op_kind::remove
                : o.enqueue->parsed() ? rp::op_kind::enqueue
                : o.dequeue->parsed() ? rp::op_kind::dequeue
                                      : rp::op_kind::put;
      // A queue op run twice adds or takes a second item: never retried once
      // its outcome is unknown.
      bool idempotent = op.kind == rp::op_kind::put || op.kind == rp::op_kind::remove;
      req.ops.push_back(std::move(op));
      req.mode = o.weak ? rp::commit_mode::weak : rp::commit_mode::strong;
      s.self->request(front, s.left(), std::move(req))
          .receive(
              [&](rp::txn_result& res) {
                if (res.code == rp::errc::ok) {
                  status = print_commit(o, res, id);
                  return;
                }
                if (auto err = final_error(res.code))
                  return fail_with(*err);
                if (res.code == rp::errc::primary_changed && !idempotent)
                  return fail_with("outcome unknown (the primary changed); not retried");
                // not_primary / syncing: nothing was proposed; primary_changed on
                // a put or delete: applying it again is harmless.
                s.last_error = "node " + std::to_string(id) + ": "
                               + std::string{rp::to_string(res.code)};
                r.prefer(res.primary.value != id ? res.primary.value : primary);
              },
              [&](caf::error& e) {
                if (!idempotent && e != caf::sec::request_receiver_down) {
                  fail_with("no answer (" + sys.render(e)
                            + "): outcome unknown; not retried");
                  return;
                }
                s.last_error = "node " + std::to_string(id) + ": " + sys.render(e);
              });
    }
    if (status < 0)
      std::this_thread::sleep_for(20ms); // a new primary may still be syncing
    if (o.at != 0 && status < 0)
      break;
  }
  if (status < 0) {
    std::cerr << "conclave: error: no answer within " << o.timeout_ms << " ms"
              << (s.last_error.empty() ? "" : " (last: " + s.last_error + ")") << '\n';
    return exit_failure;
  }
  return status;
}

} // namespace

void add_kv_command(command_registry& reg) {
  auto o = std::make_shared<kv_options>();
  auto* kv = reg.add("kv", "Read and write a running cluster's replicated store",
                     [o] { return run_kv(*o); });
  kv->require_subcommand(1);
  option(kv, "--peers", o->peers,
         "the members, ID@HOST:PORT,... (as given to the nodes)");
  option(kv, "--cluster", o->cluster, "cluster name")->capture_default_str();
  option(kv, "--cluster-dir", o->cluster_dir,
         "a `conclave cluster up` directory: its members, name and TLS files");
  option(kv, "--tls-ca", o->tls_ca, "CA certificate (PEM) that signs the members'");
  option(kv, "--tls-cert", o->tls_cert, "a certificate (PEM) signed by that CA");
  option(kv, "--tls-key", o->tls_key, "its private key (PEM)");
  option(kv, "--collection", o->collection, "the dictionary to use")
      ->capture_default_str();
  option(kv, "--timeout-ms", o->timeout_ms, "give up after this (exit 1)")
      ->capture_default_str();
  kv->add_flag("--json", o->json, "print one JSON object")->envname(env_name("--json"));

  o->get = kv->add_subcommand("get", "Print a key's value (exit 1 if absent)");
  o->get->add_option("KEY", o->key, "the key")->required();
  option(o->get, "--at", o->at,
         "read this node's replica (its applied state; --json says how far behind) "
         "instead of the primary's");
  o->put = kv->add_subcommand("put", "Set a key (acknowledged once a majority has it)");
  o->put->add_option("KEY", o->key, "the key")->required();
  o->put->add_option("VALUE", o->value, "the value")->required();
  o->put->add_flag("--weak", o->weak,
                   "acknowledged once durable on the primary alone (may be lost if it "
                   "fails before a majority has it)");
  o->del = kv->add_subcommand("delete", "Remove a key (no error if absent)");
  o->del->add_option("KEY", o->key, "the key")->required();
  o->list = kv->add_subcommand("list", "Print the keys starting with PREFIX and their "
                                       "values (key TAB value), in key order");
  o->list->add_option("PREFIX", o->key, "the prefix (\"\" lists everything)")->required();
  option(o->list, "--at", o->at, "list this node's replica instead of the primary's");
  option(o->list, "--limit", o->limit, "at most this many keys (0: the host's bound)");
  o->enqueue = kv->add_subcommand("enqueue", "Append VALUE to queue --collection");
  o->enqueue->add_option("VALUE", o->value, "the item")->required();
  o->enqueue->add_flag("--weak", o->weak,
                       "acknowledged once durable on the primary alone");
  o->dequeue = kv->add_subcommand(
      "dequeue",
      "Take and print the oldest item of queue --collection (exit 1 if empty)");
}

} // namespace conclave::cli
