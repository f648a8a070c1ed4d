// AllreduceStaged (src/algorithms/allreduce_staged.h) on the strict emulated device: every rank
// holds its tensor in "device memory" the test code cannot touch (EmulatedDevice), so the
// staged path is exercised exactly as on a GPU -- chunked d2h into pinned slots, the host
// algorithm per chunk, h2d back, event waits between the two streams. Results must equal,
// bit for bit, the same host algorithm run chunk by chunk on host memory, and the float64
// reference; P = 1..16, sizes 0, 1, odd and many chunks, every dtype, every op.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "algorithms/allreduce_ring.h"
#include "algorithms/allreduce_staged.h"
#include "algorithms/registry.h"
#include "allreduce_check.h"
#include "device/emulated_device.h"
#include "device_cases.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::device_case_name;
using testing_util::device_cases;
using testing_util::DeviceCase;
using testing_util::drive;
using testing_util::drive_counting_ranges;
using testing_util::expect_allreduce_results;
using testing_util::fill_input;
using testing_util::first_difference;
using testing_util::run_ranks;

class AllreduceStagedTest : public testing::TestWithParam<DeviceCase> {};

TEST_P(AllreduceStagedTest, EqualsHostRunChunkByChunk) {
  const auto [P, n, dtype, op] = GetParam();
  const size_t element = dtype_size(dtype);
  const size_t chunk_bytes = 4100;  // not a multiple of 8: rounds down to whole elements
  const std::string what = cat("staged(ring) P=", P, " n=", n, " ", dtype_name(dtype), " ", reduce_op_name(op),
                               " chunk_bytes=", chunk_bytes);
  std::vector<std::vector<uint8_t>> inputs(P), staged(P), host(P);
  for (int r = 0; r < P; ++r) {
    inputs[r].resize(n * element);
    fill_input(inputs[r].data(), n, dtype, op, r);
    staged[r].assign(n * element, 0xEE);
    host[r] = inputs[r];
  }
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int r = comm.rank();
    ScratchBuffer scratch, host_scratch;
    EmulatedDevice device;  // strict: the test cannot read `buffer` directly
    DeviceBuffer buffer(device, n * element);
    auto stream = device.create_stream();
    stream->copy(buffer.data(), inputs[r].data(), n * element, CopyKind::kHostToDevice);
    stream->synchronize();
    AllreduceStaged algorithm(device, std::make_unique<AllreduceRing>(comm, scratch, 256), chunk_bytes);
    for (int repeat = 0; repeat < 2; ++repeat) {  // the instance is reused
      if (repeat == 1) {
        stream->copy(buffer.data(), inputs[r].data(), n * element, CopyKind::kHostToDevice);
        stream->synchronize();
      }
      algorithm.start(buffer.data(), n, dtype, op);
      const size_t final_bytes = drive_counting_ranges(algorithm, n * element, aborted);
      if (final_bytes != n * element) throw std::runtime_error(cat("final ranges cover ", final_bytes, " bytes"));
    }
    stream->copy(staged[r].data(), buffer.data(), n * element, CopyKind::kDeviceToHost);
    stream->synchronize();
    // The same ring on host memory, chunk by chunk.
    AllreduceRing ring(comm, host_scratch, 256);
    const size_t chunk_elements = std::max<size_t>(chunk_bytes / element, 1);
    for (size_t first = 0; first < n; first += chunk_elements) {
      ring.start(host[r].data() + first * element, std::min(chunk_elements, n - first), dtype, op);
      drive(ring, aborted);
    }
  });
  ASSERT_EQ(error, "") << what;
  for (int r = 0; r < P; ++r) {
    const long diff = first_difference(staged[r], host[r], element);
    EXPECT_EQ(diff, -1) << "rank " << r << " element " << diff << " differs from the host run (" << what << ")";
  }
  expect_allreduce_results(inputs, staged, n, dtype, op, what);
}

INSTANTIATE_TEST_SUITE_P(Emulated, AllreduceStagedTest, testing::ValuesIn(device_cases(10007, 3001)),
                         [](const auto& info) { return device_case_name(info.param); });

// The registry entry: the cost model picks a chunk size and a host algorithm, and the
// instance it creates reduces correctly; more bytes never predict less time.
TEST(DeviceRegistry, StagedEntryCostsAndRuns) {
  const AllreduceEntry& staged = testing_util::allreduce_row("staged");
  EXPECT_EQ(staged.memory, MemoryKind::kDevice);
  testing_util::DeviceProblem problem;
  problem.problem.ranks = 4;
  EXPECT_EQ(staged.declines(problem.get()), "");
  EXPECT_EQ(staged.declines(problem.problem), "device buffers only");
  double previous = 0;
  for (size_t bytes = 4; bytes <= (size_t{256} << 20); bytes *= 4) {
    problem.problem.count = bytes / 4;
    const size_t chunk = AllreduceStaged::chunk_bytes_for(problem.get(), CostParams{});
    const double seconds = staged.seconds(problem.get(), CostParams{});
    EXPECT_EQ(seconds, AllreduceStaged::seconds(problem.get(), CostParams{}, chunk));
    EXPECT_GE(seconds, previous) << bytes << " bytes";
    EXPECT_GT(chunk, 0u);
    EXPECT_LE(chunk, std::max<size_t>(bytes, size_t{64} << 20)) << bytes << " bytes";
    previous = seconds;
  }
  const size_t n = 4099;
  std::vector<std::vector<uint8_t>> inputs(3), results(3);
  const std::string error = run_ranks(3, [&](Communicator& comm, const AbortFlag& aborted) {
    const int r = comm.rank();
    inputs[r].resize(n * 4);
    fill_input(inputs[r].data(), n, DataType::kFloat32, ReduceOp::kSum, r);
    results[r].resize(n * 4);
    ScratchBuffer scratch;
    AlgorithmContext ctx{comm, scratch, size_t{1} << 19, {}};
    EmulatedDevice device;
    ctx.device = &device;
    DeviceBuffer buffer(device, n * 4);
    auto stream = device.create_stream();
    stream->copy(buffer.data(), inputs[r].data(), n * 4, CopyKind::kHostToDevice);
    stream->synchronize();
    auto algorithm = staged.create(ctx);
    algorithm->start(buffer.data(), n, DataType::kFloat32, ReduceOp::kSum);
    drive(*algorithm, aborted);
    stream->copy(results[r].data(), buffer.data(), n * 4, CopyKind::kDeviceToHost);
    stream->synchronize();
  });
  ASSERT_EQ(error, "");
  expect_allreduce_results(inputs, results, n, DataType::kFloat32, ReduceOp::kSum, "staged via registry P=3");
}

}  // namespace
}  // namespace concord
