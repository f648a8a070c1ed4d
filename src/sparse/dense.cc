#include "sparse/dense.h"

#include <numeric>

namespace concord::sparse {
namespace {

Problem dense_problem(int ranks, int64_t n) {
  Problem problem;
  problem.ranks = ranks;
  problem.count = static_cast<size_t>(n);
  problem.element_size = sizeof(float);
  problem.dtype = DataType::kFloat32;
  problem.op = ReduceOp::kSum;
  problem.native_available = false;
  return problem;
}

}  // namespace

const AllreduceEntry& SparseAllreduceDense::dense_algorithm(int ranks, int64_t n) {
  return select_algorithm(allreduce_algorithms(), dense_problem(ranks, n), CostParams{});
}

Cost SparseAllreduceDense::cost(int ranks, int64_t n) {
  return dense_algorithm(ranks, n).cost(dense_problem(ranks, n));
}

void SparseAllreduceDense::run(float* acc, int64_t n, SparseResult& result) {
  check_length(n);
  const AllreduceEntry& entry = dense_algorithm(comm_.size(), n);
  auto& instance = instances_[entry.name];
  if (!instance) {
    const AlgorithmContext context{comm_, scratch_, dense_problem(comm_.size(), n).chunk_bytes, {}, CostParams{}};
    instance = entry.create(context);
  }
  instance->start(acc, static_cast<size_t>(n), DataType::kFloat32, ReduceOp::kSum);
  run_to_completion(*instance);
  const auto P = static_cast<float>(comm_.size());
  result.indices.resize(static_cast<size_t>(n));
  std::iota(result.indices.begin(), result.indices.end(), int64_t{0});
  result.values.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    result.values[j] = acc[j] / P;
    acc[j] = 0.0f;
  }
}

}  // namespace concord::sparse
