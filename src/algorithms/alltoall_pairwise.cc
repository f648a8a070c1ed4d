#include "algorithms/alltoall_pairwise.h"

#include <cstring>

#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAlltoallPairwise;
}  // namespace

AlltoallPairwise::AlltoallPairwise(Communicator& comm) : comm_(comm), pattern_{comm.rank(), comm.size()} {}

void AlltoallPairwise::start(const void* send, void* recv, size_t block_bytes) {
  send_ = static_cast<const uint8_t*>(send);
  recv_ = static_cast<uint8_t*>(recv);
  block_bytes_ = block_bytes;
  const size_t own = static_cast<size_t>(pattern_.rank) * block_bytes;
  if (block_bytes > 0) std::memcpy(recv_ + own, send_ + own, block_bytes);
  step_ = 1;
  send_request_.reset();
  receive_request_.reset();
  if (step_ <= pattern_.steps()) post_step();
}

void AlltoallPairwise::post_step() {
  const int from = pattern_.receive_from(step_);
  const int to = pattern_.send_to(step_);
  receive_request_ = comm_.irecv(recv_ + static_cast<size_t>(from) * block_bytes_, block_bytes_, from, kDataTag);
  send_request_ = comm_.isend(send_ + static_cast<size_t>(to) * block_bytes_, block_bytes_, to, kDataTag);
}

Progress AlltoallPairwise::progress() {
  while (step_ <= pattern_.steps()) {
    reap_one(send_request_);
    reap_one(receive_request_);
    if (send_request_ || receive_request_) return Progress::kInProgress;
    if (++step_ <= pattern_.steps()) post_step();
  }
  return Progress::kDone;
}

Cost AlltoallPairwise::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1) return cost;
  const uint64_t block = problem.count / static_cast<uint64_t>(P);
  const uint64_t steps = static_cast<uint64_t>(P - 1);
  cost.max_messages_sent = steps;
  cost.max_bytes_sent = steps * block;
  cost.total_messages_sent = steps * P;
  cost.total_bytes_sent = steps * P * block;
  cost.rounds = static_cast<double>(steps);
  cost.wire_bytes = static_cast<double>(steps * block);
  return cost.place(problem.nodes);
}

}  // namespace concord
