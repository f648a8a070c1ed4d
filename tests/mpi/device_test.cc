// Device tensors through the public API under mpirun: main.cc starts the runtime with
// CONCORD_DEVICE=emulated, so device 0 of every rank is the strict emulated device (its
// memory inaccessible to the host; a host access anywhere in the runtime crashes the
// rank). Allreduce (fused, single, in and out of place, scale factors, several dtypes and
// ops) must be bit-identical to the same allreduce of host tensors
// (test_support/device_scenarios.h); broadcast and grouped allreduce of device tensors;
// allgather, reduce-scatter and alltoall (single and grouped) bit-identical to host runs,
// results on the device (test_support/device_collective_scenarios.h); host memory on one
// rank and device memory on another is a MismatchError on every rank. TensorView::device ==
// kDetectDevice finds the emulated device through its pointer cache: results bit-identical
// to host runs, and a repeated submission is a cache hit without a provider query.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "concord/concord.h"
#include "mpi_test_util.h"
#include "runtime/api_devices.h"
#include "test_support/device_collective_scenarios.h"
#include "test_support/device_scenarios.h"

namespace concord::mpitest {
namespace {

using testdevice::AllreduceCase;
using testdevice::DeviceTensor;

TEST(DeviceTensors, AllreduceEqualsHostRunBitForBit) {
  ASSERT_GE(runtime_device_count(), 1) << "main.cc starts the suite with CONCORD_DEVICE=emulated";
  const std::string problem = testdevice::compare_device_and_host(
      runtime_device(0), 0, rank(), size(), "mpi.device",
      [](const std::string& name, const TensorView& in, const TensorView& out, const AllreduceCase& c) {
        return allreduce_async(name, in, out, AllreduceOptions{c.op, c.prescale, c.postscale});
      });
  EXPECT_EQ(problem, "");
}

TEST(DeviceTensors, DetectedDeviceAllreduceEqualsHostRunAndHitsThePointerCache) {
  const std::string problem = testdevice::compare_device_and_host(
      runtime_device(0), 0, rank(), size(), "mpi.detect",
      [](const std::string& name, const TensorView& in, const TensorView& out, const AllreduceCase& c) {
        return allreduce_async(name, in, out, AllreduceOptions{c.op, c.prescale, c.postscale});
      },
      testdevice::ViewDevices{true, true});
  EXPECT_EQ(problem, "");
  DeviceTensor tensor(runtime_device(0), testdevice::make_input(rank(), 16, DataType::kFloat32, ReduceOp::kSum));
  const TensorView view{tensor.data(), DataType::kFloat32, {16}, kDetectDevice};
  const PointerCacheStats before = pointer_cache_stats();
  for (int round = 0; round < 3; ++round) wait_ok(allreduce_async("mpi.detect.repeat", view, view), "repeat");
  const PointerCacheStats after = pointer_cache_stats();
  EXPECT_EQ(after.hits, before.hits + 3) << "rank " << rank();
  EXPECT_EQ(after.queries, 0u) << "rank " << rank() << ": the emulated device registers its allocations";
}

TEST(DeviceTensors, GroupedAllreduceAndBroadcast) {
  Device& device = runtime_device(0);
  const int P = size(), me = rank();
  const std::vector<size_t> counts = {3, 0, 50001};
  std::vector<DeviceTensor> tensors;
  std::vector<std::string> names;
  std::vector<TensorView> views;
  for (size_t t = 0; t < counts.size(); ++t) {
    tensors.emplace_back(device, testdevice::make_input(me, counts[t], DataType::kFloat32, ReduceOp::kSum));
    names.push_back("mpi.device.group." + std::to_string(t));
    views.push_back(TensorView{tensors.back().data(), DataType::kFloat32, {static_cast<int64_t>(counts[t])}, 0});
  }
  for (auto& handle : grouped_allreduce_async(names, views, views)) wait_ok(handle, "grouped device allreduce");
  for (size_t t = 0; t < counts.size(); ++t) {
    const auto result = tensors[t].read();
    for (size_t i = 0; i < counts[t]; ++i) {
      double exact = 0;
      for (int r = 0; r < P; ++r) exact += testdevice::input_value(r, i, DataType::kFloat32, ReduceOp::kSum);
      const double got = testing_util::load(result.data(), i, DataType::kFloat32);
      if (got != exact) {
        ADD_FAILURE() << "rank " << me << " grouped device tensor " << t << " element " << i << ": " << got
                      << ", exact " << exact;
        break;
      }
    }
  }
  for (int root = 0; root < P; ++root) {
    const size_t n = 777;
    DeviceTensor tensor(device, testdevice::make_input(me, n, DataType::kFloat16, ReduceOp::kSum));
    const TensorView view{tensor.data(), DataType::kFloat16, {static_cast<int64_t>(n)}, 0};
    wait_ok(broadcast_async("mpi.device.b" + std::to_string(root), view, BroadcastOptions{root}), "device broadcast");
    EXPECT_EQ(tensor.read(), testdevice::make_input(root, n, DataType::kFloat16, ReduceOp::kSum))
        << "rank " << me << " broadcast from root " << root;
  }
}

TEST(DeviceTensors, AllgatherReducescatterAlltoallEqualHostRunsBitForBit) {
  const std::string problem = testdevice::compare_device_and_host_collectives(
      runtime_device(0), 0, rank(), size(), "mpi.device.coll",
      [](const testdevice::CollectiveCase& c, const std::vector<std::string>& names,
         const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
         const std::vector<std::vector<int64_t>>& splits) -> std::vector<Handle> {
        const ReducescatterOptions scatter{c.op, c.prescale, c.postscale};
        switch (c.type) {
          case CollectiveType::kAllgather:
            if (names.size() > 1) return grouped_allgather_async(names, inputs);
            return {allgather_async(names[0], inputs[0])};
          case CollectiveType::kReducescatter:
            if (names.size() > 1) return grouped_reducescatter_async(names, inputs, outputs, scatter);
            return {reducescatter_async(names[0], inputs[0], outputs[0], scatter)};
          default: return {alltoall_async(names[0], inputs[0], AlltoallOptions{splits[0]})};
        }
      });
  EXPECT_EQ(problem, "");
}

TEST(DeviceTensors, HostOnLastRankDeviceElsewhereIsAMismatchOnEveryRank) {
  const int P = size(), me = rank();
  if (P == 1) GTEST_SKIP() << "a mismatch needs two ranks";
  Device& device = runtime_device(0);
  std::vector<uint8_t> host(8 * sizeof(float), 0);
  DeviceTensor tensor(device, host);
  const bool on_host = me == P - 1;
  const TensorView view{
      on_host ? static_cast<void*>(host.data()) : tensor.data(), DataType::kFloat32, {8}, on_host ? kHostMemory : 0};
  std::string devices = "0";
  for (int r = 1; r < P - 1; ++r) devices += ", " + std::to_string(r);
  const std::string expected = "Mismatched device for tensor 'mpi.device.mixed': emulated:0 on ranks [" + devices +
                               "], cpu on ranks [" + std::to_string(P - 1) + "]";
  const std::string error = wait_error<MismatchError>(allreduce_async("mpi.device.mixed", view, view), "mixed");
  EXPECT_NE(error.find(expected), std::string::npos) << "rank " << me << ": " << error << "\nexpected: " << expected;
  const std::string gather_expected = "Mismatched device for tensor 'mpi.device.mixed_gather': emulated:0 on ranks [" +
                                      devices + "], cpu on ranks [" + std::to_string(P - 1) + "]";
  const std::string gather_error =
      wait_error<MismatchError>(allgather_async("mpi.device.mixed_gather", view), "mixed allgather");
  EXPECT_NE(gather_error.find(gather_expected), std::string::npos)
      << "rank " << me << ": " << gather_error << "\nexpected: " << gather_expected;
  expect_allreduce_works("mpi.device.after");
}

}  // namespace
}  // namespace concord::mpitest
