// Ok-Topk SGD's residual (error-feedback) bookkeeping around any sparse allreduce
// (docs/algorithms.md, "Ok-Topk sparse allreduce"; Li & Hoefler, PPoPP 2022,
// Algorithm 2). Each rank keeps its residual eps (n floats, zero at first); per step:
//   paper form (sgd_step):   acc = eps + lr g; U = sparse_allreduce(acc); w -= U
//   reference form (average): acc = eps + g;    U = sparse_allreduce(acc); the caller hands
//                             the dense averaged U to an ordinary optimizer (SGD momentum,
//                             Adam), as the public reference code does
// and eps becomes acc with S_i ∩ G zeroed (done by SparseAllreduce::allreduce). The first
// `warmup_steps` steps are dense instead (the reference trains dense for a warm-up: VGG 512
// steps, LSTM 128): U = allreduce(SUM) of the (lr-scaled) gradient / P by AllreduceRing over
// the communicator, 2(P-1)/P * 4n bytes per rank, and eps is left untouched.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "sparse/sparse_allreduce.h"
#include "transport/communicator.h"

namespace concord::sparse {

class ResidualSgd {
 public:
  /// `allreduce` (a sparse allreduce on `comm`) and `comm` must outlive this object; n is
  /// the gradient length (every rank the same), warmup_steps >= 0. Throws InvalidArgument
  /// for n < 0 or warmup_steps < 0.
  ResidualSgd(SparseAllreduce& allreduce, Communicator& comm, int64_t n, int64_t warmup_steps = 0);

  /// Paper form: `weights` (n floats) -= U with acc = eps + lr * gradient (n floats).
  /// Collective and blocking; errors as SparseAllreduce::allreduce.
  void sgd_step(const float* gradient, float lr, float* weights);
  /// Reference form: writes the dense averaged update U (n floats) to `averaged` with
  /// acc = eps + gradient. Collective and blocking; errors as SparseAllreduce::allreduce.
  void average(const float* gradient, float* averaged);

  /// eps of this rank (n floats).
  const std::vector<float>& residual() const { return residual_; }
  /// U of the last sparse step in COO form (empty after a dense warm-up step).
  const SparseResult& last_result() const { return result_; }
  /// Steps taken so far (dense and sparse).
  int64_t steps() const { return steps_; }

 private:
  // acc = eps + scale * gradient; U into `dense` (n floats, overwritten).
  void step(const float* gradient, float scale, float* dense);

  SparseAllreduce& allreduce_;
  Communicator& comm_;
  int64_t n_;
  int64_t warmup_steps_;
  int64_t steps_ = 0;
  std::vector<float> residual_;
  std::vector<float> update_;
  SparseResult result_;
  ScratchBuffer scratch_;
};

}  // namespace concord::sparse
