#include "algorithms/allgather_ring.h"

#include <algorithm>

#include "common/enforce.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAllgatherRing;
}

AllgatherRing::AllgatherRing(Communicator& comm) : comm_(comm), ring_{comm.rank(), comm.size()} {}

void AllgatherRing::start(void* output, const std::vector<size_t>& block_bytes) {
  CONCORD_ENFORCE(static_cast<int>(block_bytes.size()) == ring_.size, InternalError, "allgather got ",
                  block_bytes.size(), " block sizes for ", ring_.size, " ranks");
  output_ = static_cast<uint8_t*>(output);
  bytes_ = block_bytes;
  offsets_.assign(ring_.size, 0);
  for (int r = 1; r < ring_.size; ++r) offsets_[r] = offsets_[r - 1] + bytes_[r - 1];
  step_ = 0;
  receives_.clear();
  sends_.clear();
  for (int s = 0; s < ring_.steps(); ++s) {
    const int index = ring_.gather_recv(s);
    receives_.push_back(comm_.irecv(block(index), bytes_[index], ring_.left(), kDataTag));
  }
  if (ring_.steps() > 0) {
    const int index = ring_.gather_send(0);
    sends_.post(comm_.isend(block(index), bytes_[index], ring_.right(), kDataTag));
  }
}

Progress AllgatherRing::progress() {
  while (step_ < ring_.steps()) {
    if (!reap_one(receives_[step_])) return Progress::kInProgress;
    if (step_ + 1 < ring_.steps()) {
      const int index = ring_.gather_send(step_ + 1);
      sends_.post(comm_.isend(block(index), bytes_[index], ring_.right(), kDataTag));
    }
    ++step_;
  }
  return sends_.reap() ? Progress::kDone : Progress::kInProgress;
}

}  // namespace concord

namespace concord {

Cost AllgatherRing::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1) return cost;
  // Rank r sends every block but its right neighbour's, (r+1) mod P.
  for (int r = 0; r < P; ++r) {
    const uint64_t sent = problem.count - patterns::segment(problem.count, P, (r + 1) % P).count;
    cost.max_bytes_sent = std::max(cost.max_bytes_sent, sent);
  }
  cost.max_messages_sent = static_cast<uint64_t>(P - 1);
  cost.total_messages_sent = static_cast<uint64_t>(P) * (P - 1);
  cost.total_bytes_sent = static_cast<uint64_t>(P - 1) * problem.count;
  cost.rounds = P - 1;
  cost.wire_bytes = static_cast<double>(P - 1) * patterns::segment(problem.count, P, 0).count;
  return cost.place(problem.nodes);
}

}  // namespace concord
