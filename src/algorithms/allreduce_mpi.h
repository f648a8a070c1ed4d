// AllreduceMpi: the baseline, the transport's own allreduce (MPI_Allreduce, in place with
// MPI_IN_PLACE or out of place, on the data communicator; see
// MpiCommunicator::native_allreduce). It is what Concord's
// algorithms are measured against and what the cost model may pick where MPI is faster.
//
// Unlike every other algorithm, progress() blocks: the whole MPI_Allreduce runs in the first
// progress() call (start() only records the arguments). It declines where the transport has
// no native allreduce (the in-process transport).
//
// Cost: an estimate of what MPICH 4.x and Open MPI 4.1 (coll/tuned) select, in the
// alpha-beta-gamma model of Thakur, Rabenseifner & Gropp (IJHPCA 2005), p = 2^floor(log2 P):
//   n <= 2 KiB or count < p: recursive doubling (with the non-power-of-two fold):
//     ceil(log2 P) (+2 if P != p) rounds, as many whole vectors on the wire and reduced;
//   otherwise Rabenseifner (reduce-scatter by recursive halving + allgather by doubling):
//     2 log2 p (+2) rounds, 2 (p-1)/p n (+2n with the fold) wire bytes, (p-1)/p n (+n) reduced.
// MPI's messages never pass through Concord's counters, so the exact counts of its Cost
// (max/total messages and bytes sent) are all 0: tests that compare costs with counters
// must skip this algorithm (a Cost with zero counts for P > 1 and count > 0 marks it).
#pragma once

#include <cstddef>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "transport/communicator.h"

namespace concord {

class AllreduceMpi : public AllreduceAlgorithm {
 public:
  /// Runs on `native`, the data communicator's native collectives (Communicator::native()).
  explicit AllreduceMpi(NativeCollectives& native);

  /// Records the arguments; the allreduce runs in the next progress() call.
  void start(void* data, size_t count, DataType dtype, ReduceOp op) override;
  /// The same, out of place: MPI_Allreduce reads `input` and writes `output` (no copy).
  void start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  /// Runs native.native_allreduce() to completion (blocking) and returns kDone. Throws
  /// InvalidArgument when the transport has no native allreduce for the dtype and op,
  /// CommError when MPI fails.
  Progress progress() override;

  /// "" when the transport offers a native allreduce (Problem::native_available).
  static std::string declines(const Problem& problem);
  /// Registry name (as CONCORD_<COLLECTIVE>_ALGORITHM spells it) and one-line description:
  /// the registry, concord-info and concord-sim read them from here.
  static constexpr const char* kName = "mpi";
  static constexpr const char* kDescription =
      "the transport's MPI_Allreduce (baseline; blocking; cost estimated, not counted)";
  /// Estimated critical path (see the header comment); exact counts 0 (not observable).
  static Cost cost(const Problem& problem);

 private:
  NativeCollectives& native_;
  const void* input_ = nullptr;
  void* data_ = nullptr;
  size_t count_ = 0;
  DataType dtype_ = DataType::kFloat32;
  ReduceOp op_ = ReduceOp::kSum;
  bool pending_ = false;
};

}  // namespace concord
