// The flags of `conclave kv`, defined once: the full binary's kv command and
// the small front that serves one-shot get, put and delete (runtime/front/)
// parse the same command line the same way.
#pragma once

#include "runtime/cluster/access.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace conclave::cli {

using kv_clock = std::chrono::steady_clock;

/// One line for the command list.
inline constexpr const char* kv_description =
    "Read and write a running cluster's replicated store";

struct kv_options {
  /// --dir or --peers, --cluster, --tls-*.
  cluster::store_access access;
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
  CLI::App* incr = nullptr;
  uint32_t limit = 0;
  int64_t by = 1;
  /// --fence NAME=TOKEN: the write applies only while lease NAME is held
  /// with that token.
  std::string fence;
  std::string fence_name;
  std::string fence_token;
  /// Dial every member at once, with no primary hint.
  bool dial_all = false;
  /// Where the primary cache lives ("": the default; "none": nowhere).
  std::string cache_dir;
  /// Print when each stage was reached (stage_trace.hpp).
  bool trace_stages = false;
  /// Never the members' HTTPS API, always the CAF path.
  bool no_http = false;
  /// The writes' session id ("": the client library picks one).
  std::string session_id;
  /// --timeout-ms from the flags' parsing on.
  kv_clock::time_point deadline;
};

/// Defines kv's flags and subcommands on `kv` (the command itself), bound to
/// `o`, which must outlive the parse.
void define_kv_flags(CLI::App* kv, kv_options& o);

} // namespace conclave::cli
