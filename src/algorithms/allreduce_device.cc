#include "algorithms/allreduce_device.h"

#include <algorithm>
#include <utility>

#include "algorithms/device_capabilities.h"

namespace concord {

const char* device_transport_name(DeviceTransport transport) {
  return transport == DeviceTransport::kCudaAware ? "cuda_aware" : "staged_gpu";
}

std::string device_row_name(const std::string& host, DeviceTransport transport) {
  const std::string name = device_transport_name(transport);
  return host == AllreduceRing::kName ? name : name + "_" + host;
}

namespace {
// The transport of device row `row` and the host algorithm it runs.
std::optional<std::pair<DeviceTransport, std::string>> parse_device_row(const std::string& row) {
  for (DeviceTransport transport : {DeviceTransport::kCudaAware, DeviceTransport::kStagedGpu}) {
    const std::string name = device_transport_name(transport);
    if (row == name) return std::make_pair(transport, std::string(AllreduceRing::kName));
    if (row.size() > name.size() + 1 && row.compare(0, name.size() + 1, name + "_") == 0)
      return std::make_pair(transport, row.substr(name.size() + 1));
  }
  return std::nullopt;
}
}  // namespace

std::optional<DeviceTransport> device_transport_of(const std::string& row) {
  const auto parsed = parse_device_row(row);
  if (!parsed) return std::nullopt;
  return parsed->first;
}

std::string host_algorithm_of(const std::string& row) {
  const auto parsed = parse_device_row(row);
  return parsed ? parsed->second : row;
}

std::string cuda_aware_declines(const Problem& problem) {
  if (problem.device == nullptr) return "the transport does not take device pointers: no device capabilities given";
  if (!problem.device->transport.supported) {
    return "the transport does not take device pointers: " + problem.device->transport.reason;
  }
  return "";
}

double device_seconds(const Cost& cost, const DeviceSteps& steps, const Problem& problem, const CostParams& params,
                      DeviceTransport transport) {
  if (problem.ranks == 1 || problem.count == 0) return 0;
  const StagingParams& staging = params.staging;
  CostParams on_device = params;
  on_device.gamma = staging.kernel_gamma;
  double seconds = cost.seconds(on_device) + steps.kernels * staging.kernel_alpha;
  if (transport == DeviceTransport::kStagedGpu) {
    seconds += steps.messages * 2 * staging.copy_alpha;
    const double wire = cost.wire_bytes * params.beta + cost.inter_wire_bytes * params.inter_beta;
    seconds += std::max(0.0, static_cast<double>(cost.max_bytes_sent) * staging.copy_beta - wire);
  }
  return seconds;
}

DeviceRowResources::DeviceRowResources(Communicator& comm, Device& device, DeviceTransport transport)
    : comm_(comm),
      staging_(transport == DeviceTransport::kStagedGpu ? std::make_unique<StagingCommunicator>(comm, device)
                                                        : nullptr),
      kernels_(device) {}

}  // namespace concord
