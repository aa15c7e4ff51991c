// The reliable collections store in one program: a work queue and an order
// table updated together in transactions, a conditional update, a lock timeout,
// a checkpoint, a crash-free reopen, a backup restored into a new directory,
// and the same store used from an actor through store_actor.
//
//   store_demo [--dir DIR] [--help]   (default DIR: a fresh directory under /tmp,
//                                      removed at the end)
#include "actors/store/store_actor.hpp"
#include "storage/collections.hpp"

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

using namespace conclave::store;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct order {
  std::string item;
  int32_t quantity = 0;
  std::string state = "new";
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order& x) {
  return f(x.item, x.quantity, x.state);
}

[[noreturn]] void die(const std::string& what, const std::error_code& e) {
  std::cerr << "store_demo: " << what << ": " << e.message() << '\n';
  std::exit(1);
}

template <class T>
T check(result<T> r, const std::string& what) {
  if (!r)
    die(what, r.error());
  return std::move(r.value());
}

void check(result<void> r, const std::string& what) {
  if (!r)
    die(what, r.error());
}

} // namespace

int main(int argc, char** argv) {
  fs::path dir;
  bool temporary = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--help" || a == "-h") {
      std::cout << "usage: store_demo [--dir DIR] [--help]\n\n"
                   "Runs the reliable collections store once through: transactions "
                   "over a queue and\na dictionary, a conditional update, a lock "
                   "timeout, a checkpoint, a reopen, a\nbackup restored into a new "
                   "directory, and the same store used from an actor.\n\n"
                   "  --dir DIR   where to put the data (default: a fresh directory "
                   "under the temp\n              directory, removed at the end)\n"
                   "  --help      this text\n";
      return 0;
    } else {
      std::cerr << "store_demo: unknown argument '" << a
                << "' (usage: store_demo [--dir DIR] [--help])\n";
      return 2;
    }
  }
  if (dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "store-demo-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      std::cerr << "store_demo: cannot create a temporary directory\n";
      return 1;
    }
    dir = tmpl;
    temporary = true;
  }
  auto data = dir / "data";
  {
    state_manager_options opts;
    opts.dir = data;
    auto store = check(state_manager::open(opts), "open");
    std::cout << "opened " << data << " (recovered " << store->recovery().records_replayed
              << " log records)\n";
    auto orders = check(store->dictionary<std::string, order>("orders"), "orders");
    auto work = check(store->queue<std::string>("work"), "work");

    // 1. An order and its work item commit together or not at all.
    for (int i = 1; i <= 3; ++i) {
      auto tx = store->begin();
      auto id = "o-" + std::to_string(i);
      check(orders.add(tx, id, order{"widget", i * 10}), "add order");
      check(work.enqueue(tx, id), "enqueue");
      auto l = check(tx.commit(), "commit");
      std::cout << "committed " << id << " at lsn " << l.value << " (durable)\n";
    }

    // 2. A worker takes the oldest item and marks its order, conditionally.
    {
      auto tx = store->begin();
      auto next = check(work.try_dequeue(tx), "dequeue");
      auto current = check(orders.try_get(tx, next.value, read_mode::update), "get");
      auto shipped = current.value;
      shipped.state = "shipped";
      bool updated =
          check(orders.try_update(tx, next.value, shipped, current.value), "update");
      check(tx.commit(), "commit");
      std::cout << "worker took " << next.value << ", shipped: " << std::boolalpha
                << updated << '\n';
    }

    // 3. Two writers on one order: the second one times out instead of
    // waiting forever, and aborts.
    {
      auto first = store->begin();
      check(orders.add_or_update(first, "o-2", order{"widget", 99}), "hold");
      auto second = store->begin();
      auto r = orders.add_or_update(second, "o-2", order{"widget", 1}, 100ms);
      std::cout << "second writer: " << (r ? "updated?!" : r.error().message()) << '\n';
      check(second.abort(), "abort");
      check(first.commit(), "commit");
    }

    // 4. Checkpoint, backup.
    std::cout << "checkpoint at lsn " << check(store->checkpoint(), "checkpoint").value
              << '\n';
    auto b = check(store->backup(dir / "backups", false), "backup");
    std::cout << "full backup of lsn " << b.from.value << ".." << b.to.value << " in "
              << b.path << '\n';

    // 5. The same store from an actor, without blocking it.
    caf::actor_system_config cfg;
    add_store_types(cfg);
    caf::actor_system sys{cfg};
    std::shared_ptr<state_manager> shared{store.release()};
    auto actor = spawn_store_actor(sys, shared);
    caf::scoped_actor self{sys};
    txn_id t;
    self->request(actor, 10s, conclave::store_atoms::begin_atom_v)
        .receive([&](txn_id x) { t = x; },
                 [](caf::error& e) { std::cerr << caf::to_string(e) << '\n'; });
    op_request count;
    count.txn = t;
    count.op = operation::count;
    count.collection = "orders";
    self->request(actor, 10s, count, uint32_t{0})
        .receive(
            [](op_result& r) { std::cout << "actor counted " << r.count << " orders\n"; },
            [](caf::error& e) { std::cerr << caf::to_string(e) << '\n'; });
    self->request(actor, 10s, conclave::store_atoms::abort_atom_v, t)
        .receive([](bool) {}, [](caf::error&) {});
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }

  // 6. Reopen (recovery from checkpoint + log) and restore the backup elsewhere.
  for (auto where : {data, dir / "restored"}) {
    if (where != data)
      check(state_manager::restore(dir / "backups", where), "restore");
    state_manager_options opts;
    opts.dir = where;
    auto store = check(state_manager::open(opts), "reopen");
    auto orders = check(store->dictionary<std::string, order>("orders"), "orders");
    auto tx = store->begin();
    std::cout << where.filename() << ": checkpoint lsn "
              << store->recovery().checkpoint.value << ", replayed "
              << store->recovery().records_replayed << " records;";
    for (auto& [id, o] : check(orders.enumerate(tx), "enumerate"))
      std::cout << ' ' << id << '=' << o.quantity << '/' << o.state;
    std::cout << '\n';
  }
  if (temporary)
    fs::remove_all(dir);
  return 0;
}
