// conclave store check|backup|restore|repair: a store's data directory from
// the command line. See docs/design/store.md, "Command line" and "Recovery".
#include "runtime/cli/commands.hpp"

#include "actors/replication/replica_inspect.hpp"
#include "storage/file_term_file.hpp"
#include "storage/inspect.hpp"
#include "storage/state_manager.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>

namespace conclave::cli {

namespace {

namespace fs = std::filesystem;
namespace st = conclave::store;

struct store_options {
  std::string dir;
  std::string to;
  std::string from;
  bool json = false;
  bool incremental = false;
};

const char* damage_kind(st::log_damage::kind k) {
  switch (k) {
  case st::log_damage::kind::covered:
    return "covered";
  case st::log_damage::kind::middle:
    return "middle";
  case st::log_damage::kind::tail:
    break;
  }
  return "tail";
}

const char* kind_name(st::collection_kind k) {
  return k == st::collection_kind::queue ? "queue" : "dictionary";
}

/// One line for a --dir that holds no store: neither command may create one
/// there, nor call it clean.
int not_a_store(const std::string& command, const std::string& dir) {
  return bad_input(command + ": " + dir
                   + " is not a store's data directory (no log/ or checkpoints/ in it)");
}

/// What `store check` found in a replica's term file (DIR/term).
struct term_report {
  /// "ok", "none" (no file and nothing logged: a new replica, term zero),
  /// "missing" (no file beside a log or checkpoint), "corrupt".
  std::string state;
  conclave::replication::term t;
  std::string problem;
  bool fine() const { return state == "ok" || state == "none"; }
};

term_report check_term_file(const fs::path& dir, const st::data_dir_check& c) {
  term_report r;
  auto path = dir / "term";
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    // The replica saves its promised term before it logs anything of that
    // term (replica_storage.cpp refuses to start without it).
    if (c.log.records == 0 && c.checkpoints.empty()) {
      r.state = "none";
      return r;
    }
    r.state = "missing";
    r.problem = "term file " + path.string()
                + " is MISSING beside a log or checkpoint: the replica's promised term "
                  "is unknown and it will not start (restore the file from a backup "
                  "of this data dir)";
    return r;
  }
  std::ifstream in{path, std::ios::binary};
  std::string bytes{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  auto t =
      in.bad()
          ? conclave::store::result<conclave::replication::term>{st::errc::corrupt_data}
          : conclave::storage::file_term_file::decode(bytes);
  if (!t) {
    r.state = "corrupt";
    r.problem = "term file " + path.string()
                + " is CORRUPT (wrong size, magic, version or checksum): the replica "
                  "will not start";
    return r;
  }
  r.state = "ok";
  r.t = t.value();
  return r;
}

int run_check(const store_options& o) {
  // A node's replica (DATA_DIR/replica) keeps replication entries in the
  // store's files: replayed by the replica's rules, as its recovery does.
  bool replica = conclave::replication::is_replica_dir(o.dir);
  conclave::replication::replica_replay_rules replica_rules;
  auto checked =
      replica ? st::check_data_dir(o.dir, replica_rules) : st::check_data_dir(o.dir);
  if (!checked)
    return bad_input("store check: " + o.dir + " is not a directory");
  if (!st::is_data_dir(o.dir))
    return not_a_store("store check", o.dir);
  auto& c = checked.value();
  std::optional<term_report> terms;
  if (replica)
    terms = check_term_file(o.dir, c);
  bool clean = c.clean() && (!terms || terms->fine());
  if (o.json) {
    nlohmann::json j;
    j["dir"] = o.dir;
    j["kind"] = replica ? "replica" : "store";
    j["clean"] = clean;
    if (terms) {
      j["term"] = {{"state", terms->state}};
      if (terms->state == "ok")
        j["term"].update({{"epoch", terms->t.epoch},
                          {"leader", terms->t.leader.value},
                          {"incarnation", terms->t.incarnation}});
      if (!terms->problem.empty())
        j["term"]["problem"] = terms->problem;
    }
    j["recoverable"] = c.recoverable;
    if (!c.problem.empty())
      j["problem"] = c.problem;
    j["recovered_lsn"] = c.recovered.value;
    j["checkpoint_lsn"] = c.checkpoint_used.value;
    j["checkpoints"] = nlohmann::json::array();
    for (auto& k : c.checkpoints)
      j["checkpoints"].push_back({{"file", k.path.filename().string()},
                                  {"lsn", k.at.value},
                                  {"ok", k.ok},
                                  {"problem", k.problem}});
    auto& log = j["log"];
    log["segments"] = c.log.segments.size();
    log["records"] = c.log.records;
    log["first_lsn"] = c.log.first.value;
    log["last_lsn"] = c.log.last.value;
    log["ends_early"] = c.log.ends_early;
    if (c.log.ends_early) {
      log["reason"] = c.log.reason;
      log["bytes_after_end"] = c.log.bytes_after_end;
    }
    log["damage"] = nlohmann::json::array();
    for (auto& d : c.log.damage)
      log["damage"].push_back(
          {{"kind", damage_kind(d.what)},
           {"file", c.log.segments[d.segment].path.filename().string()},
           {"offset", d.offset},
           {"bytes", d.bytes},
           {"reason", d.reason}});
    log["covered_gaps"] = c.log.covered_gaps;
    log["corrupt_in_middle"] = c.log.fatal;
    if (c.log.fatal)
      log["repair_would_drop"] = {{"bytes", c.log.drop_bytes},
                                  {"records", c.log.drop_records},
                                  {"first_lsn", c.log.drop_first.value},
                                  {"last_lsn", c.log.drop_last.value}};
    j["collections"] = nlohmann::json::array();
    for (auto& col : c.collections)
      j["collections"].push_back(
          {{"name", col.name}, {"kind", kind_name(col.kind)}, {"items", col.items}});
    std::cout << j.dump(2) << '\n';
    return clean ? exit_ok : exit_failure;
  }
  std::cout << (replica ? "replica data dir " : "data dir ") << o.dir << ": "
            << (clean ? "clean" : "PROBLEMS FOUND") << '\n';
  if (terms) {
    if (terms->state == "ok")
      std::cout << "  term file: epoch " << terms->t.epoch << ", leader "
                << terms->t.leader.value << '\n';
    else if (terms->state == "none")
      std::cout << "  term file: none (nothing logged yet: term zero)\n";
    else
      std::cout << "  " << terms->problem << '\n';
  }
  for (auto& k : c.checkpoints) {
    std::cout << "  checkpoint " << k.path.filename().string();
    if (k.ok)
      std::cout << ": lsn " << k.at.value
                << (k.at == c.checkpoint_used ? " (recovery starts here)" : "") << '\n';
    else
      std::cout << ": CORRUPT (" << k.problem << "); recovery skips it\n";
  }
  std::cout << "  log: " << c.log.segments.size() << " segment(s), " << c.log.records
            << " record(s)";
  if (c.log.records > 0)
    std::cout << ", lsn " << c.log.first.value << ".." << c.log.last.value;
  std::cout << '\n';
  for (auto& d : c.log.damage)
    if (d.what == st::log_damage::kind::covered)
      std::cout << "  damage among records the checkpoint covers (harmless, recovery "
                   "does not read them): "
                << d.reason << " (" << d.bytes << " byte(s))\n";
  for (auto& g : c.log.covered_gaps)
    std::cout << "  covered records missing (harmless): " << g << '\n';
  if (c.log.ends_early)
    std::cout << "  log ends early: " << c.log.reason << "; recovery cuts the "
              << c.log.bytes_after_end << " byte(s) after it (moved to log/lost+found)\n";
  if (!c.recoverable)
    std::cout << "  NOT RECOVERABLE: " << c.problem << '\n';
  if (c.log.fatal)
    std::cout << "  `conclave store repair` would drop " << c.log.drop_bytes
              << " byte(s) with " << c.log.drop_records << " valid record(s)"
              << (c.log.drop_records > 0
                      ? " (lsn " + std::to_string(c.log.drop_first.value) + ".."
                            + std::to_string(c.log.drop_last.value) + ")"
                      : std::string{})
              << ", keeping a copy in log/lost+found\n";
  else
    std::cout << "  recovery reaches lsn " << c.recovered.value << '\n';
  for (auto& col : c.collections)
    std::cout << "  " << kind_name(col.kind) << ' ' << col.name << ": " << col.items
              << " item(s)\n";
  return clean ? exit_ok : exit_failure;
}

int run_backup(const store_options& o) {
  std::error_code ec;
  if (!fs::is_directory(o.dir, ec))
    return bad_input("store backup: " + o.dir + " is not a directory");
  if (!st::is_data_dir(o.dir))
    return not_a_store("store backup", o.dir);
  st::state_manager_options opts;
  opts.dir = o.dir;
  auto store = st::state_manager::open(opts);
  if (!store) {
    std::cerr << "conclave: store backup: cannot open " << o.dir << ": "
              << store.error().message() << '\n';
    return exit_failure;
  }
  auto b = store.value()->backup(o.to, o.incremental);
  if (!b) {
    std::cerr << "conclave: store backup: " << b.error().message() << '\n';
    return exit_failure;
  }
  if (o.json) {
    nlohmann::json j{{"written", !b.value().path.empty()}, {"to", b.value().to.value}};
    if (!b.value().path.empty()) {
      j["kind"] = b.value().kind;
      j["from"] = b.value().from.value;
      j["bytes"] = b.value().bytes;
      j["path"] = b.value().path.string();
    }
    std::cout << j.dump() << '\n';
    return exit_ok;
  }
  if (b.value().path.empty()) {
    std::cout << "nothing new since the previous backup (lsn " << b.value().to.value
              << "); no backup written\n";
    return exit_ok;
  }
  std::cout << b.value().kind << " backup of lsn " << b.value().from.value << ".."
            << b.value().to.value << " (" << b.value().bytes << " bytes) in "
            << b.value().path.string() << '\n';
  return exit_ok;
}

int run_repair(const store_options& o) {
  std::error_code ec;
  if (!fs::is_directory(o.dir, ec))
    return bad_input("store repair: " + o.dir + " is not a directory");
  if (!st::is_data_dir(o.dir))
    return not_a_store("store repair", o.dir);
  st::state_manager_options opts;
  opts.dir = o.dir;
  opts.repair = true;
  opts.log = [](const std::string&) {}; // the summary below says it all
  auto store = st::state_manager::open(opts);
  if (!store) {
    std::cerr << "conclave: store repair: cannot open " << o.dir << ": "
              << store.error().message() << '\n';
    return exit_failure;
  }
  auto& r = store.value()->recovery();
  if (o.json) {
    nlohmann::json j{{"repaired", r.tail_cut}, {"last", r.last.value}};
    if (r.tail_cut) {
      j["cut_reason"] = r.cut_reason;
      j["dropped_bytes"] = r.cut_bytes;
      j["dropped_records"] = r.dropped_records;
      if (r.dropped_records > 0) {
        j["dropped_first"] = r.dropped_first.value;
        j["dropped_last"] = r.dropped_last.value;
      }
      auto kept = nlohmann::json::array();
      for (auto& p : r.moved_to)
        kept.push_back(p.string());
      j["copies"] = kept;
    }
    std::cout << j.dump() << '\n';
    return exit_ok;
  }
  if (!r.tail_cut) {
    std::cout << "nothing to repair: the log is intact up to lsn " << r.last.value
              << '\n';
    return exit_ok;
  }
  std::cout << "cut: " << r.cut_reason << '\n';
  std::cout << "dropped " << r.cut_bytes << " byte(s)";
  if (r.dropped_records > 0)
    std::cout << " holding " << r.dropped_records << " valid record(s), lsn "
              << r.dropped_first.value << ".." << r.dropped_last.value;
  std::cout << "; the store now ends at lsn " << r.last.value << '\n';
  for (auto& p : r.moved_to)
    std::cout << "copy kept in " << p.string() << '\n';
  return exit_ok;
}

int run_restore(const store_options& o) {
  std::error_code ec;
  if (!fs::is_directory(o.from, ec))
    return bad_input("store restore: --from " + o.from + " is not a directory");
  if (fs::exists(o.dir, ec) && !fs::is_empty(o.dir, ec))
    return bad_input("store restore: --dir " + o.dir + " is not empty");
  auto r = st::state_manager::restore(o.from, o.dir);
  if (!r) {
    std::cerr << "conclave: store restore: " << r.error().message() << '\n';
    return exit_failure;
  }
  if (o.json)
    std::cout << nlohmann::json{{"from", r.value().from.value},
                                {"to", r.value().to.value},
                                {"dir", o.dir}}
                     .dump()
              << '\n';
  else
    std::cout << "restored lsn " << r.value().from.value << ".." << r.value().to.value
              << " into " << o.dir << '\n';
  return exit_ok;
}

} // namespace

void add_store_command(command_registry& reg) {
  auto o = std::make_shared<store_options>();
  auto subs = std::make_shared<std::array<CLI::App*, 4>>();
  auto* store = reg.add(
      "store", "Check, back up, restore and repair a store's data directory", [o, subs] {
        auto [check, backup, restore, repair] = *subs;
        if (check->parsed())
          return run_check(*o);
        if (backup->parsed())
          return run_backup(*o);
        if (restore->parsed())
          return run_restore(*o);
        if (repair->parsed())
          return run_repair(*o);
        return bad_input("store: give check, backup, restore or repair");
      });
  store->require_subcommand(1);

  auto* check = store->add_subcommand(
      "check",
      "Verify checkpoints and log without changing anything; exit 1 on problems");
  option(check, "--dir", o->dir, "the store's data directory")->required();
  check->add_flag("--json", o->json, "print one JSON document")
      ->envname(env_name("--json"));

  auto* backup = store->add_subcommand(
      "backup", "Back up a data directory no store has open (full, or --incremental)");
  option(backup, "--dir", o->dir, "the store's data directory")->required();
  option(backup, "--to", o->to, "the backup directory")->required();
  backup->add_flag("--incremental", o->incremental,
                   "only the log since the previous backup in --to");
  backup->add_flag("--json", o->json, "print one JSON document")
      ->envname(env_name("--json"));

  auto* restore = store->add_subcommand(
      "restore",
      "Rebuild a data directory from the newest full backup and its increments");
  option(restore, "--from", o->from, "the backup directory")->required();
  option(restore, "--dir", o->dir, "the new data directory (absent or empty)")
      ->required();
  restore->add_flag("--json", o->json, "print one JSON document")
      ->envname(env_name("--json"));

  auto* repair = store->add_subcommand(
      "repair",
      "Accept the loss of a log corrupt before its end: cut it there, keeping "
      "a copy of what is dropped in log/lost+found, and print what was dropped");
  option(repair, "--dir", o->dir,
         "the store's data directory (no store may have it open)")
      ->required();
  repair->add_flag("--json", o->json, "print one JSON document")
      ->envname(env_name("--json"));

  *subs = {check, backup, restore, repair};
}

} // namespace conclave::cli
