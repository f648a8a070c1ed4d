// AllreduceNccl: NCCL's allreduce as one more algorithm on device buffers (the "nccl" row
// of the registry, algorithms/registry.h). One NCCL communicator per instance -- the runtime keeps one
// instance per Concord communicator -- created lazily on the first start(): rank 0 makes
// the ncclUniqueId, Concord's control collectives (broadcast_bytes) hand it to every rank,
// each calls ncclCommInitRank with its Concord rank and its CUDA device. Each operation is
// one ncclAllReduce enqueued on this instance's CUDA stream, completion tracked by an
// event recorded after it (stream-ordered; progress() never blocks). The NCCL
// communicator is destroyed with the instance. NCCL needs one GPU per rank.
#pragma once

#include <memory>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "device/device.h"
#include "device/nccl/nccl_api.h"
#include "transport/communicator.h"

namespace concord {

class AllreduceNccl : public AllreduceAlgorithm {
 public:
  /// On `comm`'s ranks, with `device`'s streams (a CUDA device: its cuda_ordinal() and
  /// cuda_stream() are passed to NCCL) and `api` (nccl::library(), or a fake in tests).
  /// All three must outlive this object. Nothing is created until the first start().
  AllreduceNccl(Communicator& comm, Device& device, nccl::Api& api);
  /// Waits for the last operation, then ncclCommDestroy.
  ~AllreduceNccl() override;

  /// `data` is device memory; count elements of dtype. The first call is collective over
  /// the communicator (unique-id broadcast, ncclCommInitRank: blocks until every rank
  /// joined). Throws InvalidArgument when nccl::declines(dtype, op) is not empty, and
  /// DeviceError when NCCL fails.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  /// NCCL's out-of-place allreduce (send and receive buffers differ).
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  /// kDone once the event recorded after ncclAllReduce has completed.
  Progress progress() override;

  /// The NCCL communicator (null before the first start()).
  nccl::Comm nccl_comm() const { return comm_nccl_; }

  /// Registry row: name, description, memory kind.
  static constexpr const char* kName = "nccl";
  static constexpr const char* kDescription =
      "NCCL's allreduce on the device's stream (one NCCL communicator per instance, its unique id broadcast "
      "over the control collectives); needs one GPU per rank";
  static constexpr MemoryKind kMemory = MemoryKind::kDevice;
  /// Why NCCL cannot run `problem` ("" when it can): NCCL unavailable on some rank
  /// (problem.device), or a dtype/op NCCL lacks (nccl::declines).
  static std::string declines(const Problem& problem);
  /// Nothing goes through Concord's transport: NCCL moves the bytes itself.
  static Cost cost(const Problem&) { return Cost{}; }
  /// The ring's messages and bytes reduced on the device, and one kernel_alpha for the
  /// whole operation (NCCL runs every step inside one kernel, so there is no per-step
  /// launch). An ASSUMPTION like the other device constants: NCCL's own protocols (LL,
  /// LL128, Simple) and NVLink bandwidths are not modelled.
  static double seconds(const Problem& problem, const CostParams& params);

 private:
  void ensure_comm();

  Communicator& comm_;
  Device& device_;
  nccl::Api& api_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Event> done_;
  nccl::Comm comm_nccl_ = nullptr;
  bool running_ = false;
};

}  // namespace concord
