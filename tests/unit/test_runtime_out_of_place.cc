// The runtime's single-tensor allreduce path (Executor: no fusion buffer, the algorithm reads
// the input and writes the output, AllreduceAlgorithm::start_out_of_place) on the
// in-process transport: an out-of-place allreduce (input != output, the output
// garbage-filled) gives bit for bit what the in-place allreduce of the same data gives, for
// every dtype and op (Average, prescale and postscale included; Adasum on powers of two),
// sizes 0, 1, odd and large enough for the ring and halving-doubling, and leaves the input
// unchanged; sums, minima, maxima and products also match the reference. A fused response
// (several tensors at once) does the same through the fusion buffer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allreduce_check.h"
#include "rank_runner.h"
#include "runtime/runtime.h"
#include "test_support/dtype_util.h"
#include "test_support/runtime_requests.h"
#include "transport/communicator_set.h"

namespace concord {
namespace {

using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;
using testing_util::fill_input;
using testing_util::first_difference;
using testing_util::host_view;
using testing_util::run_ranks;
using testing_util::test_config;

Request allreduce(const std::string& name, ReduceOp op, double prescale = 1.0, double postscale = 1.0) {
  Request r;
  r.name = name;
  r.type = CollectiveType::kAllreduce;
  r.op = op;
  r.prescale_factor = prescale;
  r.postscale_factor = postscale;
  return r;
}

struct Case {
  DataType dtype;
  ReduceOp op;
  size_t n;
  double prescale = 1.0;
  double postscale = 1.0;
};

std::vector<Case> cases(int P) {
  // Every combination at small P; fewer sizes at large P (each case is two negotiated calls).
  const std::vector<size_t> sizes = P <= 4 ? std::vector<size_t>{0, 1, 7, 1023} : std::vector<size_t>{1, 1023};
  std::vector<Case> result;
  for (DataType dtype : all_dtypes())
    for (ReduceOp op : all_ops())
      for (size_t n : sizes) result.push_back({dtype, op, n});
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kInt8})
    result.push_back({dtype, ReduceOp::kSum, 70001});  // ring / halving-doubling sizes
  result.push_back({DataType::kFloat32, ReduceOp::kSum, 70001, 2.0, 0.25});
  result.push_back({DataType::kFloat64, ReduceOp::kAverage, 1023, 3.0, 0.5});
  if ((P & (P - 1)) == 0) {  // Adasum needs a power of two
    result.push_back({DataType::kFloat32, ReduceOp::kAdasum, 1023});
    result.push_back({DataType::kFloat64, ReduceOp::kAdasum, 70001});
  }
  return result;
}

std::string describe(const Case& c, int P) {
  return cat("P=", P, " ", dtype_name(c.dtype), " ", reduce_op_name(c.op), " n=", c.n, " prescale=", c.prescale,
             " postscale=", c.postscale);
}

class RuntimeOutOfPlace : public ::testing::TestWithParam<int> {};

TEST_P(RuntimeOutOfPlace, SingleTensorEqualsInPlaceAndLeavesTheInput) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config());
    const int rank = runtime.rank();
    int serial = 0;
    for (const Case& c : cases(P)) {
      const std::string what = cat("rank ", rank, " ", describe(c, P));
      const size_t bytes = c.n * dtype_size(c.dtype);
      std::vector<uint8_t> input(bytes), original, in_place, output(bytes, 0xA5);
      fill_input(input.data(), c.n, c.dtype, c.op == ReduceOp::kAdasum ? ReduceOp::kSum : c.op, rank);
      original = in_place = input;
      const std::string name = cat("oop", serial++);
      // One at a time, so each response holds a single tensor.
      runtime
          .enqueue(allreduce(name + ".in", c.op, c.prescale, c.postscale), host_view(in_place, c.dtype),
                   host_view(in_place, c.dtype))
          .wait();
      runtime
          .enqueue(allreduce(name + ".out", c.op, c.prescale, c.postscale), host_view(input, c.dtype),
                   host_view(output, c.dtype))
          .wait();
      ASSERT_EQ(first_difference(input, original, dtype_size(c.dtype)), -1) << what << ": the input changed";
      const long differs = first_difference(output, in_place, dtype_size(c.dtype));
      ASSERT_EQ(differs, -1) << what << ": out of place differs from in place at element " << differs;
      const bool plain =
          c.prescale == 1.0 && c.postscale == 1.0 && c.op != ReduceOp::kAverage && c.op != ReduceOp::kAdasum;
      if (!plain) continue;
      std::vector<std::vector<uint8_t>> inputs(P, std::vector<uint8_t>(bytes));
      for (int r = 0; r < P; ++r) fill_input(inputs[r].data(), c.n, c.dtype, c.op, r);
      for (size_t i = 0; i < c.n; ++i)
        ASSERT_TRUE(testing_util::expect_reduced_element(inputs, output.data(), i, c.dtype, c.op, cat("rank ", rank),
                                                         describe(c, P)));
    }
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// Several tensors submitted together (usually one fused response, through the fusion
// buffer), each out of place.
TEST_P(RuntimeOutOfPlace, FusedTensorsLeaveTheirInputs) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config());
    const int rank = runtime.rank();
    const std::vector<size_t> sizes = {1, 0, 7, 1023, 33};
    std::vector<std::vector<uint8_t>> inputs(sizes.size()), outputs(sizes.size());
    std::vector<Handle> handles;
    for (size_t t = 0; t < sizes.size(); ++t) {
      inputs[t].resize(sizes[t] * sizeof(int32_t));
      fill_input(inputs[t].data(), sizes[t], DataType::kInt32, ReduceOp::kSum, rank);
      outputs[t].assign(inputs[t].size(), 0xA5);
      handles.push_back(runtime.enqueue(allreduce(cat("fused", t), ReduceOp::kSum),
                                        host_view(inputs[t], DataType::kInt32),
                                        host_view(outputs[t], DataType::kInt32)));
    }
    for (size_t t = 0; t < sizes.size(); ++t) {
      handles[t].wait();
      std::vector<std::vector<uint8_t>> all(P, std::vector<uint8_t>(inputs[t].size()));
      for (int r = 0; r < P; ++r) fill_input(all[r].data(), sizes[t], DataType::kInt32, ReduceOp::kSum, r);
      ASSERT_EQ(first_difference(inputs[t], all[rank], sizeof(int32_t)), -1)
          << "rank " << rank << " tensor " << t << ": the input changed";
      for (size_t i = 0; i < sizes[t]; ++i)
        ASSERT_TRUE(testing_util::expect_reduced_element(all, outputs[t].data(), i, DataType::kInt32, ReduceOp::kSum,
                                                         cat("rank ", rank), cat("P=", P, " fused tensor ", t)));
    }
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

INSTANTIATE_TEST_SUITE_P(Ranks, RuntimeOutOfPlace, ::testing::Values(1, 2, 3, 4, 5, 8, 16),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace concord
