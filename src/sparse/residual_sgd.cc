#include "sparse/residual_sgd.h"

#include <algorithm>

#include "algorithms/allreduce_ring.h"
#include "common/enforce.h"

namespace concord::sparse {

ResidualSgd::ResidualSgd(SparseAllreduce& allreduce, Communicator& comm, int64_t n, int64_t warmup_steps)
    : allreduce_(allreduce), comm_(comm), n_(n), warmup_steps_(warmup_steps) {
  CONCORD_ENFORCE(n >= 0, InvalidArgument, "ResidualSgd: gradient length n must be >= 0, got ", n);
  CONCORD_ENFORCE(warmup_steps >= 0, InvalidArgument, "ResidualSgd: warmup_steps must be >= 0, got ", warmup_steps);
  residual_.assign(n, 0.0f);
  update_.resize(n);
}

void ResidualSgd::step(const float* gradient, float scale, float* dense) {
  const float ranks = static_cast<float>(comm_.size());
  if (steps_++ < warmup_steps_) {
    for (int64_t j = 0; j < n_; ++j) dense[j] = scale * gradient[j];
    result_ = {};
    if (comm_.size() > 1 && n_ > 0) {
      AllreduceRing ring(comm_, scratch_);
      ring.start(dense, static_cast<size_t>(n_), DataType::kFloat32, ReduceOp::kSum);
      run_to_completion(ring);
    }
    for (int64_t j = 0; j < n_; ++j) dense[j] /= ranks;
    return;
  }
  for (int64_t j = 0; j < n_; ++j) residual_[j] += scale * gradient[j];
  allreduce_.allreduce(residual_.data(), n_, result_);
  std::fill(dense, dense + n_, 0.0f);
  for (size_t e = 0; e < result_.indices.size(); ++e) dense[result_.indices[e]] = result_.values[e];
}

void ResidualSgd::sgd_step(const float* gradient, float lr, float* weights) {
  step(gradient, lr, update_.data());
  for (int64_t j = 0; j < n_; ++j) weights[j] -= update_[j];
}

void ResidualSgd::average(const float* gradient, float* averaged) { step(gradient, 1.0f, averaged); }

}  // namespace concord::sparse
