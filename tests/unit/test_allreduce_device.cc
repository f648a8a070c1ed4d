// The host allreduce algorithms on device buffers with the device's kernels (DeviceKernels,
// src/algorithms/device_kernels.h): the registry's device rows of src/algorithms/
// allreduce_device.h -- the ring ("cuda_aware", "staged_gpu"), the pipelined trees and
// C-Cube's overlapped trees ("cuda_aware_tree", "staged_gpu_overlapped_double_tree", ...),
// halving-doubling and recursive doubling -- on the strict emulated device: every rank's
// tensor and the algorithm's receive scratch are "device memory" the host cannot touch,
// and every reduction and copy runs on the device's stream, completing later (tickets).
// The cuda_aware row runs over a transport that takes device pointers (StagingCommunicator
// over the in-process transport, moving the bytes through the device's streams, as a
// CUDA-aware MPI without GPUDirect does); the staged_gpu row builds its own
// StagingCommunicator around the in-process transport. Results must equal the same host
// algorithm on host memory with the same chunk size bit for bit (same schedule, same
// operands), and the float64 reference; algorithm x P = 1..16 x sizes 0, 1, odd and many
// chunks x every dtype and op, in place and out of place, the instance reused. A kernel
// whose ticket an algorithm does not wait for (a reduced chunk sent, or a receive slot
// reused, before its kernel is done) shows here as a difference.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "algorithms/allreduce_device.h"
#include "algorithms/device_kernels.h"
#include "algorithms/tree_chunking.h"
#include "allreduce_check.h"
#include "device/emulated_device.h"
#include "device_cases.h"
#include "transport/staging_communicator.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::allreduce_row;
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

// The host algorithms that serve device memory, by registry name.
const std::vector<std::string> kHostAlgorithms = {"ring",
                                                  "tree",
                                                  "double_tree",
                                                  "overlapped_tree",
                                                  "overlapped_double_tree",
                                                  "halving_doubling",
                                                  "recursive_doubling"};

using DeviceAlgorithmCase = std::tuple<std::string, DeviceCase>;

class AllreduceOnDeviceTest : public testing::TestWithParam<DeviceAlgorithmCase> {};

TEST_P(AllreduceOnDeviceTest, EqualsHostAlgorithmBitForBit) {
  const auto& [host_name, device_case] = GetParam();
  const auto [P, n, dtype, op] = device_case;
  const size_t element = dtype_size(dtype);
  const size_t bytes = n * element;
  const size_t chunk_bytes = 300;  // several chunks per segment or tree, not a multiple of 8
  const DeviceTransport transports[2] = {DeviceTransport::kCudaAware, DeviceTransport::kStagedGpu};
  // results[t][mode][rank]: transport t, in place (0) or out of place (1).
  std::vector<std::vector<uint8_t>> inputs(P), host(P);
  std::vector<std::vector<uint8_t>> results[2][2];
  for (auto& by_transport : results)
    for (auto& by_mode : by_transport) by_mode.assign(P, std::vector<uint8_t>(bytes, 0xEE));
  for (int r = 0; r < P; ++r) {
    inputs[r].resize(bytes);
    fill_input(inputs[r].data(), n, dtype, op, r);
    host[r] = inputs[r];
  }
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int r = comm.rank();
    EmulatedDevice device;  // strict: neither the test nor the algorithm can read the buffers directly
    StagingCommunicator takes_device_pointers(comm, device);
    DeviceBuffer buffer(device, bytes), input(device, bytes);
    auto stream = device.create_stream();
    ScratchBuffer scratch;
    for (int t = 0; t < 2; ++t) {
      const std::string row = device_row_name(host_name, transports[t]);
      // cuda_aware sends the device pointers as they are; staged_gpu stages them itself.
      AlgorithmContext ctx{t == 0 ? static_cast<Communicator&>(takes_device_pointers) : comm, scratch, chunk_bytes, {}};
      ctx.device = &device;
      const auto algorithm = allreduce_row(row).create(ctx);
      for (int mode = 0; mode < 2; ++mode) {  // the instance is reused: in place, then out of place
        stream->copy(mode == 0 ? buffer.data() : input.data(), inputs[r].data(), bytes, CopyKind::kHostToDevice);
        stream->synchronize();
        if (mode == 0) {
          algorithm->start(buffer.data(), n, dtype, op);
        } else {
          algorithm->start_out_of_place(input.data(), buffer.data(), n, dtype, op);
        }
        const size_t covered = drive_counting_ranges(*algorithm, bytes, aborted);
        if (covered != bytes)
          throw std::runtime_error(cat(row, " rank ", r, ": final ranges cover ", covered, " of ", bytes, " bytes"));
        stream->copy(results[t][mode][r].data(), buffer.data(), bytes, CopyKind::kDeviceToHost);
        stream->synchronize();
      }
    }
    AlgorithmContext host_ctx{comm, scratch, chunk_bytes, {}};
    const auto reference = allreduce_row(host_name).create(host_ctx);
    reference->start(host[r].data(), n, dtype, op);
    drive(*reference, aborted);
  });
  const std::string what = cat("P=", P, " n=", n, " ", dtype_name(dtype), " ", reduce_op_name(op));
  ASSERT_EQ(error, "") << host_name << " on device memory " << what;
  for (int t = 0; t < 2; ++t) {
    const std::string row = device_row_name(host_name, transports[t]);
    for (int mode = 0; mode < 2; ++mode) {
      for (int r = 0; r < P; ++r) {
        const long diff = first_difference(results[t][mode][r], host[r], element);
        EXPECT_EQ(diff, -1) << "rank " << r << " element " << diff << ": " << row << " ("
                            << (mode == 0 ? "in place" : "out of place") << ", " << what << ") differs from '"
                            << host_name << "' on host memory";
      }
    }
    expect_allreduce_results(inputs, results[t][0], n, dtype, op, cat(row, " ", what));
  }
}

std::vector<DeviceAlgorithmCase> algorithm_cases() {
  std::vector<DeviceAlgorithmCase> out;
  for (const std::string& name : kHostAlgorithms)
    for (const DeviceCase& c : device_cases(10007, 3001)) out.emplace_back(name, c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Emulated, AllreduceOnDeviceTest, testing::ValuesIn(algorithm_cases()), [](const auto& info) {
  return std::get<0>(info.param) + "_" + device_case_name(std::get<1>(info.param));
});

TEST(AllreduceOnDevice, RingRejectsAdasum) {
  const std::string error = run_ranks(2, [&](Communicator& comm, const AbortFlag&) {
    EmulatedDevice device;
    DeviceBuffer buffer(device, 64);
    AllreduceStagedGpu ring(comm, device, 256);
    EXPECT_THROW(ring.start(buffer.data(), 16, DataType::kFloat32, ReduceOp::kAdasum), InvalidArgument);
  });
  EXPECT_EQ(error, "");
}

// Every device row declines host memory and adasum (not element-wise); the names are
// "<transport>_<host>" except the ring's.
TEST(AllreduceOnDevice, RowsNamedByTransportAndHostAlgorithm) {
  Problem problem;
  problem.ranks = 4;
  problem.count = 1000;
  for (const std::string& name : kHostAlgorithms) {
    for (DeviceTransport transport : {DeviceTransport::kCudaAware, DeviceTransport::kStagedGpu}) {
      const std::string row = device_row_name(name, transport);
      EXPECT_EQ(row, name == "ring" ? std::string(device_transport_name(transport))
                                    : std::string(device_transport_name(transport)) + "_" + name);
      EXPECT_EQ(host_algorithm_of(row), name) << row;
      const AllreduceEntry& entry = allreduce_row(row);
      EXPECT_EQ(entry.memory, MemoryKind::kDevice) << row;
      EXPECT_EQ(entry.declines(problem), "device buffers only") << row;
      EXPECT_EQ(tree_count(row), tree_count(name)) << row << ": CONCORD_TREE_CHUNKS applies as to " << name;
      EXPECT_EQ(tree_overlapped(row), tree_overlapped(name)) << row;
      Problem adasum = problem;
      adasum.memory = MemoryKind::kDevice;
      adasum.op = ReduceOp::kAdasum;
      EXPECT_NE(entry.declines(adasum), "") << row;
    }
  }
  EXPECT_EQ(host_algorithm_of("staged"), "staged");
  EXPECT_EQ(host_algorithm_of("tree"), "tree");
}

}  // namespace
}  // namespace concord
