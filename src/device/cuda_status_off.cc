// cuda_status() of a build without the CUDA device layer (CONCORD_WITH_CUDA=OFF or no toolkit).
#include "device/cuda_status.h"

namespace concord {

CudaStatus cuda_status() { return CudaStatus{}; }

}  // namespace concord
