// cuda_status() of a CUDA build: asks the runtime how many devices are usable.
#include "device/cuda_status.h"

#include "device/cuda/cuda_device.h"

namespace concord {

CudaStatus cuda_status() {
  CudaStatus status;
  status.built = true;
  status.devices = cuda::usable_devices(status.reason);
  return status;
}

}  // namespace concord
