// AllreduceRing (src/algorithms/allreduce_ring.h) on device buffers with the device's kernels
// (DeviceKernels, src/algorithms/device_kernels.h) -- the "cuda_aware" and "staged_gpu"
// device-buffer allreduces -- on the strict emulated device: every rank's tensor and the
// ring's receive scratch are "device memory" the host cannot touch, the transport takes
// device pointers (StagingCommunicator over the in-process transport, moving the bytes
// through the device's streams, as a CUDA-aware MPI without GPUDirect does) and every
// reduction runs as the device's reduce kernel. Results must equal AllreduceRing on host
// memory with the same chunk size bit for bit (same schedule, same operands), and the
// float64 reference; P = 1..16, sizes 0, 1, odd and many chunks, every dtype and op, in
// place and out of place, the instance reused.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/allreduce_ring.h"
#include "algorithms/device_kernels.h"
#include "allreduce_check.h"
#include "device/emulated_device.h"
#include "device_cases.h"
#include "transport/staging_communicator.h"

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

class AllreduceRingOnDeviceTest : public testing::TestWithParam<DeviceCase> {};

TEST_P(AllreduceRingOnDeviceTest, EqualsHostRingBitForBit) {
  const auto [P, n, dtype, op] = GetParam();
  const size_t element = dtype_size(dtype);
  const size_t bytes = n * element;
  const size_t chunk_bytes = 300;  // several chunks per segment, not a multiple of 8
  const std::string what =
      cat("ring on device memory P=", P, " n=", n, " ", dtype_name(dtype), " ", reduce_op_name(op));
  std::vector<std::vector<uint8_t>> inputs(P), in_place(P), out_of_place(P), host(P);
  for (int r = 0; r < P; ++r) {
    inputs[r].resize(bytes);
    fill_input(inputs[r].data(), n, dtype, op, r);
    in_place[r].assign(bytes, 0xEE);
    out_of_place[r].assign(bytes, 0xEE);
    host[r] = inputs[r];
  }
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int r = comm.rank();
    EmulatedDevice device;  // strict: neither the test nor the algorithm can read the buffers directly
    StagingCommunicator transport(comm, device);
    DeviceBuffer buffer(device, bytes), input(device, bytes);
    auto stream = device.create_stream();
    DeviceKernels kernels(device);
    AllreduceRing ring(transport, kernels, chunk_bytes);
    for (int repeat = 0; repeat < 2; ++repeat) {  // the instance is reused: in place, then out of place
      stream->copy(repeat == 0 ? buffer.data() : input.data(), inputs[r].data(), bytes, CopyKind::kHostToDevice);
      stream->synchronize();
      if (repeat == 0) {
        ring.start(buffer.data(), n, dtype, op);
      } else {
        ring.start_out_of_place(input.data(), buffer.data(), n, dtype, op);
      }
      const size_t covered = drive_counting_ranges(ring, bytes, aborted);
      if (covered != bytes) throw std::runtime_error(cat("final ranges cover ", covered, " of ", bytes, " bytes"));
      auto& result = repeat == 0 ? in_place[r] : out_of_place[r];
      stream->copy(result.data(), buffer.data(), bytes, CopyKind::kDeviceToHost);
      stream->synchronize();
    }
    ScratchBuffer scratch;
    AllreduceRing reference(comm, scratch, chunk_bytes);
    reference.start(host[r].data(), n, dtype, op);
    drive(reference, aborted);
  });
  ASSERT_EQ(error, "") << what;
  for (int r = 0; r < P; ++r) {
    long diff = first_difference(in_place[r], host[r], element);
    EXPECT_EQ(diff, -1) << "rank " << r << " element " << diff << " differs from the host ring (" << what << ")";
    diff = first_difference(out_of_place[r], host[r], element);
    EXPECT_EQ(diff, -1) << "rank " << r << " element " << diff << " differs out of place (" << what << ")";
  }
  expect_allreduce_results(inputs, in_place, n, dtype, op, what);
}

INSTANTIATE_TEST_SUITE_P(Emulated, AllreduceRingOnDeviceTest, testing::ValuesIn(device_cases(10007, 3001)),
                         [](const auto& info) { return device_case_name(info.param); });

TEST(AllreduceRingOnDevice, AdasumIsRejected) {
  const std::string error = run_ranks(2, [&](Communicator& comm, const AbortFlag&) {
    EmulatedDevice device;
    StagingCommunicator transport(comm, device);
    DeviceBuffer buffer(device, 64);
    DeviceKernels kernels(device);
    AllreduceRing ring(transport, kernels, 256);
    EXPECT_THROW(ring.start(buffer.data(), 16, DataType::kFloat32, ReduceOp::kAdasum), InvalidArgument);
  });
  EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace concord
