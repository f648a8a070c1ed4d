#include "algorithms/allreduce_recursive_doubling.h"

#include <algorithm>

#include "algorithms/doubling_steps.h"
#include "patterns/recursive_doubling.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAllreduceRecursiveDoubling;
}

AllreduceRecursiveDoubling::AllreduceRecursiveDoubling(Communicator& comm, ScratchBuffer& scratch)
    : ScheduledReduction(comm, scratch, kDataTag) {}

AllreduceRecursiveDoubling::AllreduceRecursiveDoubling(Communicator& comm, Kernels& kernels)
    : ScheduledReduction(comm, kernels, kDataTag) {}

std::vector<ExchangeStep> AllreduceRecursiveDoubling::steps(int rank, int ranks, size_t count, size_t element_size) {
  std::vector<ExchangeStep> result;
  if (ranks == 1 || count == 0) return result;
  const patterns::RecursiveDoubling pattern{rank, ranks};
  const patterns::Segment whole{0, count * element_size};
  if (!append_fold(result, pattern, whole, whole, Combine::kReduce)) {
    for (int k = 0; k < pattern.rounds(); ++k) {
      // The lower virtual rank's vector is the left operand on both partners.
      const bool lower = (pattern.virtual_rank() & pattern.doubling_distance(k)) == 0;
      result.push_back(
          exchange_step(pattern.doubling_partner(k), whole, whole, lower ? Combine::kReduce : Combine::kReduceLeft));
    }
    append_unfold(result, pattern, whole);
  }
  // Per-range completion: the whole vector is final once the last step that receives has
  // ended (the last round, or a folded rank's unfold receive); later steps only send.
  const auto last_receive =
      std::find_if(result.rbegin(), result.rend(), [](const ExchangeStep& step) { return step.recv_peer >= 0; });
  if (last_receive != result.rend()) last_receive->recv_final = true;
  return result;
}

Cost AllreduceRecursiveDoubling::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  tally_traffic(cost, P, [&](int rank) { return steps(rank, P, problem.count, problem.element_size); });
  const int pof2 = patterns::floor_pow2(P);
  const int fold = P != pof2 ? 1 : 0;
  const int rounds = patterns::log2_pow2(pof2);
  const double n = static_cast<double>(problem.bytes());
  cost.rounds = rounds + 2 * fold;
  cost.wire_bytes = (rounds + 2 * fold) * n;
  cost.reduce_bytes = (rounds + fold) * n;
  return cost.place(problem.nodes);
}

DeviceSteps AllreduceRecursiveDoubling::device_steps(const Problem& problem) {
  return schedule_device_steps(
      problem.ranks, [&](int rank) { return steps(rank, problem.ranks, problem.count, problem.element_size); }, 0,
      cost(problem).rounds + cost(problem).inter_rounds);
}

}  // namespace concord
