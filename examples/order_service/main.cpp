// The order workflow of examples/order_processing, as a node program: every
// copy is a member of the cluster (conclave/node.hpp) and serves the three
// kinds of an order's steps, so `conclave job submit reserve:N payment:N
// ship:N` places order N on whichever nodes claim its steps.
//
//   reserve:N   reserves the stock of order N (150 ms)
//   payment:N   charges its card (300 ms); the card network is flaky: a try
//               fails transiently (error `card_network_busy`) when a hash of
//               the step's idempotency key and attempt says so, about 3 tries
//               in 10 and never past attempt 3, so a retry succeeds in the end
//   ship:N      hands the parcel to the carrier (200 ms)
//
// A step may run more than once (a retry, a recovery after its node died, a
// late answer), on any node. Each service records its effect in the effects
// directory every copy shares, once per idempotency key: the record is a file
// DIR/KIND/KEY made with link(2), which fails if the file exists, so of two
// tries of one key on two nodes exactly one takes effect. Then:
//
//   DIR/effects.log   one line per effect: KIND KEY node N attempt A
//   DIR/tries.log     one line per try:    KIND KEY node N attempt A OUTCOME
//
// The leader task logs its term and, every 2 s while it leads, how many
// effects are recorded.
//
//   order_service --effects DIR [conclave node flags]
//   conclave cluster up --nodes 5 --dir D --program order_service -- --effects E
//
// scripts/order-service-demo.sh runs it as a 5-node cluster and kills the
// leader while 20 orders run.
#include <conclave/node.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

/// 64-bit FNV-1a: the same on every node and every build, unlike std::hash.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// Whether the card network refuses this try of a payment: decided by the
/// key and the attempt alone, so every node agrees and a later attempt may
/// pass; from attempt 4 on it always passes.
bool card_network_busy(const conclave::step_call& call) {
  if (call.attempt > 3)
    return false;
  return fnv1a(call.idempotency_key + "#" + std::to_string(call.attempt)) % 100 < 30;
}

/// A key as one file name: keys are "job/step" and job ids are chosen by
/// whoever submits; anything but [A-Za-z0-9._-] becomes %XX.
std::string file_name_of(std::string_view key) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                 || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (plain && !(out.empty() && c == '.')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// Appends one line with one write(2) to a file opened O_APPEND: lines of
/// several processes never interleave.
bool append_line(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  std::string text = line + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

/// The effects directory that every copy of the program shares.
class effect_book {
public:
  effect_book(std::string dir, uint64_t node) : dir_(std::move(dir)), node_(node) {}

  /// Makes DIR/KIND for each kind; false (and why) if it cannot.
  bool prepare(const std::vector<std::string>& kinds, std::string& why) const {
    for (auto& k : kinds) {
      for (auto& d : {dir_, dir_ + "/" + k}) {
        if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
          why = "cannot create " + d + ": " + std::strerror(errno);
          return false;
        }
      }
    }
    return true;
  }

  /// Records the effect `what` of `kind` for the call's key unless some try
  /// of that key recorded it before. True if this try took effect; false if
  /// an earlier one had. Throws (a transient failure) if the directory cannot
  /// be written.
  bool record_once(const std::string& kind, const std::string& what,
                   const conclave::step_call& call) const {
    auto where =
        "node " + std::to_string(node_) + " attempt " + std::to_string(call.attempt);
    auto final_path = dir_ + "/" + kind + "/" + file_name_of(call.idempotency_key);
    auto temp_path =
        final_path + ".tmp-" + std::to_string(node_) + "-" + std::to_string(::getpid())
        + "-" + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
    {
      std::ofstream out{temp_path, std::ios::trunc};
      out << what << ' ' << call.payload << ' ' << where << '\n';
      if (!out.flush())
        throw std::runtime_error("cannot write " + temp_path);
    }
    // link(2) is atomic and fails with EEXIST if the record exists: whole
    // records only, and one per key however many tries race.
    int rc = ::link(temp_path.c_str(), final_path.c_str());
    int err = errno;
    ::unlink(temp_path.c_str());
    if (rc != 0 && err == EEXIST)
      return false;
    if (rc != 0)
      throw std::runtime_error("cannot record " + final_path + ": " + std::strerror(err));
    if (!append_line(dir_ + "/effects.log",
                     what + " " + call.idempotency_key + " " + where))
      throw std::runtime_error("cannot append to " + dir_ + "/effects.log");
    return true;
  }

  /// One line per try, whatever its outcome.
  void note_try(const std::string& kind, const conclave::step_call& call,
                const std::string& outcome) const {
    append_line(dir_ + "/tries.log", kind + " " + call.idempotency_key + " node "
                                         + std::to_string(node_) + " attempt "
                                         + std::to_string(call.attempt) + " " + outcome);
  }

  /// Lines in effects.log (the leader task's report).
  size_t effects() const {
    std::ifstream in{dir_ + "/effects.log"};
    size_t n = 0;
    for (std::string line; std::getline(in, line);)
      ++n;
    return n;
  }

private:
  std::string dir_;
  uint64_t node_;
};

/// Takes `--effects DIR` (or `--effects=DIR`) out of argv; the rest are the
/// node's own flags.
std::vector<const char*> split_args(int argc, char** argv, std::string& effects) {
  std::vector<const char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string_view a{argv[i]};
    if (i > 0 && a == "--effects" && i + 1 < argc)
      effects = argv[++i];
    else if (i > 0 && a.rfind("--effects=", 0) == 0)
      effects = std::string{a.substr(10)};
    else
      rest.push_back(argv[i]);
  }
  return rest;
}

} // namespace

int main(int argc, char** argv) {
  std::string effects_dir;
  auto args = split_args(argc, argv, effects_dir);
  conclave::embedded_node node{static_cast<int>(args.size()), args.data()};
  if (!node.ok()) {
    int rc = node.run(); // the node's message (2), or its --help (0)
    if (rc == 0)
      std::printf("\norder_service also takes:\n  --effects DIR  the directory where "
                  "the services record their effects (shared by every copy)\n");
    return rc;
  }
  if (effects_dir.empty()) {
    std::fprintf(stderr, "order_service: error: --effects DIR is required (with conclave "
                         "cluster up: after --)\n");
    return 2;
  }
  const std::vector<std::string> kinds{"reserve", "payment", "ship"};
  effect_book book{effects_dir, node.id()};
  if (std::string why; !book.prepare(kinds, why)) {
    std::fprintf(stderr, "order_service: error: --effects: %s\n", why.c_str());
    return 2;
  }

  node.on_leading([&](const conclave::leadership& lead) {
    auto term = lead.term().to_string();
    node.log("leading in term " + term);
    size_t reported = book.effects();
    while (lead.wait_for(2s)) {
      if (auto n = book.effects(); n != reported) {
        node.log("term " + term + ": " + std::to_string(n) + " effects recorded");
        reported = n;
      }
    }
    node.log("stopped leading in term " + term);
  });

  // One function for the three services: check the payload, do the work,
  // record the effect once per key.
  auto service = [&](std::string kind, std::chrono::milliseconds work, bool flaky) {
    return [&node, &book, kind, work, flaky](const conclave::step_call& call) {
      if (call.payload.empty()) {
        book.note_try(kind, call, "permanent no_order");
        return conclave::step_result::permanent_failure("no_order", kind + ":ORDER");
      }
      std::this_thread::sleep_for(work);
      if (flaky && !call.compensation && card_network_busy(call)) {
        book.note_try(kind, call, "transient card_network_busy");
        return conclave::step_result::transient_failure(
            "card_network_busy", "the card network refused; retry");
      }
      // A compensation (a job spec may give one) has a key of its own.
      auto effect = call.compensation ? kind + "-undo" : kind;
      if (!book.record_once(kind, effect, call)) {
        book.note_try(kind, call, "ok (recorded before)");
        return conclave::step_result::success("recorded before");
      }
      book.note_try(kind, call, "ok");
      node.log(effect + " order " + call.payload + " (" + call.idempotency_key
               + ", attempt " + std::to_string(call.attempt) + ")");
      return conclave::step_result::success();
    };
  };
  node.on_agent("reserve", service("reserve", 150ms, false));
  node.on_agent("payment", service("payment", 300ms, true));
  node.on_agent("ship", service("ship", 200ms, false));
  return node.run(); // until SIGTERM or SIGINT
}
