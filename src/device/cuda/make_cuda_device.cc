// make_cuda_device() of a CUDA build: the CUDA implementation behind a DeviceSet index.
#include "device/cuda/cuda_device.h"
#include "device/device_set.h"

namespace concord {

std::unique_ptr<Device> make_cuda_device(int ordinal) { return std::make_unique<cuda::CudaDevice>(ordinal); }

}  // namespace concord
