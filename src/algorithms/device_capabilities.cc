#include "algorithms/device_capabilities.h"

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
  std::vector<uint64_t> flags = {(caps.transport.supported ? uint64_t{1} : 0) |
                                 (caps.nccl.available ? uint64_t{2} : 0)};
  comm.allreduce_bits(flags, /*bitwise_and=*/true);
  if (caps.transport.supported && (flags[0] & 1) == 0) {
    caps.transport = {false, "device pointers are not taken on every rank of the communicator"};
  }
  if (caps.nccl.available && (flags[0] & 2) == 0) {
    caps.nccl = {false, "NCCL is not available on every rank of the communicator"};
  }
  // Every rank has NCCL (the same answer everywhere, so all or none get here): NCCL needs
  // a different GPU on every rank.
  if ((flags[0] & 2) != 0) {
    const std::string mine = device.hardware_id();
    const auto all = comm.gather_bytes(std::vector<uint8_t>(mine.begin(), mine.end()), 0);
    std::string verdict;
    for (size_t a = 0; a < all.size() && verdict.empty(); ++a) {
      for (size_t b = a + 1; b < all.size() && verdict.empty(); ++b) {
        if (all[a] == all[b]) {
          verdict = "NCCL needs one GPU per rank: ranks " + std::to_string(a) + " and " + std::to_string(b) +
                    " share " + std::string(all[a].begin(), all[a].end());
        }
      }
    }
    std::vector<uint8_t> shared(verdict.begin(), verdict.end());
    comm.broadcast_bytes(shared, 0);
    if (!shared.empty()) caps.nccl = {false, std::string(shared.begin(), shared.end())};
  }
  return caps;
}

}  // namespace concord
