// Schedules of the recursive halving / doubling family (patterns/recursive_doubling.h):
// the MPICH fold for non-power-of-two P, then either whole-vector recursive doubling or
// Rabenseifner's halving reduce-scatter + doubling allgather, then the unfold.
#include <algorithm>
#include <vector>

#include "algorithms/exchange_schedule.h"
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

// One range of `bytes` from `from` to `to` after `after`, as ExchangeSchedule sends it: in
// pieces of `chunk_bytes` (0: one message), each reduced on arrival when `reduce`. Returns
// the operation after which `to` holds all of it.
OpId send_range(Schedule& schedule, int from, int to, uint64_t bytes, bool reduce, OpId after, size_t chunk_bytes) {
  if (ExchangeSchedule::pieces(bytes, chunk_bytes) == 1)
    return schedule.send(from, to, bytes, reduce ? bytes : 0, {after});
  const uint64_t piece = ExchangeSchedule::piece_size(chunk_bytes);
  std::vector<OpId> arrived;
  for (uint64_t offset = 0; offset < bytes; offset += piece) {
    const uint64_t size = std::min(piece, bytes - offset);
    arrived.push_back(schedule.send(from, to, size, reduce ? size : 0, {after}));
  }
  return schedule.join(to, arrived);
}

// Fold: every folding-out rank sends its whole vector to its partner, which reduces it.
void fold(Schedule& schedule, RankState& state, int P, uint64_t bytes, size_t chunk_bytes) {
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling pattern{r, P};
    if (pattern.folds_out()) state.received(r + 1, send_range(schedule, r, r + 1, bytes, true, state[r], chunk_bytes));
  }
}

// Unfold: every folding-in rank sends the result back to its partner.
void unfold(Schedule& schedule, RankState& state, int P, uint64_t bytes, size_t chunk_bytes) {
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling pattern{r, P};
    if (pattern.folds_in()) state.received(r - 1, send_range(schedule, r, r - 1, bytes, false, state[r], chunk_bytes));
  }
}

// One round of the power-of-two phase: each participant sends `send_bytes(pattern)` to
// `partner(pattern)`, which reduces it when `reduce`. All sends of a round leave before any
// of the round's receives count (each depends on the sender's state before the round).
template <typename Partner, typename Bytes>
void round(Schedule& schedule, RankState& state, int P, Partner partner, Bytes send_bytes, bool reduce,
           size_t chunk_bytes) {
  std::vector<std::pair<int, OpId>> arrivals;
  for (int r = 0; r < P; ++r) {
    const RecursiveDoubling pattern{r, P};
    if (pattern.folds_out()) continue;
    const int to = partner(pattern);
    arrivals.push_back({to, send_range(schedule, r, to, send_bytes(pattern), reduce, state[r], chunk_bytes)});
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
  fold(schedule, state, P, bytes, 0);
  for (int k = 0; k < RecursiveDoubling{0, P}.rounds(); ++k)
    round(
        schedule, state, P, [k](const RecursiveDoubling& p) { return p.doubling_partner(k); },
        [bytes](const RecursiveDoubling&) { return bytes; }, true, 0);
  unfold(schedule, state, P, bytes, 0);
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
  const size_t chunk = problem.chunk_bytes;
  fold(schedule, state, P, problem.bytes(), chunk);
  for (int k = 0; k < rounds; ++k)
    round(
        schedule, state, P, [k](const RecursiveDoubling& p) { return p.halving_partner(k); },
        [&](const RecursiveDoubling& p) {
          return patterns::even_blocks(problem.count, pof2, p.halving_send(k)).count * e;
        },
        true, chunk);
  for (int k = 0; k < rounds; ++k)
    round(
        schedule, state, P, [k](const RecursiveDoubling& p) { return p.doubling_partner(k); },
        [&](const RecursiveDoubling& p) {
          return patterns::even_blocks(problem.count, pof2, p.doubling_send(k)).count * e;
        },
        false, chunk);
  unfold(schedule, state, P, problem.bytes(), chunk);
  return schedule;
}

}  // namespace concord::sim
