// Schedules of the recursive halving / doubling family (patterns/recursive_doubling.h):
// the MPICH fold for non-power-of-two P, then either whole-vector recursive doubling or
// Rabenseifner's halving reduce-scatter + doubling allgather, then the unfold.
#include <vector>

#include "patterns/recursive_doubling.h"
#include "sim/schedules.h"

namespace concord::sim {
namespace {

using patterns::RecursiveDoubling;

// Per rank, the operation after which it holds its current data (kNoOp: from the start).
class RankState {
 public:
  RankState(Schedule& schedule, int ranks) : schedule_(schedule), state_(ranks, kNoOp) {}

  OpId operator[](int rank) const { return state_[rank]; }
  /// `rank` has also received `message`.
  void received(int rank, OpId message) {
    const OpId both[] = {state_[rank], message};
    state_[rank] = state_[rank] == kNoOp ? message : schedule_.join(rank, both);
  }

 private:
  Schedule& schedule_;
  std::vector<OpId> state_;
};

// Fold: every folding-out rank sends its whole vector to its partner, which reduces it.
void fold(Schedule& schedule, RankState& state, int P, uint64_t bytes) {
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling pattern{r, P};
    if (pattern.folds_out()) state.received(r + 1, schedule.send(r, r + 1, bytes, bytes, {state[r]}));
  }
}

// Unfold: every folding-in rank sends the result back to its partner.
void unfold(Schedule& schedule, RankState& state, int P, uint64_t bytes) {
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling pattern{r, P};
    if (pattern.folds_in()) state.received(r - 1, schedule.send(r, r - 1, bytes, 0, {state[r]}));
  }
}

// One round of the power-of-two phase: each participant sends `send_bytes(pattern)` to
// `partner(pattern)`, which reduces it when `reduce`. All sends of a round leave before any
// of the round's receives count (each depends on the sender's state before the round).
template <typename Partner, typename Bytes>
void round(Schedule& schedule, RankState& state, int P, Partner partner, Bytes send_bytes, bool reduce) {
  std::vector<std::pair<int, OpId>> arrivals;
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling pattern{r, P};
    if (pattern.folds_out()) continue;
    const uint64_t bytes = send_bytes(pattern);
    const int to = partner(pattern);
    arrivals.push_back({to, schedule.send(r, to, bytes, reduce ? bytes : 0, {state[r]})});
  }
  for (const auto& [to, message] : arrivals) state.received(to, message);
}

}  // namespace

Schedule recursive_doubling_schedule(const Problem& problem) {
  const int P = problem.ranks;
  Schedule schedule(P);
  if (P == 1 || problem.count == 0) return schedule;
  const uint64_t bytes = problem.bytes();
  RankState state(schedule, P);
  fold(schedule, state, P, bytes);
  for (int k = 0; k < RecursiveDoubling{0, P}.rounds(); ++k)
    round(
        schedule, state, P, [k](const RecursiveDoubling& p) { return p.doubling_partner(k); },
        [bytes](const RecursiveDoubling&) { return bytes; }, true);
  unfold(schedule, state, P, bytes);
  return schedule;
}

Schedule halving_doubling_schedule(const Problem& problem) {
  const int P = problem.ranks;
  Schedule schedule(P);
  if (P == 1 || problem.count == 0) return schedule;
  const size_t e = problem.element_size;
  const int pof2 = patterns::floor_pow2(P);
  const int rounds = RecursiveDoubling{0, P}.rounds();
  RankState state(schedule, P);
  fold(schedule, state, P, problem.bytes());
  for (int k = 0; k < rounds; ++k)
    round(
        schedule, state, P, [k](const RecursiveDoubling& p) { return p.halving_partner(k); },
        [&](const RecursiveDoubling& p) {
          return patterns::even_blocks(problem.count, pof2, p.halving_send(k)).count * e;
        },
        true);
  for (int k = 0; k < rounds; ++k)
    round(
        schedule, state, P, [k](const RecursiveDoubling& p) { return p.doubling_partner(k); },
        [&](const RecursiveDoubling& p) {
          return patterns::even_blocks(problem.count, pof2, p.doubling_send(k)).count * e;
        },
        false);
  unfold(schedule, state, P, problem.bytes());
  return schedule;
}

}  // namespace concord::sim
