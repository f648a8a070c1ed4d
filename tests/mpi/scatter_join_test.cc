// Reduce-scatter, alltoall, grouped allgather, barrier and join through the public C++ API
// under mpirun (1..4 ranks): every dtype, uneven rows and splits (zeros included), results
// checked element by element against references built from every rank's deterministic
// input; join with ranks that run different numbers of steps.
#include "mpi_test_util.h"

namespace concord::mpitest {
namespace {

class ReducescatterTest : public testing::TestWithParam<DataType> {};

// Rows 0, 1 and 2P+1 (rank 0 gets the extra row), Sum and Average, in flight together
// (fused). Integers: exact; floats: the additive values sum exactly over up to 4 ranks.
TEST_P(ReducescatterTest, EarlierRanksGetTheExtraRows) {
  const DataType dtype = GetParam();
  const int rank = concord::rank(), size = concord::size();
  struct Case {
    std::string name;
    ReduceOp op;
    int64_t rows;
    Tensor input, output;
    Handle handle;
  };
  std::vector<Case> cases;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{2 * size + 1}}) {
      Case c{std::string("rs.") + dtype_name(dtype) + "." + reduce_op_name(op) + "." + std::to_string(rows),
             op,
             rows,
             Tensor(dtype, {rows, 3}),
             Tensor(dtype, {reducescatter_rows(rows, size, rank), 3}),
             {}};
      for (int64_t i = 0; i < c.input.count(); ++i) c.input.set(i, additive_value<Real>(dtype, rank, i, 5));
      cases.push_back(std::move(c));
    }
  }
  for (auto& c : cases)
    c.handle = reducescatter_async(c.name, c.input.view(), c.output.view(), ReducescatterOptions{c.op});
  for (auto& c : cases) {
    const std::string context = describe("reducescatter", c.name, dtype, c.output.count());
    if (!wait_ok(c.handle, context)) continue;
    const int64_t start = rank * (c.rows / size) + std::min<int64_t>(rank, c.rows % size);
    std::vector<Real> expected;
    for (int64_t i = 0; i < c.output.count(); ++i) {
      Real sum = 0;
      for (int q = 0; q < size; ++q) sum += additive_value<Real>(dtype, q, start * 3 + i, 5);
      // Average: the sum times 1/size (integers: in double, truncated toward zero).
      if (c.op == ReduceOp::kAverage)
        sum = is_floating(dtype) ? sum / size : std::trunc(Real(static_cast<double>(sum) * (1.0 / size)));
      expected.push_back(sum);
    }
    std::vector<Real> tolerance(expected.size(), 0);
    if (is_floating(dtype) && c.op == ReduceOp::kAverage)
      for (size_t i = 0; i < expected.size(); ++i) tolerance[i] = 2 * unit_roundoff(dtype) * std::fabs(expected[i]);
    expect_elements(context, dtype, c.output.data(), expected, tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReducescatterTest, testing::ValuesIn(all_dtypes()),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

class AlltoallTest : public testing::TestWithParam<DataType> {};

// Rank i sends (i + 2j) mod 3 rows of 2 elements to rank j.
TEST_P(AlltoallTest, UnevenSplitsArriveInRankOrder) {
  const DataType dtype = GetParam();
  const int rank = concord::rank(), size = concord::size();
  auto S = [](int i, int j) { return static_cast<int64_t>((i + 2 * j) % 3); };
  std::vector<int64_t> splits;
  int64_t rows = 0;
  for (int j = 0; j < size; ++j) {
    splits.push_back(S(rank, j));
    rows += S(rank, j);
  }
  Tensor input(dtype, {rows, 2});
  for (int64_t i = 0; i < input.count(); ++i) input.set(i, additive_value<Real>(dtype, rank, i, 9));
  const std::string name = std::string("a2a.") + dtype_name(dtype);
  const Handle handle = alltoall_async(name, input.view(), AlltoallOptions{splits});
  const std::string context = describe("alltoall", name, dtype, input.count());
  if (!wait_ok(handle, context)) return;
  std::vector<Real> expected;
  std::vector<int64_t> received;
  for (int q = 0; q < size; ++q) {
    int64_t start = 0;
    for (int j = 0; j < rank; ++j) start += S(q, j);
    for (int64_t i = start * 2; i < (start + S(q, rank)) * 2; ++i)
      expected.push_back(additive_value<Real>(dtype, q, i, 9));
    received.push_back(S(q, rank));
  }
  EXPECT_EQ(handle.received_splits(), received) << context;
  ASSERT_EQ(handle.output_bytes().size(), expected.size() * dtype_size(dtype)) << context;
  expect_elements(context, dtype, handle.output_bytes().data(), expected);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AlltoallTest, testing::ValuesIn(all_dtypes()),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(AlltoallErrors, BadSplitsAreInvalidArgumentsAtSubmission) {
  const int size = concord::size();
  std::vector<float> data(size + 1, 1.0f);
  const TensorView view{data.data(), DataType::kFloat32, {size + 1}};
  EXPECT_THROW(alltoall_async("a2a.bad.length", view, AlltoallOptions{std::vector<int64_t>(size + 1, 0)}),
               InvalidArgument);
  std::vector<int64_t> negative(size, 0);
  negative[0] = -1;
  EXPECT_THROW(alltoall_async("a2a.bad.negative", view, AlltoallOptions{negative}), InvalidArgument);
  EXPECT_THROW(alltoall_async("a2a.bad.sum", view, AlltoallOptions{std::vector<int64_t>(size, 0)}), InvalidArgument);
  if (size > 1) EXPECT_THROW(alltoall_async("a2a.bad.equal", view), InvalidArgument);
  EXPECT_THROW(reducescatter_async("rs.bad.scalar", TensorView{data.data(), DataType::kFloat32, {}},
                                   TensorView{data.data(), DataType::kFloat32, {}}),
               InvalidArgument);
  expect_allreduce_works("a2a.bad.after");
}

TEST(GroupedAllgather, MembersOfDifferentShapes) {
  const int rank = concord::rank(), size = concord::size();
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
  std::vector<TensorView> views;
  for (int t = 0; t < 3; ++t) {
    inputs.emplace_back(DataType::kInt64, std::vector<int64_t>{rank + t, t + 1});
    for (int64_t i = 0; i < inputs.back().count(); ++i) inputs.back().set(i, Real(1000 * rank + 100 * t + i));
    names.push_back("gag." + std::to_string(t));
  }
  for (auto& input : inputs) views.push_back(input.view());
  const std::vector<Handle> handles = grouped_allgather_async(names, views);
  for (int t = 0; t < 3; ++t) {
    const std::string context = describe("grouped_allgather", names[t], DataType::kInt64, inputs[t].count());
    if (!wait_ok(handles[t], context)) continue;
    std::vector<Real> expected;
    for (int q = 0; q < size; ++q)
      for (int64_t i = 0; i < (q + t) * (t + 1); ++i) expected.push_back(Real(1000 * q + 100 * t + i));
    ASSERT_EQ(handles[t].output_bytes().size(), expected.size() * 8) << context;
    expect_elements(context, DataType::kInt64, handles[t].output_bytes().data(), expected);
  }
}

// Rank r runs r + 1 steps of a Sum allreduce of (r + 1), then joins: step s sums the ranks
// s..P-1. join() returns P-1 (it has the most steps, so it joins last) on every rank.
TEST(Join, RanksWithFewerStepsContributeNothing) {
  const int rank = concord::rank(), size = concord::size();
  std::vector<std::vector<int32_t>> results;
  for (int step = 0; step <= rank; ++step) {
    std::vector<int32_t> mine(4, rank + 1), out(4, -1);
    const std::string name = "join.step." + std::to_string(step);
    const Handle handle = allreduce_async(name, TensorView{mine.data(), DataType::kInt32, {4}},
                                          TensorView{out.data(), DataType::kInt32, {4}});
    if (wait_ok(handle, name)) results.push_back(out);
  }
  EXPECT_EQ(join(), size - 1);
  for (size_t step = 0; step < results.size(); ++step) {
    int32_t expected = 0;
    for (int q = static_cast<int>(step); q < size; ++q) expected += q + 1;
    EXPECT_EQ(results[step], std::vector<int32_t>(4, expected)) << "[rank " << rank << "] join step " << step;
  }
  barrier();
  expect_allreduce_works("join.after");
}

}  // namespace
}  // namespace concord::mpitest
