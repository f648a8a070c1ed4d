// Helpers of the in-process device-runtime suites (test_runtime_device.cc,
// test_runtime_detect_device.cc): a runtime over one in-process rank whose device 0 is a
// strict emulated device, requests and handle errors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "concord/errors.h"
#include "device/emulated_device.h"
#include "rank_runner.h"
#include "runtime/runtime.h"
#include "test_support/device_collective_scenarios.h"
#include "test_support/runtime_requests.h"
#include "transport/communicator_set.h"

namespace concord::testdevice {

using testing_util::request;
using testing_util::test_config;

/// A runtime whose device 0 is `device`, named "emulated:0", with `config` (test_config()
/// by default).
inline std::unique_ptr<Runtime> make_runtime(Communicator& world, std::shared_ptr<EmulatedDevice> device,
                                             const Config& config = test_config()) {
  auto devices = std::make_shared<DeviceSet>(std::vector<std::shared_ptr<Device>>{std::move(device)}, "emulated");
  return std::make_unique<Runtime>(split_communicator_set(world), config, std::vector<std::vector<int>>{}, devices);
}

/// Runs `body(runtime, device, rank)` on `P` in-process ranks, each with its own emulated
/// device (strict; `registers_allocations` as EmulatedDevice's) as device 0 of its own
/// runtime, shut down afterwards. Returns run_ranks's failure text ("" when none).
inline std::string run_device_ranks(int P, const std::function<void(Runtime&, EmulatedDevice&, int)>& body,
                                    bool registers_allocations = true) {
  return testing_util::run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    auto device = std::make_shared<EmulatedDevice>(/*strict=*/true, registers_allocations);
    auto runtime = make_runtime(world, device);
    body(*runtime, *device, runtime->rank());
    runtime->shutdown();
  });
}

/// The error text the handle's wait() throws, "" when it succeeds.
inline std::string error_of(const Handle& handle) {
  try {
    handle.wait();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

/// Submits allgather / reduce-scatter / alltoall cases (device_collective_scenarios.h)
/// through Runtime::enqueue (several names: as one group).
inline SubmitCollective submit_collective(Runtime& runtime) {
  return
      [&runtime](const CollectiveCase& c, const std::vector<std::string>& names, const std::vector<TensorView>& inputs,
                 const std::vector<TensorView>& outputs, const std::vector<std::vector<int64_t>>& splits) {
        std::vector<Request> requests;
        for (size_t i = 0; i < names.size(); ++i) {
          requests.push_back(request(names[i], c.type, c.op));
          requests.back().prescale_factor = c.prescale;
          requests.back().postscale_factor = c.postscale;
          requests.back().splits = splits[i];
          if (names.size() > 1) {
            requests.back().group = names[0];
            requests.back().group_size = static_cast<int32_t>(names.size());
          }
        }
        if (names.size() == 1) return std::vector<Handle>{runtime.enqueue(requests[0], inputs[0], outputs[0])};
        return runtime.enqueue_group(requests, inputs, outputs);
      };
}

}  // namespace concord::testdevice
