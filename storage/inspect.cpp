#include "storage/inspect.hpp"

#include "protocols/store/store_core.hpp"
#include "storage/checkpoint_file.hpp"

#include <algorithm>
#include <chrono>

namespace conclave::store {

namespace fs = std::filesystem;

bool data_dir_check::clean() const {
  return recoverable && !log.ends_early && log.damage.empty() && log.covered_gaps.empty()
         && std::all_of(checkpoints.begin(), checkpoints.end(),
                        [](const checkpoint_file& c) { return c.ok; });
}

bool is_data_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "log", ec) || fs::is_directory(dir / "checkpoints", ec);
}

namespace {

/// A store's own rules: its records and checkpoint image, by store_core.
class store_rules final : public replay_rules {
public:
  result<void> load_checkpoint(std::string_view image) override {
    return core_.load_checkpoint(image);
  }
  result<void> apply(const log_record& r) override { return core_.apply(r); }
  lsn last_lsn() const override { return core_.last_lsn(); }
  store_core& state() override { return core_; }

private:
  store_core core_;
};

} // namespace

result<data_dir_check> check_data_dir(const fs::path& dir) {
  store_rules rules;
  return check_data_dir(dir, rules);
}

result<data_dir_check> check_data_dir(const fs::path& dir, replay_rules& rules) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return errc::bad_argument;
  data_dir_check out;
  bool loaded = false;
  for (auto& file : list_checkpoints(dir)) {
    data_dir_check::checkpoint_file c;
    c.path = file;
    auto image = read_checkpoint(file);
    if (!image) {
      c.problem = image.error().message();
    } else {
      c.at = image.value().at;
      if (loaded) {
        c.ok = true; // verified, not needed
      } else if (auto l = rules.load_checkpoint(image.value().image); !l) {
        c.problem = "image: " + l.error().message();
      } else {
        c.ok = true;
        loaded = true;
        out.checkpoint_used = c.at;
      }
    }
    out.checkpoints.push_back(std::move(c));
  }
  bool replaying = true;
  log_scan_options so;
  so.base = rules.last_lsn();
  so.read_covered = true; // report damage recovery would not even read
  auto scanned =
      scan_log(dir, so, [&](const log_record& r, std::string_view) -> result<void> {
        if (!replaying)
          return outcome::success();
        if (auto a = rules.apply(r); !a) {
          replaying = false;
          out.recoverable = false;
          out.problem = "the log holds lsn " + to_string(r.lsn)
                        + " but the state is at lsn " + to_string(rules.last_lsn())
                        + ": the record does not apply";
        }
        return outcome::success();
      });
  if (!scanned)
    return scanned.error();
  out.log = std::move(scanned.value());
  if (out.log.fatal && out.recoverable) {
    out.recoverable = false;
    out.problem = out.log.problem;
  }
  out.recovered = rules.last_lsn();
  if (out.recoverable) {
    auto& core = rules.state();
    auto t = core.begin();
    for (auto& info : core.collections()) {
      op_request req;
      req.txn = t;
      req.collection = info.name;
      req.op =
          info.kind == collection_kind::queue ? operation::queue_count : operation::count;
      auto r = core.execute(req, timestamp{std::chrono::hours{1}});
      out.collections.push_back({info.name, info.kind, info.key_type, info.value_type,
                                 r ? r.value().count : 0});
    }
  }
  return out;
}

} // namespace conclave::store
