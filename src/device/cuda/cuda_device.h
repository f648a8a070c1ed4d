// The CUDA implementation of the device layer (device/device.h): cudaMalloc'd memory,
// cudaStream_t streams, cudaEvent_t events (created with timing disabled) and the kernels
// of kernels.cu. The runtime library is linked statically; nothing links libcuda.
#pragma once

#include <memory>
#include <string>

#include "device/cuda/driver_api.h"
#include "device/device.h"
#include "device/pointer_cache.h"

namespace concord::cuda {

/// Number of usable CUDA devices, or 0 with `reason` set to the runtime's error text
/// ("cudaErrorInsufficientDriver: CUDA driver version is insufficient ..." where there is
/// no driver, "no CUDA device" where there are none). Never throws.
int usable_devices(std::string& reason);

class CudaDevice : public Device {
 public:
  /// Uses device `ordinal`. Throws DeviceError (with the runtime's reason) when it is not
  /// usable.
  explicit CudaDevice(int ordinal = 0);

  std::string name() const override;
  void* allocate(size_t bytes) override;
  void free(void* data) override;
  void* allocate_host(size_t bytes) override;
  void free_host(void* data) override;
  std::unique_ptr<Stream> create_stream() override;
  std::unique_ptr<Event> create_event() override;
  /// Through the pointer cache (device/pointer_cache.h): allocations of this device are
  /// registered when made and forgotten when freed; any other pointer costs one
  /// cuPointerGetAttributes the first time its allocation is seen (device memory of any
  /// allocator, e.g. PyTorch's, is then cached; host memory is asked every time).
  bool is_device_pointer(const void* data) const override;
  /// Device memory of this GPU, through the same cache (the driver's device ordinal of the
  /// cached allocation equals ordinal()). A failed driver query is host memory
  /// (DriverAttributeProvider), so this never throws.
  bool owns(const void* data) const override { return pointers_.lookup(data).device == ordinal_; }
  PointerCacheStats pointer_cache_stats() const override { return pointers_.stats(); }
  int cuda_ordinal() const override { return ordinal_; }
  std::string hardware_id() const override { return hardware_id_; }
  int ordinal() const { return ordinal_; }

 private:
  int ordinal_;
  std::string name_;
  std::string hardware_id_;
  mutable cuda::DriverAttributeProvider driver_;
  mutable PointerCache pointers_{driver_};
};

}  // namespace concord::cuda
