// Launchers of the CUDA kernels (kernels.cu): element-wise reduction and scaling for every
// dtype x op, and a batched copy of many small spans in one launch. Each is a loop over
// the per-element functions of common/reduce_ops.h, so results are bit-identical to
// reduce_inplace()/scale_buffer() (common/reduce.h). All are asynchronous on `stream`;
// launch errors are returned, never thrown (the caller wraps them in DeviceError).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "concord/types.h"
#include "device/device.h"

namespace concord::cuda {

/// dst[i] = op(a[i], src[i]), i < count (kAverage as kSum). Device pointers; dst may be a or
/// src (reduce_into()'s rules).
cudaError_t launch_reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op,
                          cudaStream_t stream);

/// dst[i] = src[i] * factor, i < count (dst may equal src). Device pointers.
cudaError_t launch_scale(void* dst, const void* src, size_t count, DataType dtype, double factor, cudaStream_t stream);

/// Copies every span (device-accessible pointers) in as few launches as the kernel
/// parameter space allows (kMaxSpansPerLaunch spans each).
cudaError_t launch_copy_batch(const CopySpan* spans, size_t n, cudaStream_t stream);

/// Spans passed by value in one launch (the descriptors travel in the kernel parameters,
/// so nothing has to stay alive after the launch).
inline constexpr size_t kMaxSpansPerLaunch = 256;

}  // namespace concord::cuda
