// The CUDA driver functions Concord needs, looked up at run time through the runtime's
// cudaGetDriverEntryPointByVersion: nothing links the driver stub (libcuda.so), so
// binaries start on machines without a driver. Today that is cuPointerGetAttributes, for
// the pointer cache's AttributeProvider.
#pragma once

#include <optional>

#include "device/pointer_cache.h"

namespace concord::cuda {

/// Answers pointer-cache misses with one cuPointerGetAttributes call (memory type, range
/// start and size, device ordinal, buffer ID). Device-accessible memory (cudaMalloc,
/// managed) is a device allocation; pinned and pageable host memory are host memory.
class DriverAttributeProvider : public AttributeProvider {
 public:
  /// Throws DeviceError when the driver or the entry point is unavailable.
  DriverAttributeProvider();
  std::optional<DeviceAllocation> query(const void* data) override;

 private:
  void* get_attributes_ = nullptr;  // cuPointerGetAttributes
};

}  // namespace concord::cuda
