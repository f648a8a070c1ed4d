#include "device/cuda/driver_api.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "common/enforce.h"
#include "device/device_error.h"

namespace concord::cuda {
namespace {

using GetAttributes = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);

}  // namespace

DriverAttributeProvider::DriverAttributeProvider() {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t error =
      cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &get_attributes_, 12000, cudaEnableDefault, &found);
  CONCORD_ENFORCE(error == cudaSuccess && found == cudaDriverEntryPointSuccess && get_attributes_ != nullptr,
                  DeviceError, "CUDA driver entry point cuPointerGetAttributes unavailable: ", cudaGetErrorName(error),
                  ": ", cudaGetErrorString(error));
}

std::optional<DeviceAllocation> DriverAttributeProvider::query(const void* data) {
  unsigned int memory_type = 0;
  CUdeviceptr start = 0;
  size_t bytes = 0;
  int ordinal = -1;
  unsigned long long buffer_id = 0;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_BUFFER_ID};
  void* values[] = {&memory_type, &start, &bytes, &ordinal, &buffer_id};
  const CUresult result = reinterpret_cast<GetAttributes>(get_attributes_)(
      5, attributes, values, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(data)));
  if (result != CUDA_SUCCESS || memory_type != CU_MEMORYTYPE_DEVICE || bytes == 0) return std::nullopt;
  return DeviceAllocation{static_cast<uintptr_t>(start), bytes, ordinal, buffer_id};
}

}  // namespace concord::cuda
