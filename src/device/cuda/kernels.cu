// CUDA kernels of the device layer (kernels.h). One grid-stride loop per kernel; the
// per-element work is common/reduce_ops.h, shared with the CPU kernels. Compiled with
// --fmad=false (src/device/CMakeLists.txt) so no multiply-add is ever contracted.
#include "device/cuda/kernels.h"

#include <cstdint>

#include "common/reduce_ops.h"

namespace concord::cuda {
namespace {

using namespace reduce_ops;

constexpr int kThreads = 256;

unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

// dst may be a or src (no __restrict__): each element is read before it is written.
template <typename T, typename Combine>
__global__ void reduce_kernel(T* dst, const T* a, const T* src, size_t count) {
  const Combine combine;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = combine(a[i], src[i]);
}

template <typename Half, typename Combine>
__global__ void reduce_half_kernel(uint16_t* dst, const uint16_t* a, const uint16_t* src, size_t count) {
  const Combine combine;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = combine_half<Half>(a[i], src[i], combine);
}

template <typename T, typename Compute>
__global__ void scale_kernel(T* dst, const T* src, size_t count, Compute factor) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = scale_element<T, Compute>(src[i], factor);
}

template <typename Half>
__global__ void scale_half_kernel(uint16_t* dst, const uint16_t* src, size_t count, float factor) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = scale_half_element<Half>(src[i], factor);
}

struct SpanBatch {
  CopySpan spans[kMaxSpansPerLaunch];
};

// One block per span, bytes copied in 16-byte words when both ends are aligned.
__global__ void copy_batch_kernel(SpanBatch batch, unsigned n) {
  if (blockIdx.x >= n) return;
  const CopySpan span = batch.spans[blockIdx.x];
  auto* dst = static_cast<uint8_t*>(span.dst);
  const auto* src = static_cast<const uint8_t*>(span.src);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const size_t words = span.bytes / 16;
    for (size_t i = threadIdx.x; i < words; i += blockDim.x)
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    done = words * 16;
  }
  for (size_t i = done + threadIdx.x; i < span.bytes; i += blockDim.x) dst[i] = src[i];
}

template <typename T>
cudaError_t reduce_typed(void* dst, const void* a, const void* src, size_t n, ReduceOp op, cudaStream_t stream) {
  auto* d = static_cast<T*>(dst);
  const auto* l = static_cast<const T*>(a);
  const auto* s = static_cast<const T*>(src);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: reduce_kernel<T, Sum<T>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n); break;
    case ReduceOp::kProduct: reduce_kernel<T, Product<T>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n); break;
    case ReduceOp::kMin: reduce_kernel<T, Min<T>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n); break;
    case ReduceOp::kMax: reduce_kernel<T, Max<T>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <typename Half>
cudaError_t reduce_half(void* dst, const void* a, const void* src, size_t n, ReduceOp op, cudaStream_t stream) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* l = static_cast<const uint16_t*>(a);
  const auto* s = static_cast<const uint16_t*>(src);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      reduce_half_kernel<Half, Sum<float>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n);
      break;
    case ReduceOp::kProduct:
      reduce_half_kernel<Half, Product<float>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n);
      break;
    case ReduceOp::kMin:
      reduce_half_kernel<Half, Min<float>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n);
      break;
    case ReduceOp::kMax:
      reduce_half_kernel<Half, Max<float>><<<blocks_for(n), kThreads, 0, stream>>>(d, l, s, n);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <typename T, typename Compute>
cudaError_t scale_typed(void* dst, const void* src, size_t n, Compute factor, cudaStream_t stream) {
  scale_kernel<T, Compute>
      <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), n, factor);
  return cudaGetLastError();
}

template <typename Half>
cudaError_t scale_half(void* dst, const void* src, size_t n, float factor, cudaStream_t stream) {
  scale_half_kernel<Half><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint16_t*>(dst),
                                                                  static_cast<const uint16_t*>(src), n, factor);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op,
                          cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (dtype) {
    case DataType::kFloat32: return reduce_typed<float>(dst, a, src, count, op, stream);
    case DataType::kFloat64: return reduce_typed<double>(dst, a, src, count, op, stream);
    case DataType::kInt32: return reduce_typed<int32_t>(dst, a, src, count, op, stream);
    case DataType::kInt64: return reduce_typed<int64_t>(dst, a, src, count, op, stream);
    case DataType::kInt16: return reduce_typed<int16_t>(dst, a, src, count, op, stream);
    case DataType::kInt8: return reduce_typed<int8_t>(dst, a, src, count, op, stream);
    case DataType::kUInt8: return reduce_typed<uint8_t>(dst, a, src, count, op, stream);
    case DataType::kFloat16: return reduce_half<Float16>(dst, a, src, count, op, stream);
    case DataType::kBFloat16: return reduce_half<BFloat16>(dst, a, src, count, op, stream);
    case DataType::kBool: break;  // not reducible: the runtime refuses bool reductions at enqueue
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_scale(void* dst, const void* src, size_t count, DataType dtype, double factor, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (dtype) {
    case DataType::kFloat32: return scale_typed<float, float>(dst, src, count, static_cast<float>(factor), stream);
    case DataType::kFloat64: return scale_typed<double, double>(dst, src, count, factor, stream);
    case DataType::kInt32: return scale_typed<int32_t, double>(dst, src, count, factor, stream);
    case DataType::kInt64: return scale_typed<int64_t, double>(dst, src, count, factor, stream);
    case DataType::kInt16: return scale_typed<int16_t, double>(dst, src, count, factor, stream);
    case DataType::kInt8: return scale_typed<int8_t, double>(dst, src, count, factor, stream);
    case DataType::kUInt8: return scale_typed<uint8_t, double>(dst, src, count, factor, stream);
    case DataType::kFloat16: return scale_half<Float16>(dst, src, count, static_cast<float>(factor), stream);
    case DataType::kBFloat16: return scale_half<BFloat16>(dst, src, count, static_cast<float>(factor), stream);
    case DataType::kBool: break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_copy_batch(const CopySpan* spans, size_t n, cudaStream_t stream) {
  for (size_t first = 0; first < n; first += kMaxSpansPerLaunch) {
    SpanBatch batch{};
    const size_t count = n - first < kMaxSpansPerLaunch ? n - first : kMaxSpansPerLaunch;
    for (size_t i = 0; i < count; ++i) batch.spans[i] = spans[first + i];
    copy_batch_kernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(batch, static_cast<unsigned>(count));
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

}  // namespace concord::cuda
