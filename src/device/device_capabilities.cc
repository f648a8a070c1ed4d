#include "device/device_capabilities.h"

#include <vector>

#include "device/cuda_status.h"
#include "device/nccl/nccl_api.h"

namespace concord {

DeviceCapabilities local_device_capabilities(const Communicator& comm, const Device& device) {
  DeviceCapabilities caps;
  caps.transport = device_pointer_support(comm);
  nccl::Status status;
  nccl::library(&status);
  if (!status.loaded) {
    caps.nccl = {false, status.summary()};
  } else if (device.cuda_ordinal() < 0) {
    caps.nccl = {false, "the device is not a CUDA GPU (" + device.name() + "; " + cuda_status().summary() + ")"};
  } else {
    caps.nccl = {true, status.summary()};
  }
  return caps;
}

DeviceCapabilities agree_device_capabilities(Communicator& comm, const Device& device) {
  DeviceCapabilities caps = local_device_capabilities(comm, device);
  std::vector<uint64_t> flags = {(caps.transport.supported ? uint64_t{1} : 0) | (caps.nccl.available ? uint64_t{2} : 0)};
  comm.allreduce_bits(flags, /*bitwise_and=*/true);
  if (caps.transport.supported && (flags[0] & 1) == 0) {
    caps.transport = {false, "device pointers are not taken on every rank of the communicator"};
  }
  if (caps.nccl.available && (flags[0] & 2) == 0) {
    caps.nccl = {false, "NCCL is not available on every rank of the communicator"};
  }
  return caps;
}

}  // namespace concord
