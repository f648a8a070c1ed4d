#include "algorithms/reduce_scatter_ring.h"

#include "patterns/ring.h"

namespace concord {
namespace {
constexpr int kDataTag = 13;
}

ReduceScatterRing::ReduceScatterRing(Communicator& comm, ScratchBuffer& scratch)
    : comm_(comm), schedule_(comm, scratch, kDataTag) {}

void ReduceScatterRing::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  schedule_.start(static_cast<uint8_t*>(data), steps(comm_.rank(), comm_.size(), count, dtype_size(dtype)), dtype, op);
}

Progress ReduceScatterRing::progress() { return schedule_.progress(); }

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
    ExchangeStep step;
    step.send_peer = ring.right();
    step.send_offset = out.offset * element_size;
    step.send_bytes = out.count * element_size;
    step.recv_peer = ring.left();
    step.recv_offset = in.offset * element_size;
    step.recv_bytes = in.count * element_size;
    step.combine = Combine::kReduce;
    result.push_back(step);
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
