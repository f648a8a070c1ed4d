// Device tensors through the whole runtime cycle (enqueue -> negotiate -> fuse -> execute on
// the device data path -> complete handles) at 1..16 in-process ranks, each rank owning a
// strict emulated device (device/emulated_device.h): its memory is inaccessible to the
// host, so any host access to device memory in the runtime crashes this test. Results
// must be bit-identical to the same allreduces of host tensors (test_support/
// device_scenarios.h), and so must allgather, reduce-scatter and alltoall (single and
// grouped; test_support/device_collective_scenarios.h), whose results must be on the
// input's device. Also: broadcast of device tensors, the host-vs-device mismatch
// (an error on every rank naming the tensor, the ranks and both memories), the clear
// submission errors (Adasum, unknown or second device, mixed memory), and join() with a
// device tensor.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "concord/errors.h"
#include "device/emulated_device.h"
#include "rank_runner.h"
#include "runtime/runtime.h"
#include "runtime_device_util.h"
#include "test_support/device_collective_scenarios.h"
#include "test_support/device_scenarios.h"
#include "transport/communicator_set.h"

namespace concord {
namespace {

using testdevice::AllreduceCase;
using testdevice::DeviceTensor;
using testdevice::error_of;
using testdevice::make_runtime;
using testdevice::request;
using testdevice::test_config;
using testing_util::run_ranks;

class RuntimeDevice : public ::testing::TestWithParam<int> {};

// Submits compare_device_and_host()'s allreduces to `runtime` with each case's op and scale
// factors.
testdevice::SubmitAllreduce submit_allreduce(Runtime& runtime) {
  return [&runtime](const std::string& name, const TensorView& in, const TensorView& out, const AllreduceCase& c) {
    Request r = request(name, CollectiveType::kAllreduce, c.op);
    r.prescale_factor = c.prescale;
    r.postscale_factor = c.postscale;
    return runtime.enqueue(r, in, out);
  };
}

TEST_P(RuntimeDevice, AllreduceOfDeviceTensorsEqualsHostRunBitForBit) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    auto device = std::make_shared<EmulatedDevice>();
    auto runtime = make_runtime(world, device);
    const int rank = runtime->rank();
    for (int round = 0; round < 2; ++round) {  // round 1 hits the response cache
      const std::string problem = testdevice::compare_device_and_host(*device, 0, rank, P, "r" + std::to_string(round),
                                                                      submit_allreduce(*runtime));
      ASSERT_EQ(problem, "") << "round " << round;
    }
    runtime->shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// CONCORD_ALLREDUCE_ALGORITHM naming a device row of the trees or the doubling family
// reaches it through the runtime (rank 0's timeline names the row's activity) and the
// results equal the host run bit for bit.
TEST(RuntimeDeviceForced, DeviceRowsOfTreesAndDoublingRunWhenForced) {
  const int P = 3;
  for (const std::string forced : {"staged_gpu_tree", "staged_gpu_overlapped_double_tree",
                                   "staged_gpu_halving_doubling", "staged_gpu_recursive_doubling"}) {
    const std::string timeline_path =
        testing::TempDir() + "concord_forced_" + forced + "_" + std::to_string(::getpid()) + ".json";
    const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
      Config config = test_config();
      config.allreduce_algorithm = forced;
      if (world.rank() == 0) config.timeline_path = timeline_path;
      auto device = std::make_shared<EmulatedDevice>();
      auto runtime = make_runtime(world, device, config);
      const std::string problem =
          testdevice::compare_device_and_host(*device, 0, runtime->rank(), P, forced, submit_allreduce(*runtime));
      runtime->shutdown();
      if (!problem.empty()) throw std::runtime_error(problem);
    });
    EXPECT_EQ(failure, "") << forced << " P=" << P;
    std::ifstream file(timeline_path);
    const std::string timeline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::string activity = "ALLREDUCE_" + forced;
    std::transform(activity.begin(), activity.end(), activity.begin(), [](unsigned char c) { return std::toupper(c); });
    EXPECT_NE(timeline.find(activity), std::string::npos) << forced << ": no " << activity << " in rank 0's timeline";
    std::remove(timeline_path.c_str());
  }
}

TEST_P(RuntimeDevice, GroupedAllreduceAndBroadcastOfDeviceTensors) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    auto device = std::make_shared<EmulatedDevice>();
    auto runtime = make_runtime(world, device);
    const int rank = runtime->rank();
    // A group of three device tensors (fused together, completed per range).
    std::vector<DeviceTensor> tensors;
    std::vector<Request> requests;
    std::vector<TensorView> views;
    const std::vector<size_t> counts = {5, 0, 70001};
    for (size_t t = 0; t < counts.size(); ++t) {
      tensors.emplace_back(*device, testdevice::make_input(rank, counts[t], DataType::kFloat32, ReduceOp::kSum));
      requests.push_back(request("group." + std::to_string(t), CollectiveType::kAllreduce));
      requests.back().group = "group.0";
      requests.back().group_size = static_cast<int32_t>(counts.size());
      views.push_back(TensorView{tensors.back().data(), DataType::kFloat32, {static_cast<int64_t>(counts[t])}, 0});
    }
    for (auto& handle : runtime->enqueue_group(requests, views, views)) handle.wait();
    for (size_t t = 0; t < counts.size(); ++t) {
      const auto result = tensors[t].read();
      for (size_t i = 0; i < counts[t]; ++i) {
        double exact = 0;
        for (int r = 0; r < P; ++r) exact += testdevice::input_value(r, i, DataType::kFloat32, ReduceOp::kSum);
        ASSERT_EQ(testing_util::load(result.data(), i, DataType::kFloat32), exact)
            << "rank " << rank << " grouped tensor " << t << " element " << i;
      }
    }
    // Broadcast from every root, of a device tensor.
    for (int root = 0; root < P; ++root) {
      const size_t n = 1001;
      DeviceTensor tensor(*device, testdevice::make_input(rank, n, DataType::kBFloat16, ReduceOp::kSum));
      const TensorView view{tensor.data(), DataType::kBFloat16, {static_cast<int64_t>(n)}, 0};
      runtime
          ->enqueue(request("b" + std::to_string(root), CollectiveType::kBroadcast, ReduceOp::kSum, root), view, view)
          .wait();
      ASSERT_EQ(tensor.read(), testdevice::make_input(root, n, DataType::kBFloat16, ReduceOp::kSum))
          << "rank " << rank << " broadcast from root " << root;
    }
    runtime->shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// Allgather, reduce-scatter and alltoall (single and grouped) of device tensors: results on
// the input's device, bit-identical to host runs (test_support/device_collective_scenarios.h).
TEST_P(RuntimeDevice, AllgatherReducescatterAlltoallEqualHostRunsBitForBit) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    auto device = std::make_shared<EmulatedDevice>();
    auto runtime = make_runtime(world, device);
    const testdevice::SubmitCollective submit = testdevice::submit_collective(*runtime);
    for (int round = 0; round < 2; ++round) {  // round 1 hits the response cache
      const std::string problem = testdevice::compare_device_and_host_collectives(*device, 0, runtime->rank(), P,
                                                                                  "c" + std::to_string(round), submit);
      ASSERT_EQ(problem, "") << "round " << round;
    }
    runtime->shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// Host memory on the last rank, device memory elsewhere, for every collective: a
// MismatchError on every rank naming the tensor, the ranks and both memories; the runtime
// goes on afterwards.
TEST_P(RuntimeDevice, HostOnOneRankDeviceOnAnotherIsAMismatchOnEveryRank) {
  const int P = GetParam();
  if (P == 1) GTEST_SKIP() << "a mismatch needs two ranks";
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    auto device = std::make_shared<EmulatedDevice>();
    auto runtime = make_runtime(world, device);
    const int rank = runtime->rank();
    // P rows: one per rank for reduce-scatter's output and alltoall's equal splits.
    std::vector<uint8_t> host(static_cast<size_t>(P) * sizeof(float), 0), host_row(sizeof(float), 0);
    DeviceTensor tensor(*device, host), row(*device, host_row);
    const bool on_host = rank == P - 1;
    const int where = on_host ? kHostMemory : 0;
    const TensorView view{on_host ? static_cast<void*>(host.data()) : tensor.data(), DataType::kFloat32, {P}, where};
    const TensorView one_row{
        on_host ? static_cast<void*>(host_row.data()) : row.data(), DataType::kFloat32, {1}, where};
    for (CollectiveType type : {CollectiveType::kAllreduce, CollectiveType::kBroadcast, CollectiveType::kAllgather,
                                CollectiveType::kReducescatter, CollectiveType::kAlltoall}) {
      const std::string name = std::string("mixed.") + collective_name(type);
      Handle handle =
          runtime->enqueue(request(name, type), view, type == CollectiveType::kReducescatter ? one_row : view);
      std::string devices = "0";
      for (int r = 1; r < P - 1; ++r) devices += ", " + std::to_string(r);
      const std::string expected = "Mismatched device for tensor '" + name + "': emulated:0 on ranks [" + devices +
                                   "], cpu on ranks [" + std::to_string(P - 1) + "]";
      try {
        handle.wait();
        FAIL() << "rank " << rank << ": no MismatchError for " << name;
      } catch (const MismatchError& error) {
        EXPECT_NE(std::string(error.what()).find(expected), std::string::npos)
            << "rank " << rank << ": " << error.what() << "\nexpected: " << expected;
      }
    }
    const TensorView everywhere_on_device{tensor.data(), DataType::kFloat32, {P}, 0};
    runtime->enqueue(request("after", CollectiveType::kAllreduce), everywhere_on_device, everywhere_on_device).wait();
    runtime->shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

INSTANTIATE_TEST_SUITE_P(Ranks, RuntimeDevice, ::testing::Values(1, 2, 3, 4, 5, 7, 8, 11, 16),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

// Adasum rejects device tensors at submission, naming the tensor, the collective and the
// device; so do unknown devices, mixed input/output memory and a second device in one
// process. (Allgather, reduce-scatter and alltoall take device tensors:
// AllgatherReducescatterAlltoallEqualHostRunsBitForBit above.)
TEST(RuntimeDeviceErrors, AdasumAndBadDevicesAreRejectedAtSubmission) {
  const std::string failure = run_ranks(1, [&](Communicator& world, const testing_util::AbortFlag&) {
    auto device = std::make_shared<EmulatedDevice>();
    auto second = std::make_shared<EmulatedDevice>();
    auto devices = std::make_shared<DeviceSet>(std::vector<std::shared_ptr<Device>>{device, second}, "emulated");
    Runtime runtime(split_communicator_set(world), test_config(), {}, devices);
    DeviceTensor tensor(*device, std::vector<uint8_t>(16, 0));
    DeviceTensor other(*second, std::vector<uint8_t>(16, 0));
    std::vector<float> host(4, 1.0f);
    const TensorView on_device{tensor.data(), DataType::kFloat32, {4}, 0};
    const TensorView on_host{host.data(), DataType::kFloat32, {4}};
    const auto rejects = [&](Request r, const TensorView& in, const TensorView& out, const std::string& text) {
      try {
        runtime.enqueue(r, in, out);
        ADD_FAILURE() << r.name << ": accepted";
      } catch (const InvalidArgument& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("'" + r.name + "'"), std::string::npos) << message;
        EXPECT_NE(message.find(text), std::string::npos) << message << "\nexpected: " << text;
      }
    };
    rejects(request("adasum", CollectiveType::kAllreduce, ReduceOp::kAdasum), on_device, on_device,
            "the tensor is on emulated:0 but the Adasum op takes host tensors only");
    rejects(request("nowhere", CollectiveType::kAllreduce), TensorView{tensor.data(), DataType::kFloat32, {4}, 7},
            TensorView{tensor.data(), DataType::kFloat32, {4}, 7}, "device 7 does not exist");
    rejects(request("split", CollectiveType::kAllreduce), on_device, on_host,
            "the input is on emulated:0 but the output in host memory");
    rejects(request("split2", CollectiveType::kAllreduce), on_host, on_device,
            "the input is in host memory but the output on device 0");
    runtime.enqueue(request("first", CollectiveType::kAllreduce), on_device, on_device).wait();
    const TensorView on_second{other.data(), DataType::kFloat32, {4}, 1};
    rejects(request("second", CollectiveType::kAllreduce), on_second, on_second,
            "this process already uses emulated:0 (one device per process");
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "");
}

// A device tensor allreduced while a rank has joined fails on every rank (a joined rank
// has no device tensor to contribute zeros from); the job goes on.
TEST(RuntimeDeviceErrors, DeviceTensorWhileARankHasJoinedFailsOnEveryRank) {
  const int P = 3;
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    auto device = std::make_shared<EmulatedDevice>();
    auto runtime = make_runtime(world, device);
    const int rank = runtime->rank();
    if (rank == P - 1) {
      Request join = request("concord.join", CollectiveType::kJoin);
      runtime->enqueue(join, TensorView{}, TensorView{}).wait();
    } else {
      DeviceTensor tensor(*device, std::vector<uint8_t>(16, 0));
      const TensorView view{tensor.data(), DataType::kFloat32, {4}, 0};
      const std::string error = error_of(runtime->enqueue(request("late", CollectiveType::kAllreduce), view, view));
      EXPECT_NE(error.find("tensor 'late' is in device memory while rank(s) [2] have joined"), std::string::npos)
          << "rank " << rank << ": " << error;
      runtime->enqueue(request("concord.join", CollectiveType::kJoin), TensorView{}, TensorView{}).wait();
    }
    runtime->shutdown();
  });
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace concord
