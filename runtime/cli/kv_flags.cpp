// See kv_flags.hpp.
#include "runtime/cli/kv_flags.hpp"

#include "runtime/cli/access_flags.hpp"
#include "runtime/cli/command.hpp"

namespace conclave::cli {

void define_kv_flags(CLI::App* kv, kv_options& o) {
  kv->require_subcommand(1);
  add_access_flags(kv, o.access);
  // The name before `--dir` was the cluster commands' one too: kept, hidden.
  option(kv, "--cluster-dir", o.access.dir, "the same as --dir")->group("");
  option(kv, "--collection", o.collection, "the dictionary to use")
      ->capture_default_str();
  option(kv, "--timeout-ms", o.timeout_ms, "give up after this (exit 1)")
      ->capture_default_str();
  kv->add_flag("--json", o.json, "print one JSON object")->envname(env_name("--json"));
  kv->add_flag("--dial-all", o.dial_all,
               "connect to every member at once, instead of to the expected primary "
               "first (the one that answered last time, else the leader --dir's "
               "status files name); no cache read or written")
      ->envname(env_name("--dial-all"));
  option(kv, "--cache-dir", o.cache_dir,
         "where kv remembers which member answered as the primary, one small file "
         "per cluster, and over TLS each member's session ticket, one file per "
         "member, mode 0600 (default: $XDG_CACHE_HOME/conclave, else "
         "~/.cache/conclave; none: nowhere)");
  kv->add_flag("--no-http", o.no_http,
               "get, put and delete: do not use the members' HTTPS API (the fast path "
               "for a --dir cluster with TLS), only their cluster links")
      ->envname(env_name("--no-http"));
  kv->add_flag("--trace-stages", o.trace_stages,
               "print on stderr when the run reached each stage (main, parsed, system, "
               "ready, answered, exit), as `conclave-trace STAGE MICROSECONDS` lines "
               "(wall clock since the epoch), for benchmarks")
      ->envname(env_name("--trace-stages"));
  option(kv, "--fence", o.fence,
         "NAME=TOKEN: write only while lease NAME is held with fencing token TOKEN "
         "(e.g. $CONCLAVE_LOCK_NAME=$CONCLAVE_LOCK_TOKEN under `conclave lock`); "
         "else exit 1 with stale_token and nothing written");

  o.get = kv->add_subcommand("get", "Print a key's value (exit 1 if absent)");
  o.get->add_option("KEY", o.key, "the key")->required();
  option(o.get, "--at", o.at,
         "read this node's replica (its applied state; --json says how far behind) "
         "instead of the primary's");
  o.put = kv->add_subcommand("put", "Set a key (acknowledged once a majority has it)");
  o.put->add_option("KEY", o.key, "the key")->required();
  o.put->add_option("VALUE", o.value, "the value")->required();
  o.put->add_flag("--weak", o.weak,
                  "acknowledged once durable on the primary alone (may be lost if it "
                  "fails before a majority has it)");
  o.del = kv->add_subcommand("delete", "Remove a key (no error if absent)");
  o.del->add_option("KEY", o.key, "the key")->required();
  o.list = kv->add_subcommand("list", "Print the keys starting with PREFIX and their "
                                      "values (key TAB value), in key order");
  o.list->add_option("PREFIX", o.key, "the prefix (\"\" lists everything)")->required();
  option(o.list, "--at", o.at, "list this node's replica instead of the primary's");
  option(o.list, "--limit", o.limit, "at most this many keys (0: the host's bound)");
  o.enqueue = kv->add_subcommand("enqueue", "Append VALUE to queue --collection");
  o.enqueue->add_option("VALUE", o.value, "the item")->required();
  o.enqueue->add_flag("--weak", o.weak, "acknowledged once durable on the primary alone");
  o.dequeue = kv->add_subcommand(
      "dequeue",
      "Take and print the oldest item of queue --collection (exit 1 if empty)");
  o.incr = kv->add_subcommand(
      "incr", "Add --by to the decimal integer at KEY (absent: 0) and print the result "
              "(read and write in one transaction, run again on a conflict)");
  o.incr->add_option("KEY", o.key, "the key")->required();
  option(o.incr, "--by", o.by, "the amount (may be negative)")->capture_default_str();
}

} // namespace conclave::cli
