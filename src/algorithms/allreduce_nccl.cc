#include "algorithms/allreduce_nccl.h"

#include <cstring>
#include <vector>

#include "algorithms/allreduce_ring.h"
#include "algorithms/device_capabilities.h"
#include "common/enforce.h"

namespace concord {

AllreduceNccl::AllreduceNccl(Communicator& comm, Device& device, nccl::Api& api)
    : comm_(comm), device_(device), api_(api), stream_(device.create_stream()), done_(device.create_event()) {}

AllreduceNccl::~AllreduceNccl() {
  try {
    stream_->synchronize();
  } catch (...) {
  }
  api_.destroy(comm_nccl_);
}

void AllreduceNccl::ensure_comm() {
  if (comm_nccl_ != nullptr) return;
  std::vector<uint8_t> id(nccl::UniqueId::kBytes);
  if (comm_.rank() == 0) {
    const nccl::UniqueId mine = api_.unique_id();
    std::memcpy(id.data(), mine.bytes, id.size());
  }
  comm_.broadcast_bytes(id, 0);
  CONCORD_ENFORCE(id.size() == nccl::UniqueId::kBytes, CommError, "nccl: the unique id broadcast carried ", id.size(),
                  " bytes, not ", nccl::UniqueId::kBytes);
  nccl::UniqueId unique;
  std::memcpy(unique.bytes, id.data(), id.size());
  comm_nccl_ = api_.init_rank(comm_.size(), unique, comm_.rank(), device_.cuda_ordinal());
}

void AllreduceNccl::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  start_out_of_place(data, data, count, dtype, op);
}

void AllreduceNccl::start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  const std::string reason = nccl::declines(dtype, op);
  CONCORD_ENFORCE(reason.empty(), InvalidArgument, "nccl allreduce of ", dtype_name(dtype), " ", reduce_op_name(op),
                  ": ", reason);
  ensure_comm();
  running_ = true;
  if (count > 0) {
    api_.all_reduce(input, output, count, nccl::type_of(dtype), nccl::op_of(op), comm_nccl_, stream_->cuda_stream());
  }
  stream_->record(*done_);
}

Progress AllreduceNccl::progress() {
  if (running_ && !done_->query()) return Progress::kInProgress;
  running_ = false;
  return Progress::kDone;
}

std::string AllreduceNccl::declines(const Problem& problem) {
  if (problem.device == nullptr) return "NCCL unavailable: no device capabilities given";
  if (!problem.device->nccl.available) return "NCCL unavailable: " + problem.device->nccl.reason;
  return nccl::declines(problem.dtype, problem.op);
}

double AllreduceNccl::seconds(const Problem& problem, const CostParams& params) {
  if (problem.ranks == 1 || problem.count == 0) return params.staging.kernel_alpha;
  CostParams on_device = params;
  on_device.gamma = params.staging.kernel_gamma;
  return AllreduceRing::cost(problem).seconds(on_device) + params.staging.kernel_alpha;
}

}  // namespace concord
