// The CUDA device (src/device/cuda/) against the CPU kernels, bit for bit: reduce and scale
// for every dtype x op (special values included), batched copies, events across streams,
// and the driver-backed pointer cache. Skips, naming the CUDA runtime's reason, when no
// GPU is usable (no driver: cudaErrorInsufficientDriver; or zero devices). No MPI.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/reduce.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver_api.h"
#include "device/cuda_status.h"
#include "kernel_check.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;
using testing_util::noise;

#define CONCORD_REQUIRE_GPU()                                  \
  do {                                                         \
    const CudaStatus status = cuda_status();                   \
    if (status.devices == 0) GTEST_SKIP() << status.summary(); \
  } while (0)

TEST(CudaStatus, BuiltAndSaysWhy) {
  const CudaStatus status = cuda_status();
  EXPECT_TRUE(status.built);
  if (status.devices == 0) {
    EXPECT_FALSE(status.reason.empty());
    EXPECT_NE(status.summary().find("CUDA: built, no usable device ("), std::string::npos) << status.summary();
  }
}

class CudaKernels : public testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

// Random bytes (every bit pattern: NaNs with payloads, subnormals, infinities) reduced and
// scaled on the GPU equal the CPU's portable kernels bit for bit.
TEST_P(CudaKernels, BitIdenticalToCpu) {
  CONCORD_REQUIRE_GPU();
  const auto [dtype, op] = GetParam();
  cuda::CudaDevice device;
  testing_util::expect_kernels_match_cpu(device, dtype, op, {1, 1023, size_t{1} << 20}, reduce_inplace_portable, false);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesOps, CudaKernels,
                         testing::Combine(testing::ValuesIn(all_dtypes()), testing::ValuesIn(all_ops())),
                         [](const auto& info) {
                           return cat(dtype_name(std::get<0>(info.param)), "_",
                                      reduce_op_name(std::get<1>(info.param)));
                         });

TEST(CudaDevice, BatchedCopyAndEvents) {
  CONCORD_REQUIRE_GPU();
  cuda::CudaDevice device;
  auto producer = device.create_stream();
  auto consumer = device.create_stream();
  auto ready = device.create_event();
  const size_t n = 1000;  // more spans than one launch carries
  std::vector<DeviceBuffer> pieces;
  std::vector<std::vector<uint8_t>> inputs;
  DeviceBuffer fused(device, n * 37);
  std::vector<CopySpan> pack;
  for (size_t i = 0; i < n; ++i) {
    const size_t bytes = i % 37;
    inputs.push_back(noise(bytes, i));
    pieces.emplace_back(device, bytes);
    producer->copy(pieces.back().data(), inputs.back().data(), bytes, CopyKind::kHostToDevice);
    pack.push_back({static_cast<uint8_t*>(fused.data()) + i * 37, pieces.back().data(), bytes});
  }
  producer->record(*ready);
  consumer->wait(*ready);
  consumer->copy_batch(pack, CopyKind::kDeviceToDevice);
  std::vector<uint8_t> out(n * 37);
  consumer->copy(out.data(), fused.data(), out.size(), CopyKind::kDeviceToHost);
  consumer->synchronize();
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(0, std::memcmp(out.data() + i * 37, inputs[i].data(), inputs[i].size())) << "span " << i;
}

TEST(CudaDevice, DriverPointerCache) {
  CONCORD_REQUIRE_GPU();
  cuda::CudaDevice device;
  cuda::DriverAttributeProvider driver;
  PointerCache cache(driver);
  DeviceBuffer buffer(device, 1 << 20);
  std::vector<uint8_t> host(64);
  EXPECT_EQ(cache.lookup(buffer.data()).device, device.ordinal());
  EXPECT_EQ(cache.lookup(static_cast<uint8_t*>(buffer.data()) + 12345).device, device.ordinal());
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_FALSE(cache.lookup(host.data()).is_device());
  void* pinned = device.allocate_host(4096);
  EXPECT_FALSE(cache.lookup(pinned).is_device());
  device.free_host(pinned);
}

// What the device-pointer transports (StagingCommunicator, DirectCommunicator) and NCCL
// ask of a CUDA device: which pointers are device memory (through the pointer cache, also
// for memory another allocator made), the CUDA ordinal and each stream's cudaStream_t.
TEST(CudaDevice, DevicePointersOrdinalAndStreamHandle) {
  CONCORD_REQUIRE_GPU();
  cuda::CudaDevice device;
  DeviceBuffer buffer(device, 1 << 20);
  EXPECT_TRUE(device.is_device_pointer(buffer.data()));
  EXPECT_TRUE(device.is_device_pointer(static_cast<uint8_t*>(buffer.data()) + 4097));
  std::vector<uint8_t> host(64);
  EXPECT_FALSE(device.is_device_pointer(host.data()));
  void* pinned = device.allocate_host(4096);
  EXPECT_FALSE(device.is_device_pointer(pinned));
  device.free_host(pinned);
  cuda::CudaDevice other(device.ordinal());  // a second "allocator" of the same GPU
  DeviceBuffer foreign(other, 4096);
  EXPECT_TRUE(device.is_device_pointer(foreign.data())) << "memory this CudaDevice did not allocate";
  EXPECT_EQ(device.cuda_ordinal(), device.ordinal());
  auto stream = device.create_stream();
  EXPECT_NE(stream->cuda_stream(), nullptr);
}

}  // namespace
}  // namespace concord
