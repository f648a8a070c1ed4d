// What the registry's allreduce rows on device buffers (algorithms/registry.h) may rely on for
// one communicator and device (Problem::device): whether the transport takes device pointers
// (a CUDA-aware MPI, transport/device_pointers.h) and whether NCCL can run
// (device/nccl/nccl_api.h). Selection must be the same on every rank, so the local answers
// are agreed on (a bitwise AND over the ranks) before any algorithm is chosen.
#pragma once

#include <string>

#include "device/device.h"
#include "transport/communicator.h"
#include "transport/device_pointers.h"

namespace concord {

/// One yes/no with the reason.
struct Capability {
  bool available = false;
  std::string reason;
};

struct DeviceCapabilities {
  /// The communicator takes device pointers of the device (CUDA-aware MPI, or Concord's
  /// StagingCommunicator); reason says why (not).
  DevicePointerSupport transport;
  /// NCCL is built, libnccl loads and the device is a CUDA GPU; otherwise the reason
  /// ("NCCL: not built", the dlopen error, or the CUDA status line of cuda_status()).
  Capability nccl;
};

/// This rank's view: device_pointer_support(comm), nccl::library() and
/// device.cuda_ordinal(). Not collective.
DeviceCapabilities local_device_capabilities(const Communicator& comm, const Device& device);

/// The capabilities every rank of `comm` has: each flag is ANDed over the ranks
/// (allreduce_bits); a flag this rank has but another lacks becomes false with the reason
/// "not on every rank of the communicator". NCCL is also refused when two ranks use the
/// same GPU (Device::hardware_id(): "NCCL needs one GPU per rank: ranks a and b share
/// <id>"). Collective over `comm` (control collectives).
/// Throws CommError on transport failure.
DeviceCapabilities agree_device_capabilities(Communicator& comm, const Device& device);

}  // namespace concord
