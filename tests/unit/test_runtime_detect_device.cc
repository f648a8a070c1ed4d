// TensorView::device == kDetectDevice through the whole runtime cycle at several in-process
// ranks, each with its own strict emulated device: the runtime resolves the device at
// submission through the device's pointer cache (device/pointer_cache.h; Awan et al.,
// CCGrid 2019). Detected device tensors give results bit-identical to host runs (and so to
// explicit device=0 runs, test_runtime_device.cc), detected host tensors results in host
// memory; a repeated submission of one buffer is a cache hit without a provider query; a
// buffer freed and replaced by host memory at the same address is host memory again
// (notify_free); host on one rank and a detected device tensor on another is the usual
// device mismatch on every rank.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rank_runner.h"
#include "runtime_device_util.h"
#include "test_support/device_collective_scenarios.h"
#include "test_support/device_scenarios.h"

namespace concord {
namespace {

using testdevice::AllreduceCase;
using testdevice::DeviceTensor;
using testdevice::request;
using testdevice::run_device_ranks;
using testdevice::ViewDevices;

class RuntimeDetectDevice : public ::testing::TestWithParam<int> {};

TEST_P(RuntimeDetectDevice, DetectedTensorsEqualHostRunsBitForBit) {
  const int P = GetParam();
  const std::string failure = run_device_ranks(P, [&](Runtime& runtime, EmulatedDevice& device, int rank) {
    const auto submit_allreduce = [&](const std::string& name, const TensorView& in, const TensorView& out,
                                      const AllreduceCase& c) {
      Request r = request(name, CollectiveType::kAllreduce, c.op);
      r.prescale_factor = c.prescale;
      r.postscale_factor = c.postscale;
      return runtime.enqueue(r, in, out);
    };
    const ViewDevices detected_device{true, false}, detected_host{false, true};
    ASSERT_EQ(testdevice::compare_device_and_host(device, 0, rank, P, "ad", submit_allreduce, detected_device), "");
    ASSERT_EQ(testdevice::compare_device_and_host(device, 0, rank, P, "ah", submit_allreduce, detected_host), "");
    const auto submit = testdevice::submit_collective(runtime);
    ASSERT_EQ(testdevice::compare_device_and_host_collectives(device, 0, rank, P, "cd", submit, detected_device), "");
    ASSERT_EQ(testdevice::compare_device_and_host_collectives(device, 0, rank, P, "ch", submit, detected_host), "");
    // Broadcast from the last rank: a detected device tensor and a detected host tensor.
    const size_t n = 501;
    const int root = P - 1;
    DeviceTensor tensor(device, testdevice::make_input(rank, n, DataType::kFloat16, ReduceOp::kSum));
    std::vector<uint8_t> host = testdevice::make_input(rank, n, DataType::kFloat16, ReduceOp::kSum);
    const TensorView on_device{tensor.data(), DataType::kFloat16, {static_cast<int64_t>(n)}, kDetectDevice};
    const TensorView on_host{host.data(), DataType::kFloat16, {static_cast<int64_t>(n)}, kDetectDevice};
    Handle d = runtime.enqueue(request("bd", CollectiveType::kBroadcast, ReduceOp::kSum, root), on_device, on_device);
    Handle h = runtime.enqueue(request("bh", CollectiveType::kBroadcast, ReduceOp::kSum, root), on_host, on_host);
    d.wait();
    h.wait();
    const auto expected = testdevice::make_input(root, n, DataType::kFloat16, ReduceOp::kSum);
    EXPECT_EQ(tensor.read(), expected) << "rank " << rank << ": broadcast of a detected device tensor";
    EXPECT_EQ(host, expected) << "rank " << rank << ": broadcast of a detected host tensor";
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// Each submission of the same buffer adds one lookup that hits (input and in-place output
// are one lookup); the emulated device registers its allocations, so nothing is ever
// asked of its provider, and a host buffer is a miss without a query.
TEST_P(RuntimeDetectDevice, RepeatedSubmissionIsACacheHitWithoutAQuery) {
  const int P = GetParam();
  const std::string failure = run_device_ranks(P, [&](Runtime& runtime, EmulatedDevice& device, int rank) {
    DeviceTensor tensor(device, testdevice::make_input(rank, 64, DataType::kFloat32, ReduceOp::kSum));
    std::vector<float> host(64, 1.0f);
    const TensorView on_device{tensor.data(), DataType::kFloat32, {64}, kDetectDevice};
    const TensorView on_host{host.data(), DataType::kFloat32, {64}, kDetectDevice};
    for (int round = 0; round < 4; ++round) {
      const PointerCacheStats before = runtime.pointer_cache_stats();
      runtime.enqueue(request("d", CollectiveType::kAllreduce), on_device, on_device).wait();
      const PointerCacheStats after_device = runtime.pointer_cache_stats();
      EXPECT_EQ(after_device.hits, before.hits + 1) << "rank " << rank << " round " << round;
      EXPECT_EQ(after_device.misses, before.misses) << "rank " << rank << " round " << round;
      runtime.enqueue(request("h", CollectiveType::kAllreduce), on_host, on_host).wait();
      const PointerCacheStats after_host = runtime.pointer_cache_stats();
      EXPECT_EQ(after_host.hits, after_device.hits) << "rank " << rank << " round " << round;
      EXPECT_EQ(after_host.misses, after_device.misses + 1) << "rank " << rank << " round " << round;
      EXPECT_EQ(after_host.queries, 0u) << "rank " << rank << ": the emulated device tracks all its allocations";
    }
    EXPECT_EQ(host[0], static_cast<float>(std::pow(P, 4))) << "rank " << rank << ": the host tensor stayed on the host";
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// A device that does not register its allocations (like PyTorch's allocator on a GPU):
// the first submission of a buffer asks the provider once and caches the allocation;
// later ones (interior pointers too) hit without a query.
TEST_P(RuntimeDetectDevice, UnregisteredAllocationIsQueriedOnceThenHits) {
  const int P = GetParam();
  const std::string failure = run_device_ranks(
      P,
      [&](Runtime& runtime, EmulatedDevice& device, int rank) {
        DeviceTensor tensor(device, testdevice::make_input(rank, 64, DataType::kFloat32, ReduceOp::kSum));
        const uint64_t queries = runtime.pointer_cache_stats().queries;
        for (int round = 0; round < 3; ++round) {
          void* data = static_cast<float*>(tensor.data()) + (round == 2 ? 32 : 0);  // round 2: an interior pointer
          const TensorView view{data, DataType::kFloat32, {32}, kDetectDevice};
          runtime.enqueue(request("q" + std::to_string(round), CollectiveType::kAllreduce), view, view).wait();
          EXPECT_EQ(runtime.pointer_cache_stats().queries, queries + 1) << "rank " << rank << " round " << round;
        }
        const auto result = tensor.read();
        float first = 0;
        std::memcpy(&first, result.data(), sizeof first);
        double exact = 0;
        for (int r = 0; r < P; ++r) exact += testdevice::input_value(r, 0, DataType::kFloat32, ReduceOp::kSum);
        EXPECT_EQ(first, static_cast<float>(exact * P)) << "rank " << rank << ": reduced twice on the device";
      },
      /*registers_allocations=*/false);
  EXPECT_EQ(failure, "") << "P=" << P;
}

// A device buffer freed and replaced by host memory at the same address is host memory
// again: the free told the cache (notify_free). Allgather shows where the runtime put the
// tensor: a device tensor's result is owned device memory, a host tensor's host bytes.
TEST_P(RuntimeDetectDevice, FreedBufferReusedAsHostMemoryIsHostMemory) {
  const int P = GetParam();
  const std::string failure = run_device_ranks(P, [&](Runtime& runtime, EmulatedDevice& device, int rank) {
    const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const std::vector<uint8_t> row =
        testdevice::make_input(rank, bytes / sizeof(float), DataType::kFloat32, ReduceOp::kSum);
    void* address = nullptr;
    {
      DeviceTensor tensor(device, row);
      address = tensor.data();
      const TensorView view{address, DataType::kFloat32, {1, static_cast<int64_t>(row.size() / 4)}, kDetectDevice};
      const Handle handle = runtime.enqueue(request("g.device", CollectiveType::kAllgather), view, view);
      handle.wait();
      EXPECT_EQ(handle.output_device(), 0) << "rank " << rank << ": a device buffer";
      // Every rank has allocated its device memory before any frees: the ranks share this
      // process, and another rank's allocation could otherwise take the freed address.
      float one = 1;
      const TensorView flag{&one, DataType::kFloat32, {1}, kHostMemory};
      runtime.enqueue(request("g.allocated", CollectiveType::kAllreduce), flag, flag).wait();
    }  // freed: the emulated device unmaps it
    void* host = mmap(address, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    ASSERT_EQ(host, address) << "rank " << rank << ": could not map host memory at the freed address";
    std::memcpy(host, row.data(), bytes);
    const TensorView view{host, DataType::kFloat32, {1, static_cast<int64_t>(row.size() / 4)}, kDetectDevice};
    const Handle handle = runtime.enqueue(request("g.host", CollectiveType::kAllgather), view, view);
    handle.wait();
    EXPECT_EQ(handle.output_device(), kHostMemory) << "rank " << rank << ": host memory at a freed device address";
    if (handle.output_device() == kHostMemory) {
      std::vector<uint8_t> expected;
      for (int r = 0; r < P; ++r) {
        const auto part = testdevice::make_input(r, bytes / sizeof(float), DataType::kFloat32, ReduceOp::kSum);
        expected.insert(expected.end(), part.begin(), part.end());
      }
      EXPECT_EQ(handle.output_bytes(), expected) << "rank " << rank;
    }
    munmap(host, bytes);
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// Host memory on the last rank and a detected device tensor elsewhere (both kDetectDevice):
// the device mismatch on every rank, as with explicit devices.
TEST_P(RuntimeDetectDevice, DetectedHostOnOneRankDeviceOnAnotherIsAMismatchOnEveryRank) {
  const int P = GetParam();
  if (P == 1) GTEST_SKIP() << "a mismatch needs two ranks";
  const std::string failure = run_device_ranks(P, [&](Runtime& runtime, EmulatedDevice& device, int rank) {
    std::vector<uint8_t> host(8 * sizeof(float), 0);
    DeviceTensor tensor(device, host);
    const bool on_host = rank == P - 1;
    const TensorView view{
        on_host ? static_cast<void*>(host.data()) : tensor.data(), DataType::kFloat32, {8}, kDetectDevice};
    std::string devices = "0";
    for (int r = 1; r < P - 1; ++r) devices += ", " + std::to_string(r);
    for (CollectiveType type : {CollectiveType::kAllreduce, CollectiveType::kAllgather}) {
      const std::string name = std::string("detected.") + collective_name(type);
      const std::string error = testdevice::error_of(runtime.enqueue(request(name, type), view, view));
      const std::string expected = "Mismatched device for tensor '" + name + "': emulated:0 on ranks [" + devices +
                                   "], cpu on ranks [" + std::to_string(P - 1) + "]";
      EXPECT_NE(error.find(expected), std::string::npos)
          << "rank " << rank << ": " << error << "\nexpected: " << expected;
    }
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

INSTANTIATE_TEST_SUITE_P(Ranks, RuntimeDetectDevice, ::testing::Values(1, 2, 3, 5, 8),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

// Two devices in one set: a pointer resolves to the device that owns it, host memory and
// null to kHostMemory (DeviceSet::locate).
TEST(DeviceSetLocate, FindsTheOwningDeviceOrHostMemory) {
  auto first = std::make_shared<EmulatedDevice>();
  auto second = std::make_shared<EmulatedDevice>();
  const DeviceSet devices(std::vector<std::shared_ptr<Device>>{first, second}, "emulated");
  DeviceBuffer a(*first, 100), b(*second, 100);
  int host = 0;
  EXPECT_EQ(devices.locate(a.data()), 0);
  EXPECT_EQ(devices.locate(static_cast<uint8_t*>(b.data()) + 99), 1);
  EXPECT_EQ(devices.locate(&host), kHostMemory);
  EXPECT_EQ(devices.locate(nullptr), kHostMemory);
  const PointerCacheStats stats = devices.pointer_cache_stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.queries, 0u);
  EXPECT_EQ(stats.hits, 2u);    // a on the first device, b on the second
  EXPECT_EQ(stats.misses, 3u);  // b on the first device, host memory on both
}

}  // namespace
}  // namespace concord
