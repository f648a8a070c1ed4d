#include "algorithms/broadcast_binomial.h"

namespace concord {
namespace {
constexpr int kDataTag = 3;
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
    if (!receive_->test()) return Progress::kInProgress;
    receive_.reset();
  }
  if (!sends_posted_) {
    for (int child : children_) sends_.push_back(comm_.isend(data_, bytes_, child, kDataTag));
    sends_posted_ = true;
  }
  std::erase_if(sends_, [](RequestPtr& request) { return request->test(); });
  return sends_.empty() ? Progress::kDone : Progress::kInProgress;
}

}  // namespace concord
