#include "algorithms/allreduce_ring_device.h"

#include <algorithm>

#include "algorithms/device_capabilities.h"

namespace concord {
DeviceBufferRing::DeviceBufferRing(Communicator& comm, Device& device, size_t chunk_bytes, bool staged)
    : staging_(staged ? std::make_unique<StagingCommunicator>(comm, device) : nullptr),
      kernels_(device),
      ring_(staged ? *staging_ : comm, kernels_, chunk_bytes) {}

double device_ring_seconds(const Problem& problem, const CostParams& params, bool staged) {
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return 0;
  const StagingParams& staging = params.staging;
  const Cost ring = AllreduceRing::cost(problem);
  CostParams on_device = params;
  on_device.gamma = staging.kernel_gamma;
  double seconds = ring.seconds(on_device) + (P - 1) * staging.kernel_alpha;
  if (staged) {
    seconds += 2.0 * (P - 1) * 2 * staging.copy_alpha;
    const double wire = ring.wire_bytes * params.beta + ring.inter_wire_bytes * params.inter_beta;
    seconds += std::max(0.0, static_cast<double>(ring.max_bytes_sent) * staging.copy_beta - wire);
  }
  return seconds;
}

std::string AllreduceCudaAware::declines(const Problem& problem) {
  if (problem.device == nullptr) return "the transport does not take device pointers: no device capabilities given";
  if (!problem.device->transport.supported) {
    return "the transport does not take device pointers: " + problem.device->transport.reason;
  }
  return "";
}

}  // namespace concord
