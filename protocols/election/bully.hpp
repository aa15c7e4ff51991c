// Bully election (Garcia-Molina, "Elections in a Distributed Computing System",
// IEEE Trans. Computers, 1982), with terms.
//
// Message flow. An initiator sends ELECTION to every higher id not known down
// (nor named silent in its last leader's latest heartbeat). A
// higher candidate replies ANSWER and holds its own election (a leader instead
// re-sends COORDINATOR with its current term). An initiator that hears no ANSWER
// within answer_timeout wins: it takes term (max epoch seen + 1, self) and sends
// COORDINATOR to every peer not known down. One that got an ANSWER waits
// coordinator_timeout for the COORDINATOR and starts over if none comes.
//
// Costs: when the highest live id initiates and knows who is down, n-2 coordinator
// messages in a group of n where one member (the old leader) is down; when the
// lowest id initiates, O(n^2).
//
// Options: with `preempt` a higher id that learns of a lower leader holds an
// election and takes over (classic Bully); without it the leader keeps its role.
#pragma once

#include "protocols/election/candidate_core.hpp"

namespace conclave::election {

class bully_core final : public candidate_core {
public:
  using candidate_core::candidate_core;

private:
  enum class phase { idle, awaiting_answers, awaiting_coordinator };

  void begin_election(timestamp now) override;
  void on_algorithm_message(const message& m, timestamp now) override;
  void on_algorithm_tick(timestamp now) override;
  std::optional<timestamp> algorithm_deadline() const override;
  void end_election() override { phase_ = phase::idle; }
  bool in_election() const override { return phase_ != phase::idle; }

  void on_election(const election_msg& m, timestamp now);
  void on_answer(const answer_msg& m, timestamp now);
  void on_coordinator(const coordinator_msg& m, timestamp now);
  void win(timestamp now);

  phase phase_ = phase::idle;
  timestamp deadline_{0};
};

} // namespace conclave::election
