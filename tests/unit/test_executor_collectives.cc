// The executor's reduce-scatter, alltoall and fused allgather, and a joined rank's
// placeholder (src/runtime/executor*.cc), over the in-process transport at 1..7 ranks (odd
// counts included): responses are built by hand, identical on every rank, as negotiation
// would deliver them; every rank checks its own output element by element against a
// reference built from every rank's input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "common/config.h"
#include "common/timeline.h"
#include "runtime/executor.h"
#include "runtime/handle_state.h"
#include "transport/inprocess_communicator.h"

namespace concord {
namespace {

// Rank q's value at element i of tensor t: small integers, exact in every float dtype.
double value(int q, int t, int64_t i) { return static_cast<double>((q * 5 + t * 3 + i) % 9) - 4; }

struct World {
  Config config;
  Timeline timeline;
};

TensorEntry entry(const std::string& name, void* input, void* output, DataType dtype, std::vector<int64_t> shape) {
  TensorEntry e;
  e.request.name = name;
  e.input = TensorView{input, dtype, shape};
  e.output = TensorView{output, dtype, shape};
  e.handle = std::make_shared<HandleState>();
  return e;
}

class ExecutorRanks : public ::testing::TestWithParam<int> {};

// Two fused reduce-scatters of 2P+1 and 1 rows (rank 0 gets the extra row; with one row,
// only rank 0 gets anything), Sum with prescale 2, then Average.
TEST_P(ExecutorRanks, FusedReducescatterGivesEarlierRanksTheExtraRows) {
  const int P = GetParam();
  const std::vector<int64_t> rows = {2 * P + 1, 1};
  const int64_t row = 3;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    std::vector<std::string> failures(P);
    InProcessWorld::run(P, [&](Communicator& comm) {
      World world;
      Executor executor(comm, world.config, CostParams{}, {}, world.timeline);
      TensorQueue queue;
      const int me = comm.rank();
      std::vector<std::vector<double>> inputs(2), outputs(2);
      std::vector<std::shared_ptr<HandleState>> handles;
      Response response;
      response.type = ResponseType::kReducescatter;
      response.dtype = DataType::kFloat64;
      response.op = op;
      response.prescale_factor = op == ReduceOp::kSum ? 2.0 : 1.0;
      for (int t = 0; t < 2; ++t) {
        inputs[t].resize(rows[t] * row);
        for (int64_t i = 0; i < rows[t] * row; ++i) inputs[t][i] = value(me, t, i);
        const int64_t mine = rows[t] / P + (me < rows[t] % P ? 1 : 0);
        outputs[t].assign(mine * row, -99);
        TensorEntry e =
            entry("rs" + std::to_string(t), inputs[t].data(), outputs[t].data(), DataType::kFloat64, {rows[t], row});
        e.output.shape = {mine, row};
        handles.push_back(e.handle);
        queue.push(e);
        response.names.push_back(e.request.name);
        response.sizes.push_back(rows[t] * row);
        response.rows.push_back(rows[t]);
        response.row_elements.push_back(row);
      }
      queue.pop_requests();
      executor.execute(response, queue);
      std::string& failure = failures[me];
      for (int t = 0; t < 2; ++t) {
        if (!handles[t]->done()) failure += "tensor " + std::to_string(t) + " not completed; ";
        const int64_t start = me * (rows[t] / P) + std::min<int64_t>(me, rows[t] % P);
        for (size_t k = 0; k < outputs[t].size(); ++k) {
          double expected = 0;
          for (int q = 0; q < P; ++q) expected += value(q, t, start * row + static_cast<int64_t>(k));
          expected = op == ReduceOp::kSum ? expected * 2 : expected / P;
          if (std::abs(outputs[t][k] - expected) > 1e-12 && failure.empty())
            failure = "tensor " + std::to_string(t) + " element " + std::to_string(k) + ": " +
                      std::to_string(outputs[t][k]) + " != " + std::to_string(expected);
        }
      }
    });
    for (int r = 0; r < P; ++r)
      EXPECT_TRUE(failures[r].empty()) << "P=" << P << " op=" << reduce_op_name(op) << " rank " << r << ": "
                                       << failures[r];
  }
}

// Uneven splits S[i][j] = (i + 2j) mod 3 (zeros included) of int16 rows of 2 elements.
TEST_P(ExecutorRanks, AlltoallWithUnevenSplits) {
  const int P = GetParam();
  auto S = [&](int i, int j) { return static_cast<int64_t>((i + 2 * j) % 3); };
  std::vector<std::string> failures(P);
  InProcessWorld::run(P, [&](Communicator& comm) {
    World world;
    Executor executor(comm, world.config, CostParams{}, {}, world.timeline);
    TensorQueue queue;
    const int me = comm.rank();
    auto rows_of = [&](int q) {
      int64_t n = 0;
      for (int j = 0; j < P; ++j) n += S(q, j);
      return n;
    };
    std::vector<int16_t> input(rows_of(me) * 2);
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int16_t>(me * 1000 + i);
    TensorEntry e = entry("a2a", input.data(), input.data(), DataType::kInt16, {rows_of(me), 2});
    auto handle = e.handle;
    queue.push(e);
    queue.pop_requests();
    Response response;
    response.type = ResponseType::kAlltoall;
    response.dtype = DataType::kInt16;
    response.names = {"a2a"};
    response.row_elements = {2};
    for (int i = 0; i < P; ++i)
      for (int j = 0; j < P; ++j) response.sizes.push_back(S(i, j));
    executor.execute(response, queue);
    std::vector<int16_t> expected;
    std::vector<int64_t> splits;
    for (int q = 0; q < P; ++q) {
      int64_t start = 0;
      for (int j = 0; j < me; ++j) start += S(q, j);
      for (int64_t k = start * 2; k < (start + S(q, me)) * 2; ++k)
        expected.push_back(static_cast<int16_t>(q * 1000 + k));
      splits.push_back(S(q, me));
    }
    std::vector<int16_t> got(handle->output_bytes.size() / 2);
    if (!got.empty()) std::memcpy(got.data(), handle->output_bytes.data(), handle->output_bytes.size());
    if (got != expected) failures[me] = "received data differs (" + std::to_string(got.size()) + " elements)";
    if (handle->received_splits != splits) failures[me] += " received splits differ";
    if (handle->output_shape != std::vector<int64_t>{static_cast<int64_t>(expected.size() / 2), 2})
      failures[me] += " output shape differs";
  });
  for (int r = 0; r < P; ++r) EXPECT_TRUE(failures[r].empty()) << "P=" << P << " rank " << r << ": " << failures[r];
}

// Horovod 0.28.1 refuses an allgather while some rank has joined (controller.cc,
// ConstructResponse): three fused allgathers with rank P-1 joined fail on every active rank
// with Horovod's text, naming the tensor.
TEST_P(ExecutorRanks, FusedAllgatherWithAJoinedRankFailsWithHorovodsText) {
  const int P = GetParam();
  if (P == 1) GTEST_SKIP() << "needs an active rank besides the joined one";
  const int joined = P - 1;
  std::vector<std::string> failures(P);
  InProcessWorld::run(P, [&](Communicator& comm) {
    World world;
    Executor executor(comm, world.config, CostParams{}, {}, world.timeline);
    TensorQueue queue;
    const int me = comm.rank();
    Response response;
    response.type = ResponseType::kAllgather;
    response.dtype = DataType::kFloat32;
    response.joined = {joined};
    std::vector<std::vector<float>> inputs(3);
    std::vector<std::shared_ptr<HandleState>> handles;
    for (int t = 0; t < 3; ++t) {
      response.names.push_back("ag" + std::to_string(t));
      response.row_elements.push_back(t + 1);
      for (int q = 0; q < P; ++q) response.sizes.push_back(q + t);
      if (me == joined) continue;
      inputs[t].assign((me + t) * (t + 1), 1.0f);
      TensorEntry e =
          entry(response.names.back(), inputs[t].data(), inputs[t].data(), DataType::kFloat32, {me + t, t + 1});
      handles.push_back(e.handle);
      queue.push(e);
    }
    queue.pop_requests();
    executor.execute(response, queue);
    for (size_t t = 0; t < handles.size(); ++t) {
      try {
        handles[t]->wait();
        failures[me] += "tensor " + std::to_string(t) + " completed; ";
      } catch (const InvalidArgument& e) {
        const std::string text = e.what();
        if (text.find("Allgather is not supported with Join at this time. Specify sparse_to_dense=True if using "
                      "DistributedOptimizer") == std::string::npos ||
            text.find("'ag0'") == std::string::npos)
          failures[me] += "tensor " + std::to_string(t) + ": " + text + "; ";
      }
    }
  });
  for (int r = 0; r < P; ++r) EXPECT_TRUE(failures[r].empty()) << "P=" << P << " rank " << r << ": " << failures[r];
}

// A joined rank's allreduce placeholder adds zeros, and Average divides by all P ranks, as
// Horovod's (the postscale 1 / P of its Average, then truncated for integers).
TEST_P(ExecutorRanks, JoinedRankAddsZerosAndAverageCountsEveryRank) {
  const int P = GetParam();
  if (P == 1) GTEST_SKIP() << "needs an active rank besides the joined one";
  std::vector<std::string> failures(P);
  InProcessWorld::run(P, [&](Communicator& comm) {
    World world;
    Executor executor(comm, world.config, CostParams{}, {}, world.timeline);
    TensorQueue queue;
    const int me = comm.rank();
    std::vector<int32_t> data(5, me + 1);
    std::shared_ptr<HandleState> handle;
    if (me != 0) {
      TensorEntry e = entry("x", data.data(), data.data(), DataType::kInt32, {5});
      handle = e.handle;
      queue.push(e);
      queue.pop_requests();
    }
    Response response;
    response.type = ResponseType::kAllreduce;
    response.dtype = DataType::kInt32;
    response.op = ReduceOp::kAverage;
    response.names = {"x"};
    response.sizes = {5};
    response.joined = {0};
    executor.execute(response, queue);
    if (me == 0) return;
    // Horovod's integer average: the sum (rank 0's zeros included) times 1.0 / P, truncated.
    const int32_t expected = static_cast<int32_t>((P * (P + 1) / 2 - 1) * (1.0 / P));
    for (int32_t v : data)
      if (v != expected) failures[me] = std::to_string(v) + " != " + std::to_string(expected);
  });
  for (int r = 0; r < P; ++r) EXPECT_TRUE(failures[r].empty()) << "P=" << P << " rank " << r << ": " << failures[r];
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExecutorRanks, ::testing::Values(1, 2, 3, 4, 5, 7),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace concord
