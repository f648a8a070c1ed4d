#include "algorithms/reduce_scatter_halving.h"

#include <algorithm>

#include "algorithms/doubling_steps.h"
#include "patterns/recursive_doubling.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kReduceScatterHalving;

patterns::Segment in_bytes(patterns::Segment elements, size_t element_size) {
  return {elements.offset * element_size, elements.count * element_size};
}
}  // namespace

ReduceScatterHalving::ReduceScatterHalving(Communicator& comm, ScratchBuffer& scratch)
    : ScheduledReduction(comm, scratch, kDataTag) {}

std::vector<ExchangeStep> ReduceScatterHalving::steps(int rank, int ranks, size_t count, size_t element_size) {
  std::vector<ExchangeStep> result;
  if (ranks == 1 || count == 0) return result;
  const patterns::RecursiveDoubling pattern{rank, ranks};
  const patterns::Segment whole{0, count * element_size};
  // The rank that folds out gets its own block back.
  const int out = pattern.folds_out() ? rank : pattern.fold_partner();
  const patterns::Segment returned =
      out < 0 ? patterns::Segment{0, 0} : in_bytes(patterns::segment(count, ranks, out), element_size);
  if (append_fold(result, pattern, whole, returned, Combine::kReduce)) return result;
  append_halving_steps(result, pattern, [&](patterns::BlockRange range) {
    return in_bytes(patterns::rank_blocks(count, pattern, range), element_size);
  });
  append_unfold(result, pattern, returned);
  return result;
}

Cost ReduceScatterHalving::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  tally_traffic(cost, P, [&](int rank) { return steps(rank, P, problem.count, problem.element_size); });
  const patterns::RecursiveDoubling pattern{0, P};
  const int pof2 = pattern.pof2();
  const int fold = P != pof2 ? 1 : 0;
  const size_t e = problem.element_size;
  size_t largest_virtual = 0;
  for (int v = 0; v < pof2; ++v)
    largest_virtual = std::max(largest_virtual, patterns::rank_blocks(problem.count, pattern, {v, v + 1}).count);
  const double n = static_cast<double>(problem.bytes());
  const double B = static_cast<double>(largest_virtual * e);
  const double b = static_cast<double>(patterns::segment(problem.count, P, 0).count * e);
  cost.rounds = pattern.rounds() + 2 * fold;
  cost.wire_bytes = (pof2 - 1) * B + fold * (n + b);
  cost.reduce_bytes = (pof2 - 1) * B + fold * n;
  return cost.place(problem.nodes);
}

}  // namespace concord
