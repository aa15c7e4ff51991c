#include "actors/replication/replica_inspect.hpp"

#include "actors/replication/checkpoint_image.hpp"
#include "actors/replication/record_codec.hpp"
#include "actors/replication/txn_apply.hpp"

namespace conclave::replication {

store::result<void> replica_replay_rules::load_checkpoint(std::string_view image) {
  auto img = decode_checkpoint_image(image);
  if (!img)
    return img.error();
  if (auto l = core_.load_checkpoint(img.value().store_image); !l)
    return l.error();
  last_ = img.value().at;
  return store::outcome::success();
}

store::result<void> replica_replay_rules::apply(const store::log_record& r) {
  auto e = from_log_record(r);
  if (!e || e->at.value != last_.value + 1)
    return store::errc::corrupt_data;
  if (e->kind == entry_kind::transaction) {
    auto ops = decode_payload(e->payload);
    if (!ops)
      return store::errc::corrupt_data;
    // A refused transaction (a conflict, a wrong kind) is an outcome every
    // replica computes alike, not damage.
    apply_txn(core_, *ops, e->at);
  }
  last_ = e->at;
  return store::outcome::success();
}

bool is_replica_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!store::is_data_dir(dir))
    return false;
  // The term file marks it; so does the place a node keeps it
  // (DATA_DIR/replica) or the amnesia mark: a replica whose term file is
  // lost is still a replica (and `store check` must say the file is lost).
  auto name = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
  return std::filesystem::exists(dir / "term", ec) || name == "replica"
         || std::filesystem::exists(dir / "amnesiac", ec);
}

} // namespace conclave::replication
