// Every registered reduce-scatter algorithm (src/algorithms/registry.h: ring, halving) on the
// in-process multi-rank transport (threads as ranks), P = 1..16 x every dtype, each with every
// op and the sizes 0, 1, P-1, P+1, 7, 1023 (and 100003 for sum): rank r's block
// patterns::segment(n, P, r) must match a float64 / modular-integer reference, and nothing
// past the buffer may be written. Also the same objects reused for successive calls.
// (Cost counts == transport counters for every reduce-scatter: test_algorithm_registry.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "allreduce_check.h"
#include "patterns/ring.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;
using testing_util::drive;
using testing_util::expect_reduced_element;
using testing_util::fill_input;
using testing_util::run_ranks;

struct Call {
  size_t n;
  DataType dtype;
  ReduceOp op;
};

// Runs `calls` in sequence with one instance of `entry` per rank (and one scratch buffer),
// then checks each call's own block on every rank.
void check_reduce_scatter(const ReduceScatterEntry& entry, int P, const std::vector<Call>& calls) {
  constexpr size_t kGuard = 16;
  std::vector<std::vector<std::vector<uint8_t>>> inputs(calls.size()), results(calls.size());
  for (size_t k = 0; k < calls.size(); ++k) {
    const size_t bytes = calls[k].n * dtype_size(calls[k].dtype);
    inputs[k].assign(P, std::vector<uint8_t>(bytes));
    results[k].resize(P);
    for (int r = 0; r < P; ++r) {
      fill_input(inputs[k][r].data(), calls[k].n, calls[k].dtype, calls[k].op, r);
      results[k][r] = inputs[k][r];
      results[k][r].resize(bytes + kGuard, 0x5A);
    }
  }
  std::vector<ScratchBuffer> scratch(P);
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int rank = comm.rank();
    auto algorithm = entry.create(AlgorithmContext{comm, scratch[rank]});
    for (size_t k = 0; k < calls.size(); ++k) {
      algorithm->start(results[k][rank].data(), calls[k].n, calls[k].dtype, calls[k].op);
      drive(*algorithm, aborted);
    }
  });
  ASSERT_EQ(error, "") << "reduce_scatter " << entry.name << " P=" << P;
  for (size_t k = 0; k < calls.size(); ++k) {
    const auto [n, dtype, op] = calls[k];
    const std::string what = cat("reduce_scatter ", entry.name, " P=", P, " n=", n, " dtype=", dtype_name(dtype),
                                 " op=", reduce_op_name(op), calls.size() > 1 ? cat(" call ", k) : "");
    const size_t bytes = n * dtype_size(dtype);
    for (int r = 0; r < P; ++r) {
      for (size_t b = bytes; b < bytes + kGuard; ++b)
        ASSERT_EQ(results[k][r][b], 0x5A) << "rank " << r << " wrote past the end (byte " << b << ", " << what << ")";
      const auto block = patterns::segment(n, P, r);
      int failures = 0;
      for (size_t i = block.offset; i < block.offset + block.count && failures < 10; ++i)
        failures += !expect_reduced_element(inputs[k], results[k][r].data(), i, dtype, op, cat("rank ", r), what);
    }
  }
}

using Param = std::tuple<std::string, int, DataType>;

class ReduceScatterAlgorithms : public ::testing::TestWithParam<Param> {};

TEST_P(ReduceScatterAlgorithms, EveryRankOwnsItsReducedBlockForEveryOpAndSize) {
  const auto& [name, P, dtype] = GetParam();
  const auto& entry = find_algorithm(reduce_scatter_algorithms(), name);
  const size_t sizes[] = {0, 1, static_cast<size_t>(P - 1), static_cast<size_t>(P + 1), 7, 1023};
  for (ReduceOp op : all_ops())
    for (size_t n : sizes) check_reduce_scatter(entry, P, {{n, dtype, op}});
  check_reduce_scatter(entry, P, {{100003, dtype, ReduceOp::kSum}});
}

std::vector<std::string> reduce_scatter_names() {
  std::vector<std::string> names;
  for (const auto& entry : reduce_scatter_algorithms()) names.push_back(entry.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, ReduceScatterAlgorithms,
                         ::testing::Combine(::testing::ValuesIn(reduce_scatter_names()), ::testing::Range(1, 17),
                                            ::testing::ValuesIn(all_dtypes())),
                         [](const auto& info) {
                           return cat(std::get<0>(info.param), "_P", std::get<1>(info.param), "_",
                                      dtype_name(std::get<2>(info.param)));
                         });

// One instance and one scratch buffer for a sequence of different calls (growing and
// shrinking sizes, other dtypes), as the executor reuses them.
class ReduceScatterReuse : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ReduceScatterReuse, SameObjectForSuccessiveCalls) {
  const auto& [name, P] = GetParam();
  check_reduce_scatter(find_algorithm(reduce_scatter_algorithms(), name), P,
                       {{1000, DataType::kFloat32, ReduceOp::kSum},
                        {3, DataType::kInt64, ReduceOp::kMax},
                        {0, DataType::kFloat16, ReduceOp::kSum},
                        {4099, DataType::kBFloat16, ReduceOp::kSum},
                        {17, DataType::kFloat64, ReduceOp::kProduct}});
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, ReduceScatterReuse,
                         ::testing::Combine(::testing::ValuesIn(reduce_scatter_names()), ::testing::Values(3, 5, 8)),
                         [](const auto& info) { return cat(std::get<0>(info.param), "_P", std::get<1>(info.param)); });

}  // namespace
}  // namespace concord
