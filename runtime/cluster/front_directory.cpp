// See front_directory.hpp.
#include "runtime/cluster/front_directory.hpp"

#include "runtime/node/bounded_connect.hpp"
#include "runtime/node/gate_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>

namespace conclave::cluster {

/// Shared by the connector actor (writer) and lookup() callers (readers).
struct front_directory::table {
  mutable std::mutex mtx;
  mutable std::condition_variable changed;
  std::map<uint64_t, caf::actor> fronts;
  /// Members whose first attempt has ended (connected or not).
  std::set<uint64_t> tried;
  /// Members dialed at least once, and those lookup() asked to dial.
  std::set<uint64_t> dialed;
  std::set<uint64_t> wanted;
  std::set<uint64_t> ids;
  std::string last_error;
  uint64_t primary = 0;
  /// How many members there are.
  size_t members = 0;
};

namespace {

using dial_atom = caf::atom_constant<caf::atom("cn_fddial")>;
/// Dial every member not dialed yet.
using spread_atom = caf::atom_constant<caf::atom("cn_fdsprd")>;
/// Dial this member if it was never dialed (lookup() asked for it).
using want_atom = caf::atom_constant<caf::atom("cn_fdwant")>;
/// A member's TCP connect ended (0: connected, else errno).
using probed_atom = caf::atom_constant<caf::atom("cn_fdprob")>;

struct connector_state {
  static inline const char* name = "conclave.front_directory";
  front_directory_options opts;
  std::shared_ptr<front_directory::table> table;
  std::map<uint64_t, std::chrono::milliseconds> backoff;
  std::map<caf::actor_addr, uint64_t> watched;
};

using connector_ptr = caf::stateful_actor<connector_state>*;

void dial(connector_ptr self, uint64_t id);
void dial_connected(connector_ptr self, uint64_t id);

bool was_dialed(connector_ptr self, uint64_t id) {
  std::lock_guard<std::mutex> guard{self->state.table->mtx};
  return self->state.table->dialed.count(id) != 0;
}

/// Dials every member not dialed yet.
void spread(connector_ptr self) {
  for (auto& m : self->state.opts.members)
    if (!was_dialed(self, m.first))
      dial(self, m.first);
}

void failed(connector_ptr self, uint64_t id, std::string why) {
  auto& st = self->state;
  {
    std::lock_guard<std::mutex> guard{st.table->mtx};
    st.table->last_error = std::move(why);
    st.table->tried.insert(id);
  }
  st.table->changed.notify_all();
  auto& b = st.backoff[id];
  b = b.count() == 0 ? st.opts.retry_first : std::min(b * 2, st.opts.retry_max);
  self->delayed_send(self, b, dial_atom::value, id);
  // Dialing one member first: it failed, the others are needed now.
  spread(self);
}

void connected(connector_ptr self, uint64_t id, caf::actor front, uint64_t primary) {
  auto& st = self->state;
  st.backoff[id] = std::chrono::milliseconds{0};
  st.watched[front.address()] = id;
  self->monitor(front);
  {
    std::lock_guard<std::mutex> guard{st.table->mtx};
    st.table->fronts[id] = std::move(front);
    st.table->tried.insert(id);
    if (primary != 0)
      st.table->primary = primary;
  }
  st.table->changed.notify_all();
  // Dialing one member first: its gate names another primary, dial that one.
  if (primary != 0 && st.opts.members.count(primary) != 0 && !was_dialed(self, primary))
    dial(self, primary);
}

void dial(connector_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.opts.members.find(id);
  if (i == st.opts.members.end())
    return;
  auto where = i->second;
  {
    std::lock_guard<std::mutex> guard{st.table->mtx};
    st.table->dialed.insert(id);
  }
  // The TCP connect first, on a thread of its own (bounded_connect.hpp): the
  // middleman dials one member at a time, and a member cut off by the network
  // would hold the dials of the others behind it.
  if (!st.opts.probe_first)
    return dial_connected(self, id);
  auto me = caf::actor_cast<caf::actor>(self);
  node::probe_connect(where.host, where.port, st.opts.step_timeout, [me, id](int error) {
    caf::anon_send(me, probed_atom::value, id, error);
  });
}

void dial_connected(connector_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.opts.members.find(id);
  if (i == st.opts.members.end())
    return;
  auto where = i->second;
  auto& sys = self->system();
  auto mm = sys.has_openssl_manager() ? sys.openssl_manager().actor_handle()
                                      : sys.middleman().actor_handle();
  auto step = st.opts.step_timeout;
  self->request(mm, step, caf::connect_atom::value, where.host, where.port)
      .then(
          [self, id, where, step](const caf::node_id&, caf::strong_actor_ptr& ptr,
                                  const std::set<std::string>& ifs) {
            auto& sys = self->system();
            if (!ptr)
              return failed(self, id,
                            "node " + std::to_string(id) + ": nothing published at "
                                + where.to_string());
            if (ifs != sys.message_types(caf::detail::type_list<node::gate_actor>{}))
              return failed(self, id,
                            "node " + std::to_string(id) + " at " + where.to_string()
                                + " is not a conclave node of this version");
            auto gate = caf::actor_cast<node::gate_actor>(ptr);
            self->request(gate, step, node::client_hello_atom::value,
                          self->state.opts.cluster)
                .then(
                    [self, id](const caf::actor& f, uint64_t, uint64_t p,
                               const std::string&, const std::string& refused) {
                      if (!refused.empty() || !f)
                        return failed(self, id,
                                      "node " + std::to_string(id) + " refused: "
                                          + (refused.empty() ? "no front" : refused));
                      connected(self, id, f, p);
                    },
                    [self, id](caf::error& e) {
                      failed(self, id,
                             "node " + std::to_string(id) + ": "
                                 + self->system().render(e));
                    });
          },
          [self, id, where](caf::error& e) {
            failed(self, id,
                   "node " + std::to_string(id) + " at " + where.to_string() + ": "
                       + self->system().render(e));
          });
}

caf::behavior connector(connector_ptr self, front_directory_options opts,
                        std::shared_ptr<front_directory::table> t) {
  self->state.opts = std::move(opts);
  self->state.table = std::move(t);
  self->set_default_handler(caf::drop);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    auto w = st.watched.find(dm.source);
    if (w == st.watched.end())
      return;
    auto id = w->second;
    st.watched.erase(w);
    {
      std::lock_guard<std::mutex> guard{st.table->mtx};
      auto f = st.table->fronts.find(id);
      if (f != st.table->fronts.end() && f->second.address() == dm.source)
        st.table->fronts.erase(f);
      st.table->last_error = "node " + std::to_string(id) + ": connection lost";
    }
    st.table->changed.notify_all();
    // Its node may be restarting: dial again soon, then back off.
    self->delayed_send(self, st.opts.retry_first, dial_atom::value, id);
    spread(self);
  });
  auto& st = self->state;
  if (st.opts.members.count(st.opts.first) != 0) {
    dial(self, st.opts.first);
    self->delayed_send(self, st.opts.spread_after, spread_atom::value);
  } else {
    spread(self);
  }
  return {
      [self](dial_atom, uint64_t id) { dial(self, id); },
      [self](probed_atom, uint64_t id, int error) {
        if (error == 0)
          return dial_connected(self, id);
        auto i = self->state.opts.members.find(id);
        failed(self, id,
               "node " + std::to_string(id) + " at "
                   + (i != self->state.opts.members.end() ? i->second.to_string() : "?")
                   + ": " + std::strerror(error));
      },
      [self](spread_atom) {
        // Not needed if the primary a gate named is connected.
        auto& t = *self->state.table;
        {
          std::lock_guard<std::mutex> guard{t.mtx};
          if (t.primary != 0 && t.fronts.count(t.primary) != 0)
            return;
        }
        spread(self);
      },
      [self](want_atom, uint64_t id) {
        if (!was_dialed(self, id))
          dial(self, id);
      },
  };
}

} // namespace

front_directory::front_directory(caf::actor_system& sys, front_directory_options opts)
    : table_(std::make_shared<table>()) {
  table_->members = opts.members.size();
  for (auto& m : opts.members)
    table_->ids.insert(m.first);
  connector_ = sys.spawn(connector, std::move(opts), table_);
}

front_directory::~front_directory() {
  caf::anon_send_exit(connector_, caf::exit_reason::user_shutdown);
}

caf::actor front_directory::lookup(uint64_t id) const {
  {
    std::lock_guard<std::mutex> guard{table_->mtx};
    auto i = table_->fronts.find(id);
    if (i != table_->fronts.end())
      return i->second;
    if (table_->ids.count(id) == 0 || table_->dialed.count(id) != 0
        || !table_->wanted.insert(id).second)
      return {};
  }
  caf::anon_send(connector_, want_atom::value, id);
  return {};
}

size_t front_directory::wait_connected(size_t n,
                                       std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> guard{table_->mtx};
  table_->changed.wait_for(guard, timeout, [&] {
    return table_->fronts.size() >= n
           || (!table_->fronts.empty() && table_->tried.size() >= n);
  });
  return table_->fronts.size();
}

size_t front_directory::wait_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> guard{table_->mtx};
  table_->changed.wait_for(guard, timeout, [&] {
    auto& t = *table_;
    return (t.primary != 0 && t.fronts.count(t.primary) != 0)
           || (!t.fronts.empty() && t.tried.size() >= t.members);
  });
  return table_->fronts.size();
}

caf::actor front_directory::wait_for(uint64_t id,
                                     std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> guard{table_->mtx};
  table_->changed.wait_for(guard, timeout, [&] { return table_->fronts.count(id) != 0; });
  auto i = table_->fronts.find(id);
  return i == table_->fronts.end() ? caf::actor{} : i->second;
}

std::string front_directory::last_error() const {
  std::lock_guard<std::mutex> guard{table_->mtx};
  return table_->last_error;
}

bool front_directory::dialed(uint64_t id) const {
  std::lock_guard<std::mutex> guard{table_->mtx};
  return table_->dialed.count(id) != 0;
}

uint64_t front_directory::primary_hint() const {
  std::lock_guard<std::mutex> guard{table_->mtx};
  return table_->primary;
}

} // namespace conclave::cluster
