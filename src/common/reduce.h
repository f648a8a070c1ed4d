// Element-wise reduction and scaling kernels for every Concord dtype. Loops are written so
// the compiler vectorises them (float16/bfloat16 go through float32 and round to nearest
// even once per element, so results are identical on every rank).
#pragma once

#include <cstddef>

#include "concord/types.h"

namespace concord {

/// dst[i] = op(dst[i], src[i]) for i < count. kAverage reduces as kSum (the division is a
/// postscale). Integer sums wrap modulo 2^bits. Throws InvalidArgument for unknown codes.
void reduce_inplace(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);

/// reduce_inplace() without the CPU-specific float16 kernel (F16C): the portable,
/// compiler-vectorised loops only. Same results except which NaN a NaN-with-NaN keeps. For
/// tests and concord-kernelbench.
void reduce_inplace_portable(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);

/// Out of place: dst[i] = op(a[i], src[i]) for i < count (a is the left operand, as dst is
/// in reduce_inplace, so both give bit-identical results). a == dst is reduce_inplace;
/// src == dst reduces a received operand where it lies (dst[i] = op(a[i], dst[i])); any
/// other overlap of dst with a or src is not allowed. Same rules and errors as reduce_inplace.
void reduce_into(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op);

/// reduce_into() through the portable loops only (see reduce_inplace_portable).
void reduce_into_portable(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op);

/// dst[i] = src[i] * factor for i < count, computed in float64 for float64 and integer
/// dtypes (integers truncate toward zero; int64 values are exact only below 2^53 in
/// magnitude, and a product outside the dtype's range is not defined), float32 otherwise.
/// dst may equal src.
void scale_buffer(void* dst, const void* src, size_t count, DataType dtype, double factor);

}  // namespace concord
