// The data concord-bench sends and the results it expects. Inputs are small integers, so
// every dtype (float16 and bfloat16 included) holds them, their sums, minima, maxima and
// products exactly for up to 16 ranks, and a result either matches bit for bit or is
// counted in #wrong.
#pragma once

#include <cstddef>
#include <cstdint>

#include "concord/types.h"

namespace concord::bench {

/// Writes element `i` of rank `rank`'s input to a reduction with `op` (i is the index in
/// the whole vector) for i in [first, first + count), as `dtype`, to dst.
void fill_reduction_input(uint8_t* dst, size_t first, size_t count, DataType dtype, int rank, ReduceOp op);

/// Elements of `result` (elements [first, first + count) of the whole vector) that differ
/// bitwise from the exact reduction over `ranks` ranks of their inputs. kAverage expects
/// the sum scaled by 1/ranks with scale_buffer, as concord-bench scales an averaged result.
long count_wrong_reduction(const uint8_t* result, size_t first, size_t count, DataType dtype, int ranks, ReduceOp op);

/// Writes element i of the data rank `rank` contributes to a data-moving collective
/// (allgather, broadcast, alltoall) for i in [first, first + count): values in [0, 97)
/// that differ between neighbouring ranks and neighbouring elements.
void fill_pattern(uint8_t* dst, size_t first, size_t count, DataType dtype, int rank);

/// Elements of `result` that differ bitwise from what fill_pattern(.., first, count, dtype,
/// rank) writes.
long count_wrong_pattern(const uint8_t* result, size_t first, size_t count, DataType dtype, int rank);

}  // namespace concord::bench
