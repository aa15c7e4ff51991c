// The fast path of a one-shot `conclave kv get|put|delete`: the members'
// HTTPS API (kv_http.hpp), the expected primary first, with no actor system.
// Plain OpenSSL and files: linked both by the full binary's kv command, which
// falls back to its cluster links, and by the small front (runtime/front/),
// which hands a fallback over to the full binary with the write's session id
// and the deadline (kv_handoff), so a write sent twice is applied once and
// the timeout holds across both.
#pragma once

#include "runtime/cli/kv_flags.hpp"
#include "runtime/node/peer_address.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

struct ssl_ctx_st;

namespace conclave::cli {

/// Set once the flags are parsed (--trace-stages): exit_now prints the stages.
extern bool print_stages;

/// Prints "conclave: error: [node N: ]WHY" on stderr; exit_failure.
int fail(uint64_t node, const std::string& why);

/// Ends the process with `status` once what it printed is out, without any
/// orderly shutdown (see the definition).
[[noreturn]] void exit_now(int status);

/// Where kv keeps its primary hint and TLS sessions ("" for nowhere).
std::string cache_dir_of(const kv_options& o);

/// The primary cache file of this cluster ("" for none).
std::string cache_file_of(const kv_options& o);

/// The member to dial first: the one that answered as the primary last time,
/// else the leader the --dir status files name; 0 (every member at once)
/// with --dial-all or when nothing names a member.
uint64_t first_to_dial(const kv_options& o, const std::string& cache_file,
                       const std::map<uint64_t, node::address>& members);

/// Remembers `primary`, which answered as the primary, in `cache_file`
/// (written only when it names another member or none).
void remember_answering_primary(const std::string& cache_file, uint64_t primary);

/// get, put and delete over the members' HTTPS API. The exit status when the
/// command is over (answered, refused, or the timeout passed); nothing when
/// this path does not apply (another subcommand or flag, no HTTPS address
/// known) or no member answered it before the deadline: the cluster links
/// are then to be used with the time left, and for a write with
/// `o.session_id` (set here), which the write carried. `on_context` (if any)
/// is called with the TLS context before it is used.
std::optional<int> run_over_http(kv_options& o,
                                 const std::map<uint64_t, node::address>& members,
                                 void (*on_context)(ssl_ctx_st*) = nullptr);

/// What the front hands to the full binary when it falls back: the
/// environment variable, and its value (SESSION,DEADLINE: the write's session
/// id, "" for a read, and the deadline as steady-clock nanoseconds, which
/// exec does not change).
inline constexpr const char* kv_handoff_variable = "CONCLAVE_KV_HANDOFF";
std::string kv_handoff_text(const kv_options& o);

/// Reads a handoff value into `o` (session id and deadline); false if `text`
/// is not one kv_handoff_text makes.
bool read_kv_handoff(const std::string& text, kv_options& o);

} // namespace conclave::cli
