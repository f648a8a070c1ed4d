#include "runtime/collective_memory.h"

#include <cstring>

#include "common/reduce.h"

namespace concord {

void copy_host_spans(const std::vector<CopySpan>& spans, DataType dtype, double factor) {
  const size_t element = dtype_size(dtype);
  for (const CopySpan& span : spans) {
    if (span.bytes == 0) continue;
    if (factor != 1.0) {
      scale_buffer(span.dst, span.src, span.bytes / element, dtype, factor);
    } else {
      std::memcpy(span.dst, span.src, span.bytes);
    }
  }
}

void HostMemory::copy_in(const std::vector<CopySpan>& spans, DataType dtype, double factor) {
  copy_host_spans(spans, dtype, factor);
}

void HostMemory::copy_out(const std::vector<CopySpan>& spans, DataType dtype, double factor) {
  copy_host_spans(spans, dtype, factor);
}

void* HostMemory::allocate_output(HandleState& handle, size_t bytes) {
  handle.output_bytes.assign(bytes, 0);
  return handle.output_bytes.data();
}

}  // namespace concord
