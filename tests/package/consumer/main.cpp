// Uses the installed conclave package: a store (commit, reopen, read back) and
// an election core. Exits 0 only if both work.
#include <actors/election/candidate_actor.hpp>
#include <actors/store/store_actor.hpp>
#include <protocols/election/core_factory.hpp>
#include <storage/collections.hpp>

#include <iostream>

int main(int argc, char** argv) {
  using namespace conclave;
  if (argc != 2) {
    std::cerr << "usage: consumer DATA_DIR\n";
    return 2;
  }
  store::state_manager_options o;
  o.dir = argv[1];
  for (int round = 0; round < 2; ++round) {
    auto s = store::state_manager::open(o);
    if (!s) {
      std::cerr << "open: " << s.error().message() << '\n';
      return 1;
    }
    auto d = s.value()->dictionary<std::string, int32_t>("d");
    if (!d)
      return 1;
    auto tx = s.value()->begin();
    if (round == 0) {
      if (!d.value().add(tx, "answer", 42) || !tx.commit())
        return 1;
    } else {
      auto got = d.value().try_get(tx, "answer");
      if (!got || !got.value() || got.value().value != 42) {
        std::cerr << "the committed value did not survive a reopen\n";
        return 1;
      }
    }
  }
  election::election_config cfg;
  auto core = election::make_core(election::node_id{1}, {election::node_id{2}}, cfg);
  if (!core) {
    std::cerr << "no election core\n";
    return 1;
  }
  std::cout << "conclave package: store and election ok\n";
  return 0;
}
