#include "algorithms/reduce_scatter_ring.h"

#include "patterns/ring.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kReduceScatterRing;
}

ReduceScatterRing::ReduceScatterRing(Communicator& comm, ScratchBuffer& scratch)
    : ScheduledReduction(comm, scratch, kDataTag) {}

std::vector<ExchangeStep> ReduceScatterRing::steps(int rank, int ranks, size_t count, size_t element_size) {
  std::vector<ExchangeStep> result;
  if (ranks == 1 || count == 0) return result;
  // The ring pattern of rank - 1 sends (r - 1 - s) and receives (r - 2 - s) at step s and
  // so ends owning block r; the neighbours are this rank's own.
  const patterns::Ring ring{rank, ranks};
  const patterns::Ring shifted{ring.left(), ranks};
  for (int s = 0; s < ring.steps(); ++s) {
    const auto out = patterns::segment(count, ranks, shifted.reduce_scatter_send(s));
    const auto in = patterns::segment(count, ranks, shifted.reduce_scatter_recv(s));
    result.push_back(sendrecv_step(ring.right(), {out.offset * element_size, out.count * element_size}, ring.left(),
                                   {in.offset * element_size, in.count * element_size}, Combine::kReduce));
  }
  return result;
}

Cost ReduceScatterRing::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  tally_traffic(cost, P, [&](int rank) { return steps(rank, P, problem.count, problem.element_size); });
  const double block = static_cast<double>(patterns::segment(problem.count, P, 0).count * problem.element_size);
  cost.rounds = P - 1;
  cost.wire_bytes = (P - 1) * block;
  cost.reduce_bytes = (P - 1) * block;
  return cost.place(problem.nodes);
}

}  // namespace concord
