#include "algorithms/allreduce_halving_doubling.h"

#include <algorithm>

#include "algorithms/doubling_steps.h"
#include "patterns/recursive_doubling.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAllreduceHalvingDoubling;
}

AllreduceHalvingDoubling::AllreduceHalvingDoubling(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : ScheduledReduction(comm, scratch, kDataTag, chunk_bytes) {}

AllreduceHalvingDoubling::AllreduceHalvingDoubling(Communicator& comm, Kernels& kernels, size_t chunk_bytes)
    : ScheduledReduction(comm, kernels, kDataTag, chunk_bytes) {}

std::vector<ExchangeStep> AllreduceHalvingDoubling::steps(int rank, int ranks, size_t count, size_t element_size) {
  std::vector<ExchangeStep> result;
  if (ranks == 1 || count == 0) return result;
  const patterns::RecursiveDoubling pattern{rank, ranks};
  const patterns::Segment whole{0, count * element_size};
  // Per-range completion: the whole buffer a folded-out rank gets back, the block the
  // last halving round reduces (this rank's own), every block the doubling rounds receive.
  if (append_fold(result, pattern, whole, whole, Combine::kReduce)) {
    result.back().recv_final = true;
    return result;
  }
  const BlockSpan span = [&](patterns::BlockRange range) {
    const auto elements = patterns::even_blocks(count, pattern.pof2(), range);
    return patterns::Segment{elements.offset * element_size, elements.count * element_size};
  };
  append_halving_steps(result, pattern, span);
  result.back().recv_final = true;
  const size_t first_doubling = result.size();
  append_doubling_steps(result, pattern, span);
  for (size_t i = first_doubling; i < result.size(); ++i) result[i].recv_final = true;
  append_unfold(result, pattern, whole);
  return result;
}

Cost AllreduceHalvingDoubling::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  const auto steps_of = [&](int rank) { return steps(rank, P, problem.count, problem.element_size); };
  tally_traffic(cost, P, steps_of, problem.chunk_bytes);
  Cost whole;  // one message per range: the pieces beyond it each add a message's latency
  tally_traffic(whole, P, steps_of);
  const int pof2 = patterns::floor_pow2(P);
  const int fold = P != pof2 ? 1 : 0;
  const double n = static_cast<double>(problem.bytes());
  const double block = static_cast<double>(patterns::segment(problem.count, pof2, 0).count * problem.element_size);
  cost.rounds = 2.0 * patterns::log2_pow2(pof2) + 2 * fold +
                static_cast<double>(cost.max_messages_sent - whole.max_messages_sent);
  cost.wire_bytes = 2.0 * (pof2 - 1) * block + 2.0 * fold * n;
  cost.reduce_bytes = (pof2 - 1) * block + fold * n;
  return cost.place(problem.nodes);
}

DeviceSteps AllreduceHalvingDoubling::device_steps(const Problem& problem) {
  return schedule_device_steps(
      problem.ranks, [&](int rank) { return steps(rank, problem.ranks, problem.count, problem.element_size); },
      problem.chunk_bytes, cost(problem).rounds + cost(problem).inter_rounds);
}

}  // namespace concord
