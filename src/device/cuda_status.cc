#include "device/cuda_status.h"

namespace concord {

std::string CudaStatus::summary() const {
  if (!built) return "CUDA: not built";
  if (devices == 0) return "CUDA: built, no usable device (" + reason + ")";
  return "CUDA: built, " + std::to_string(devices) + " device(s)";
}

}  // namespace concord
