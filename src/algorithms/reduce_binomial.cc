#include "algorithms/reduce_binomial.h"

#include <algorithm>

#include "common/reduce.h"
#include "patterns/binomial_tree.h"
#include "transport/tags.h"

namespace concord {
namespace {

constexpr int kDataTag = tags::kReduceBinomial;

int ceil_log2(int n) {
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  return bits;
}

}  // namespace

ReduceBinomial::ReduceBinomial(Communicator& comm, ScratchBuffer& scratch, size_t chunk_bytes)
    : comm_(comm), scratch_(scratch), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)) {}

uint8_t* ReduceBinomial::slot(size_t child, int chunk) {
  return scratch_.get(2 * children_.size() * slot_bytes_) + (2 * child + chunk % 2) * slot_bytes_;
}

void ReduceBinomial::post_receive(size_t child, int chunk) {
  receives_[child][chunk % 2] = comm_.irecv(slot(child, chunk), plan_.bytes(chunk), children_[child], kDataTag);
}

void ReduceBinomial::start(void* data, size_t count, DataType dtype, ReduceOp op, int root) {
  const patterns::BinomialTree tree{comm_.rank(), comm_.size(), root};
  parent_ = tree.parent();
  children_ = tree.children();
  data_ = static_cast<uint8_t*>(data);
  dtype_ = dtype;
  op_ = op;
  plan_ = patterns::ChunkPlan::make(count, dtype_size(dtype), chunk_bytes_);
  slot_bytes_ = plan_.largest_bytes();
  next_ = 0;
  sends_.clear();
  receives_.clear();
  receives_.resize(children_.size());
  for (auto& slots : receives_) slots.resize(2);
  scratch_.get(2 * children_.size() * slot_bytes_);  // grow once, before any pointer is taken
  for (size_t child = 0; child < children_.size(); ++child)
    for (int chunk = 0; chunk < std::min(plan_.chunks, 2); ++chunk) post_receive(child, chunk);
}

Progress ReduceBinomial::progress() {
  while (next_ < plan_.chunks) {
    const int c = next_;
    bool arrived = true;
    for (auto& receives : receives_) arrived = reap_one(receives[c % 2]) && arrived;
    if (!arrived) break;
    uint8_t* mine = data_ + plan_.offset_bytes(c);
    for (size_t child = 0; child < children_.size(); ++child) {
      reduce_inplace(mine, slot(child, c), plan_.chunk(c).count, dtype_, op_);
      if (c + 2 < plan_.chunks) post_receive(child, c + 2);
    }
    if (parent_ >= 0) sends_.post(comm_.isend(mine, plan_.bytes(c), parent_, kDataTag));
    ++next_;
  }
  const bool sent = sends_.reap();
  return sent && next_ == plan_.chunks ? Progress::kDone : Progress::kInProgress;
}

Cost ReduceBinomial::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  const auto plan = patterns::ChunkPlan::make(problem.count, problem.element_size, problem.chunk_bytes);
  if (P == 1 || plan.chunks == 0) return cost;
  const uint64_t n = problem.bytes();
  cost.max_messages_sent = static_cast<uint64_t>(plan.chunks);
  cost.max_bytes_sent = n;
  cost.total_messages_sent = static_cast<uint64_t>(P - 1) * plan.chunks;
  cost.total_bytes_sent = static_cast<uint64_t>(P - 1) * n;
  const int d = ceil_log2(P);
  cost.rounds = d + plan.chunks - 1;
  cost.wire_bytes = static_cast<double>(d) * static_cast<double>(n);  // into the root, from d children
  cost.reduce_bytes = static_cast<double>(d) * static_cast<double>(n);
  return cost.place(problem.nodes);
}

RankTraffic ReduceBinomial::sent_by(const Problem& problem, int rank) {
  const auto plan = patterns::ChunkPlan::make(problem.count, problem.element_size, problem.chunk_bytes);
  if (rank == 0 || problem.ranks == 1) return {};
  return {static_cast<uint64_t>(plan.chunks), problem.bytes()};
}

}  // namespace concord
