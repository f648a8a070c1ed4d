#include "algorithms/kernels.h"

#include <cstring>

#include "common/reduce.h"

namespace concord {

Kernels::Ticket Kernels::copy_scaled(const std::vector<CopySpan>& spans, DataType dtype, double factor) {
  const size_t element = dtype_size(dtype);
  std::vector<CopySpan> copies;
  Ticket last = 0;
  for (const CopySpan& span : spans) {
    if (span.bytes == 0) continue;
    if (factor != 1.0) {
      last = scale(span.dst, span.src, span.bytes / element, dtype, factor);
    } else {
      copies.push_back(span);
    }
  }
  if (!copies.empty()) last = copy_batch(copies);
  return last;
}

Kernels::Ticket HostKernels::reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype,
                                    ReduceOp op) {
  reduce_into(dst, a, src, count, dtype, op);
  return 0;
}

Kernels::Ticket HostKernels::copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return 0;
}

Kernels::Ticket HostKernels::copy_batch(const std::vector<CopySpan>& spans) {
  for (const CopySpan& span : spans) copy(span.dst, span.src, span.bytes);
  return 0;
}

Kernels::Ticket HostKernels::scale(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  scale_buffer(dst, src, count, dtype, factor);
  return 0;
}

}  // namespace concord
