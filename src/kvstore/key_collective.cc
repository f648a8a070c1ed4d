#include "kvstore/key_collective.h"

#include "common/reduce.h"

namespace concord::kvstore {

CommSlot::CommSlot(std::unique_ptr<Communicator> comm, std::string forced, bool nonblocking_only, size_t chunk_bytes,
                   CostParams params)
    : comm_(std::move(comm)),
      forced_(std::move(forced)),
      nonblocking_only_(nonblocking_only),
      chunk_bytes_(chunk_bytes),
      params_(params) {}

AlgorithmContext CommSlot::context() { return AlgorithmContext{*comm_, scratch_, chunk_bytes_, {}, params_}; }

AllreduceAlgorithm& CommSlot::allreduce(size_t count, DataType dtype, ReduceOp op) {
  const AlgorithmContext ctx = context();
  Problem problem = make_problem(ctx, count, dtype, op);
  if (nonblocking_only_) problem.native_available = false;
  const auto& entry = select_algorithm(allreduce_algorithms(), problem, params_, forced_);
  auto& instance = allreduces_[entry.name];
  if (!instance) instance = entry.create(ctx);
  return *instance;
}

BroadcastAlgorithm& CommSlot::broadcast(size_t bytes) {
  const AlgorithmContext ctx = context();
  const Problem problem = make_problem(ctx, bytes, DataType::kUInt8, ReduceOp::kSum);
  const auto& entry = select_algorithm(broadcast_algorithms(), problem, params_);
  auto& instance = broadcasts_[entry.name];
  if (!instance) instance = entry.create(ctx);
  return *instance;
}

KeyCollective::KeyCollective(CommSlot& slot, const KeyHeader& mine, void* data, bool verified)
    : slot_(slot), mine_(mine), data_(data) {
  if (mine.operation == static_cast<int32_t>(KeyOperation::kPush)) {
    digest_.emplace(slot.comm(), KeyDigest::of(mine, verified));
    phase_ = Phase::kDigest;
  } else {
    check_.emplace(slot.comm(), mine);
  }
}

void KeyCollective::start_collective() {
  const size_t count = static_cast<size_t>(mine_.num_elements);
  const auto dtype = static_cast<DataType>(mine_.dtype);
  if (count == 0) {
    phase_ = Phase::kDone;
    return;
  }
  if (mine_.operation == static_cast<int32_t>(KeyOperation::kInit)) {
    auto& broadcast = slot_.broadcast(count * dtype_size(dtype));
    broadcast.start(data_, count * dtype_size(dtype), 0);
    collective_ = &broadcast;
  } else {
    auto& allreduce = slot_.allreduce(count, dtype, static_cast<ReduceOp>(mine_.op));
    allreduce.start(data_, count, dtype, static_cast<ReduceOp>(mine_.op));
    collective_ = &allreduce;
  }
  phase_ = Phase::kCollective;
}

Progress KeyCollective::progress() {
  if (phase_ == Phase::kDigest) {
    if (digest_->progress() == Progress::kInProgress) return Progress::kInProgress;
    // The reduced digest is identical on every rank, so all take the same branch.
    if (digest_->reduced().all_agree()) {
      slot_.count_check(true);
      start_collective();
    } else {
      check_.emplace(slot_.comm(), mine_);
      phase_ = Phase::kCheck;
    }
  }
  if (phase_ == Phase::kCheck) {
    if (check_->progress() == Progress::kInProgress) return Progress::kInProgress;
    slot_.count_check(false);
    phase_ = Phase::kDone;  // a throw below leaves the operation finished
    throw_if_bad(check_->verdict());
    start_collective();
  }
  if (phase_ == Phase::kCollective) {
    if (collective_->progress() == Progress::kInProgress) return Progress::kInProgress;
    phase_ = Phase::kDone;
    const int P = slot_.comm().size();
    if (mine_.operation == static_cast<int32_t>(KeyOperation::kPush) &&
        static_cast<ReduceOp>(mine_.op) == ReduceOp::kAverage && P > 1)
      scale_buffer(data_, data_, static_cast<size_t>(mine_.num_elements), static_cast<DataType>(mine_.dtype), 1.0 / P);
  }
  return Progress::kDone;
}

}  // namespace concord::kvstore
