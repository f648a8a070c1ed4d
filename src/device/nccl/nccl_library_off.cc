// nccl::library() of a build without NCCL (no CUDA, or nccl.h / libnccl not found).
#include "device/nccl/nccl_api.h"

namespace concord::nccl {

Api* library(Status* status) {
  if (status != nullptr) *status = Status{};
  return nullptr;
}

}  // namespace concord::nccl
