// Shared by the device suites: runs a device's reduce() and scale() on random bit
// patterns (every value class: NaNs with payloads, subnormals, infinities) and checks the
// bytes against the CPU kernels (common/reduce.h). NaN-with-NaN sums/products may keep
// either payload on the CPU too, so `reference` chooses which CPU kernel to compare with.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "common/reduce.h"
#include "device/device.h"
#include "test_support/dtype_util.h"

namespace concord::testing_util {

/// Random bytes, deterministic in `salt`.
inline std::vector<uint8_t> noise(size_t bytes, uint64_t salt) {
  std::vector<uint8_t> v(bytes);
  uint64_t h = salt * 0x9E3779B97F4A7C15ull + 1;
  for (auto& byte : v) {
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    byte = static_cast<uint8_t>(h >> 56);
  }
  return v;
}

using CpuReduce = void (*)(void*, const void*, size_t, DataType, ReduceOp);

/// For each count: reduce(a, b) then scale(result * 0.3) on `device`, and the received-operand
/// form reduce_into(dst = b, a, b) (what AllreduceRing does out of place), compared bit for
/// bit with `reference` and scale_buffer (integer scaling only when `check_integer_scale`:
/// out-of-range products are not defined).
inline void expect_kernels_match_cpu(Device& device, DataType dtype, ReduceOp op, const std::vector<size_t>& counts,
                                     CpuReduce reference, bool check_integer_scale) {
  auto stream = device.create_stream();
  for (size_t count : counts) {
    const size_t bytes = count * dtype_size(dtype);
    auto a = noise(bytes, 1), b = noise(bytes, 2);
    DeviceBuffer da(device, bytes), db(device, bytes), received(device, bytes);
    stream->copy(da.data(), a.data(), bytes, CopyKind::kHostToDevice);
    stream->copy(db.data(), b.data(), bytes, CopyKind::kHostToDevice);
    stream->copy(received.data(), b.data(), bytes, CopyKind::kHostToDevice);
    stream->reduce_into(received.data(), da.data(), received.data(), count, dtype, op);
    stream->reduce(da.data(), db.data(), count, dtype, op);
    stream->scale(db.data(), da.data(), count, dtype, 0.3);
    std::vector<uint8_t> reduced(bytes), scaled(bytes), reduced_where_received(bytes);
    stream->copy(reduced.data(), da.data(), bytes, CopyKind::kDeviceToHost);
    stream->copy(reduced_where_received.data(), received.data(), bytes, CopyKind::kDeviceToHost);
    stream->copy(scaled.data(), db.data(), bytes, CopyKind::kDeviceToHost);
    stream->synchronize();
    reference(a.data(), b.data(), count, dtype, op);
    scale_buffer(b.data(), a.data(), count, dtype, 0.3);
    const std::string what = cat(device.name(), " ", dtype_name(dtype), " ", reduce_op_name(op), " n=", count);
    const long r = first_difference(reduced, a, dtype_size(dtype));
    EXPECT_EQ(r, -1) << "reduce " << what << " element " << r;
    const long w = first_difference(reduced_where_received, a, dtype_size(dtype));
    EXPECT_EQ(w, -1) << "reduce_into(dst = src) " << what << " element " << w;
    if (!is_integer(dtype) || check_integer_scale) {
      const long s = first_difference(scaled, b, dtype_size(dtype));
      EXPECT_EQ(s, -1) << "scale " << what << " element " << s;
    }
  }
}

}  // namespace concord::testing_util
