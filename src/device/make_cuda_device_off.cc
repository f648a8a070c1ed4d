// make_cuda_device() of a build without the CUDA device layer (CONCORD_WITH_CUDA=OFF or no toolkit).
#include "device/device_set.h"

namespace concord {

std::unique_ptr<Device> make_cuda_device(int ordinal) {
  throw DeviceError("cannot use CUDA device " + std::to_string(ordinal) + ": CUDA: not built");
}

}  // namespace concord
