#include "algorithms/kernels.h"

#include <cstring>

#include "common/reduce.h"

namespace concord {

Kernels::Ticket HostKernels::reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype,
                                    ReduceOp op) {
  reduce_into(dst, a, src, count, dtype, op);
  return 0;
}

Kernels::Ticket HostKernels::copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return 0;
}

Kernels::Ticket HostKernels::scale(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  scale_buffer(dst, src, count, dtype, factor);
  return 0;
}

}  // namespace concord
