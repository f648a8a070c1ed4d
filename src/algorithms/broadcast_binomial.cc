#include "algorithms/broadcast_binomial.h"

#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kBroadcastBinomial;
}

BroadcastBinomial::BroadcastBinomial(Communicator& comm) : comm_(comm) {}

void BroadcastBinomial::start(void* data, size_t bytes, int root) {
  data_ = data;
  bytes_ = bytes;
  const patterns::BinomialTree tree{comm_.rank(), comm_.size(), root};
  children_ = tree.children();
  sends_.clear();
  sends_posted_ = false;
  receive_.reset();
  if (tree.parent() >= 0) receive_ = comm_.irecv(data, bytes, tree.parent(), kDataTag);
}

Progress BroadcastBinomial::progress() {
  if (receive_) {
    if (!reap_one(receive_)) return Progress::kInProgress;
    receive_.reset();
  }
  if (!sends_posted_) {
    for (int child : children_) sends_.post(comm_.isend(data_, bytes_, child, kDataTag));
    sends_posted_ = true;
  }
  return sends_.reap() ? Progress::kDone : Progress::kInProgress;
}

}  // namespace concord

namespace concord {

Cost BroadcastBinomial::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1) return cost;
  int rounds = 0;
  while ((1 << rounds) < P) ++rounds;
  const uint64_t n = problem.count;
  cost.max_messages_sent = static_cast<uint64_t>(rounds);  // the root
  cost.max_bytes_sent = rounds * n;
  cost.total_messages_sent = static_cast<uint64_t>(P - 1);
  cost.total_bytes_sent = (P - 1) * n;
  cost.rounds = rounds;
  cost.wire_bytes = static_cast<double>(rounds) * n;
  return cost.place(problem.nodes);
}

RankTraffic BroadcastBinomial::sent_by(const Problem& problem, int rank) {
  if (problem.ranks == 1) return {};
  const uint64_t children = patterns::BinomialTree{rank, problem.ranks, 0}.children().size();
  return {children, children * problem.count};
}

}  // namespace concord
