#include "algorithms/broadcast_chain.h"

#include <algorithm>

#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kBroadcastChain;
}  // namespace

BroadcastChain::BroadcastChain(Communicator& comm, size_t chunk_bytes)
    : comm_(comm), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)) {}

void BroadcastChain::start(void* data, size_t bytes, int root) {
  data_ = static_cast<uint8_t*>(data);
  chain_ = patterns::Chain{comm_.rank(), comm_.size(), root};
  plan_ = patterns::ChunkPlan::make(bytes, 1, chunk_bytes_);
  next_ = 0;
  receives_.clear();
  sends_.clear();
  if (chain_.previous() < 0) {  // the root has every chunk already
    if (chain_.next() >= 0)
      for (int c = 0; c < plan_.chunks; ++c)
        sends_.post(comm_.isend(data_ + plan_.offset_bytes(c), plan_.bytes(c), chain_.next(), kDataTag));
    next_ = plan_.chunks;
    return;
  }
  receives_.reserve(plan_.chunks);
  for (int c = 0; c < plan_.chunks; ++c)
    receives_.push_back(comm_.irecv(data_ + plan_.offset_bytes(c), plan_.bytes(c), chain_.previous(), kDataTag));
}

Progress BroadcastChain::progress() {
  for (; next_ < plan_.chunks; ++next_) {
    if (!reap_one(receives_[next_])) break;
    if (chain_.next() >= 0)
      sends_.post(comm_.isend(data_ + plan_.offset_bytes(next_), plan_.bytes(next_), chain_.next(), kDataTag));
  }
  const bool sent = sends_.reap_in_order();
  return sent && next_ == plan_.chunks ? Progress::kDone : Progress::kInProgress;
}

Cost BroadcastChain::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  const auto plan = patterns::ChunkPlan::make(problem.count, 1, problem.chunk_bytes);
  if (P == 1 || plan.chunks == 0) return cost;
  const uint64_t n = problem.count;
  cost.max_messages_sent = static_cast<uint64_t>(plan.chunks);
  cost.max_bytes_sent = n;
  cost.total_messages_sent = static_cast<uint64_t>(P - 1) * plan.chunks;
  cost.total_bytes_sent = static_cast<uint64_t>(P - 1) * n;
  const double steps = (P - 1) + (plan.chunks - 1);
  cost.rounds = steps;
  cost.wire_bytes = steps * static_cast<double>(plan.largest_bytes());
  return cost.place(problem.nodes);
}

RankTraffic BroadcastChain::sent_by(const Problem& problem, int rank) {
  const auto plan = patterns::ChunkPlan::make(problem.count, 1, problem.chunk_bytes);
  if (rank == problem.ranks - 1 || plan.chunks == 0) return {};  // the chain's last rank
  return {static_cast<uint64_t>(plan.chunks), problem.count};
}

}  // namespace concord
