// The strict emulated device (src/device/emulated_device.h): device memory is unreachable
// from the host (a touch crashes), streams run in order, events order streams against each
// other and the host, and its kernels give exactly the CPU kernels' bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "common/reduce.h"
#include "concord/errors.h"
#include "device/emulated_device.h"
#include "kernel_check.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;

std::vector<uint8_t> pattern(size_t bytes, uint8_t salt) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(i * 131 + salt * 7 + (i >> 8));
  return v;
}

TEST(EmulatedDevice, HostTouchOfDeviceMemoryCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EmulatedDevice device;
  DeviceBuffer buffer(device, 4096);
  volatile uint8_t* p = static_cast<uint8_t*>(buffer.data());
  EXPECT_DEATH({ p[0] = 1; }, "");
  EXPECT_DEATH({ (void)p[100]; }, "");
}

TEST(EmulatedDevice, CopiesRoundTripThroughDeviceMemory) {
  EmulatedDevice device;
  auto stream = device.create_stream();
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{4096}, size_t{100003}}) {
    const auto in = pattern(bytes, 3);
    std::vector<uint8_t> out(bytes, 0);
    DeviceBuffer a(device, bytes), b(device, bytes);
    stream->copy(a.data(), in.data(), bytes, CopyKind::kHostToDevice);
    stream->copy(b.data(), a.data(), bytes, CopyKind::kDeviceToDevice);
    stream->copy(out.data(), b.data(), bytes, CopyKind::kDeviceToHost);
    stream->synchronize();
    EXPECT_EQ(out, in) << bytes << " bytes";
  }
}

TEST(EmulatedDevice, BatchedCopyPacksAndUnpacks) {
  EmulatedDevice device;
  auto stream = device.create_stream();
  const std::vector<size_t> sizes = {0, 1, 3, 64, 1000, 7, 4096};
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  std::vector<DeviceBuffer> tensors;
  std::vector<std::vector<uint8_t>> inputs;
  DeviceBuffer fused(device, total);
  std::vector<CopySpan> pack, unpack;
  std::vector<DeviceBuffer> outputs;
  size_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    inputs.push_back(pattern(sizes[i], static_cast<uint8_t>(i)));
    tensors.emplace_back(device, sizes[i]);
    outputs.emplace_back(device, sizes[i]);
    stream->copy(tensors.back().data(), inputs.back().data(), sizes[i], CopyKind::kHostToDevice);
    pack.push_back({static_cast<uint8_t*>(fused.data()) + offset, tensors.back().data(), sizes[i]});
    unpack.push_back({outputs.back().data(), static_cast<uint8_t*>(fused.data()) + offset, sizes[i]});
    offset += sizes[i];
  }
  stream->copy_batch(pack, CopyKind::kDeviceToDevice);
  stream->copy_batch(unpack, CopyKind::kDeviceToDevice);
  std::vector<uint8_t> whole(total);
  stream->copy(whole.data(), fused.data(), total, CopyKind::kDeviceToHost);
  std::vector<std::vector<uint8_t>> back(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    back[i].resize(sizes[i]);
    stream->copy(back[i].data(), outputs[i].data(), sizes[i], CopyKind::kDeviceToHost);
  }
  stream->synchronize();
  offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(back[i], inputs[i]) << "tensor " << i;
    EXPECT_EQ(0, std::memcmp(whole.data() + offset, inputs[i].data(), sizes[i])) << "fused slot " << i;
    offset += sizes[i];
  }
}

class EmulatedKernels : public testing::TestWithParam<std::tuple<DataType, ReduceOp>> {};

// reduce() and scale() on device memory give exactly reduce_inplace()/scale_buffer() on
// host memory (the emulation runs those very kernels: every bit pattern must match).
TEST_P(EmulatedKernels, BitIdenticalToHostKernels) {
  const auto [dtype, op] = GetParam();
  EmulatedDevice device;
  testing_util::expect_kernels_match_cpu(device, dtype, op, {0, 1, 1023}, reduce_inplace, true);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesOps, EmulatedKernels,
                         testing::Combine(testing::ValuesIn(all_dtypes()), testing::ValuesIn(all_ops())),
                         [](const auto& info) {
                           return cat(dtype_name(std::get<0>(info.param)), "_",
                                      reduce_op_name(std::get<1>(info.param)));
                         });

// A stream waiting on another stream's event sees that stream's writes; the host waiting
// on an event sees everything recorded before it.
TEST(EmulatedDevice, EventsOrderStreams) {
  EmulatedDevice device;
  auto producer = device.create_stream();
  auto consumer = device.create_stream();
  auto ready = device.create_event();
  auto done = device.create_event();
  EXPECT_TRUE(done->query());  // never recorded
  const size_t bytes = 1 << 20;
  const auto in = pattern(bytes, 9);
  std::vector<uint8_t> out(bytes, 0);
  DeviceBuffer a(device, bytes), b(device, bytes);
  for (int round = 0; round < 20; ++round) {
    producer->copy(a.data(), in.data(), bytes, CopyKind::kHostToDevice);
    producer->record(*ready);
    consumer->wait(*ready);
    consumer->copy(b.data(), a.data(), bytes, CopyKind::kDeviceToDevice);
    consumer->copy(out.data(), b.data(), bytes, CopyKind::kDeviceToHost);
    consumer->record(*done);
    done->synchronize();
    EXPECT_TRUE(done->query());
    ASSERT_EQ(out, in) << "round " << round;
    std::fill(out.begin(), out.end(), 0);
    producer->copy(a.data(), out.data(), bytes, CopyKind::kHostToDevice);  // clear for the next round
    producer->synchronize();
  }
}

TEST(EmulatedDevice, FailureSurfacesAsDeviceError) {
  EmulatedDevice device;
  auto stream = device.create_stream();
  EXPECT_THROW(stream->reduce(nullptr, nullptr, 4, static_cast<DataType>(99), ReduceOp::kSum), InvalidArgument);
  DeviceBuffer a(device, 16);
  stream->reduce(a.data(), a.data(), 4, DataType::kFloat32, static_cast<ReduceOp>(77));  // fails on the stream
  auto event = device.create_event();
  stream->record(*event);
  EXPECT_THROW(event->synchronize(), Error);
  EXPECT_THROW(stream->synchronize(), DeviceError);
}

TEST(EmulatedDevice, FreeOfUnknownAddressIsAnError) {
  EmulatedDevice device;
  int host = 0;
  EXPECT_THROW(device.free(&host), InvalidArgument);
  void* p = device.allocate(100);
  EXPECT_TRUE(device.is_device_pointer(p));
  EXPECT_TRUE(device.is_device_pointer(static_cast<uint8_t*>(p) + 99));
  EXPECT_FALSE(device.is_device_pointer(&host));
  device.free(p);
  EXPECT_FALSE(device.is_device_pointer(p));
}

}  // namespace
}  // namespace concord
