// A test fixture of three replica hosts in one actor system on CAF's test
// coordinator, in virtual time, on memory devices and term files, with links
// that can be cut and replicas that can be crashed and restarted. Used by the
// replica host's and the client library's tests.
#pragma once

#include "actors/replication/replica_host.hpp"
#include "storage/api/memory_log_device.hpp"
#include "tests/support/ask.hpp"
#include "tests/support/coordinator_fixture.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace conclave::replication::testing {

using namespace std::chrono_literals;
using conclave::store::memory_log_device;
using conclave::testing::ask;

class replica_set_fixture : public conclave::testing::coordinator_fixture {
protected:
  struct replica {
    node_id id;
    std::shared_ptr<memory_log_device> device;
    std::shared_ptr<memory_term_file> terms;
    std::shared_ptr<actor_transport> transport;
    caf::actor host;
  };

  void configure(caf::actor_system_config& cfg) override {
    cfg.add_message_types<caf::id_block::conclave_replication>();
  }

  void SetUp() override {
    coordinator_fixture::SetUp();
    for (uint64_t i = 1; i <= 3; ++i) {
      replica r;
      r.id = node_id{i};
      r.device = std::make_shared<memory_log_device>();
      r.device->set_checkpoints_wait_for_sync(true);
      r.terms = std::make_shared<memory_term_file>();
      r.transport = std::make_shared<actor_transport>();
      rs.push_back(r);
    }
    for (size_t i = 0; i < rs.size(); ++i)
      spawn(i);
  }

  std::vector<node_id> members() const {
    std::vector<node_id> out;
    for (auto& r : rs)
      out.push_back(r.id);
    return out;
  }

  /// (Re)starts replica i on its device and term file; the peers learn the
  /// new handle.
  void spawn(size_t i) {
    replica_host_options o;
    o.self = rs[i].id;
    o.members = members();
    o.device = rs[i].device;
    o.terms = rs[i].terms;
    o.transport = rs[i].transport;
    o.config = config;
    o.limits = limits;
    o.max_list_items = max_list_items;
    o.checkpoint_every_records = checkpoint_every_records;
    o.checkpoint_every_bytes = checkpoint_every_bytes;
    o.snapshot_chunk_bytes = snapshot_chunk_bytes;
    o.lease = lease_time;
    o.max_lease_waiters = max_lease_waiters;
    if (i < observers.size())
      o.observer = observers[i];
    if (i < failure_hooks.size())
      o.on_failure = failure_hooks[i];
    rs[i].host = track(spawn_replica_host(sys(), o));
    for (auto& r : rs)
      r.transport->set_peer(rs[i].id, rs[i].host);
  }

  /// Restarts every replica (after changing config, limits or bounds).
  void restart_all() {
    for (size_t i = 0; i < rs.size(); ++i) {
      caf::anon_send_exit(rs[i].host, caf::exit_reason::kill);
      run();
      spawn(i);
    }
  }

  /// Kills replica i's actor and crashes its device (unsynced records lost).
  void crash(size_t i) {
    caf::anon_send_exit(rs[i].host, caf::exit_reason::kill);
    run();
    rs[i].device->crash();
  }

  /// Cuts (or heals) every link to and from replica i.
  void set_links(size_t i, bool up) {
    for (size_t j = 0; j < rs.size(); ++j) {
      if (j == i)
        continue;
      rs[j].transport->set_link(rs[i].id, up);
      rs[i].transport->set_link(rs[j].id, up);
    }
  }

  replica_status status(size_t i) {
    auto s = ask<replica_status>(sys(), rs[i].host,
                                 conclave::replication_atoms::status_atom_v);
    run();
    EXPECT_TRUE(s->done && s->value);
    return s->value ? *s->value : replica_status{};
  }

  /// Makes replica i primary at epoch e and waits until it serves.
  void make_primary(size_t i, uint64_t epoch) {
    auto ok = ask<bool>(sys(), rs[i].host, become_primary_msg{term{epoch, rs[i].id, 0}});
    run();
    ASSERT_TRUE(ok->value && *ok->value);
    ASSERT_TRUE(advance_until([&] { return status(i).serving; }, 500ms));
  }

  std::shared_ptr<conclave::testing::reply<txn_result>>
  put(size_t i, const std::string& k, const std::string& v,
      commit_mode mode = commit_mode::strong) {
    txn_request req;
    req.ops.push_back(txn_op{"d", k, v, op_kind::put});
    req.mode = mode;
    return ask<txn_result>(sys(), rs[i].host, req);
  }

  read_result read(size_t i, const std::string& k) {
    auto r = ask<read_result>(sys(), rs[i].host, read_request{"d", k});
    run();
    EXPECT_TRUE(r->done && r->value);
    return r->value ? *r->value : read_result{};
  }

  /// Runs a transaction on replica i.
  std::shared_ptr<conclave::testing::reply<txn_result>> txn(size_t i, txn_request req) {
    return ask<txn_result>(sys(), rs[i].host, std::move(req));
  }

  /// Runs a transaction on replica i and waits up to `limit` for its answer.
  txn_result txn_wait(size_t i, txn_request req, caf::timespan limit = 200ms) {
    auto r = txn(i, std::move(req));
    EXPECT_TRUE(advance_until([&] { return r->done; }, limit));
    EXPECT_TRUE(r->value);
    return r->value ? *r->value : txn_result{errc::timeout, {}, {}, {}};
  }

  list_result list(size_t i, list_request req) {
    auto r = ask<list_result>(sys(), rs[i].host, std::move(req));
    run();
    EXPECT_TRUE(r->done && r->value);
    return r->value ? *r->value : list_result{};
  }

  std::vector<replica> rs;
  replica_config config;
  conclave::store::core_limits limits;
  uint32_t max_list_items = 1000;
  /// Checkpoint triggers of every host (0: only checkpoint_atom), and the
  /// size of a streamed checkpoint's chunks.
  uint64_t checkpoint_every_records = 0;
  uint64_t checkpoint_every_bytes = 0;
  size_t snapshot_chunk_bytes = 256u << 10;
  /// Lease expiry of every host.
  lease_timing lease_time;
  size_t max_lease_waiters = 100000;
  /// Each host's commit observer (none past the vector's end); set before
  /// SetUp spawns the hosts, or respawn.
  std::vector<std::shared_ptr<commit_observer>> observers;
  /// Each host's on_failure (none past the vector's end); set before a
  /// respawn.
  std::vector<std::function<void(const std::string&)>> failure_hooks;
};

} // namespace conclave::replication::testing
