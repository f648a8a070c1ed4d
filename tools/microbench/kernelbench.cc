// concord-kernelbench: throughput of the reduction kernel reduce_inplace
// (src/common/reduce.h) per dtype and op, next to a plain float32 `a[i] += b[i]` loop as
// the memory-bandwidth reference. No MPI: a single process on one core.
//
//   concord-kernelbench [-b BYTES] [-n ITERATIONS] [-w WARMUP] [-d dtype,...] [-o op,...]
//
// Each measurement reduces a source buffer of BYTES bytes (default 32 MiB) into a
// destination of the same size, `iterations` times after `warmup` untimed calls, and prints
// the median time per call. Rows "float16-p" are float16 through reduce_inplace_portable
// (no F16C kernel), as on CPUs without F16C. GB/s = BYTES / time (10^9 bytes per second, counting the
// destination buffer once, as an algorithm's gamma term does); the memory traffic is about
// three times that (read dst, read src, write dst).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/half.h"
#include "common/reduce.h"
#include "concord/types.h"
#include "tools/common/timing.h"

namespace {

const std::vector<concord::ReduceOp> kAllOps = {concord::ReduceOp::kSum, concord::ReduceOp::kMin,
                                                concord::ReduceOp::kMax, concord::ReduceOp::kProduct};
const std::vector<concord::DataType> kAllDtypes = {
    concord::DataType::kFloat32, concord::DataType::kFloat64, concord::DataType::kFloat16, concord::DataType::kBFloat16,
    concord::DataType::kInt32,   concord::DataType::kInt64,   concord::DataType::kInt8,    concord::DataType::kUInt8};

concord::ReduceOp op_from_name(const std::string& name) {
  for (int code = 0; code <= 4; ++code) {
    const auto op = static_cast<concord::ReduceOp>(code);
    if (name == concord::reduce_op_name(op)) return op;
  }
  throw CLI::ValidationError("-o", "unknown op '" + name + "' (sum, average, min, max, product)");
}

using concord::tools::median_seconds;

// Fills `buffer` with `value` as `dtype`: src holds 1 and dst 1.5, so sums grow slowly,
// products stay put and no value ever becomes subnormal (which would time the FPU's slow
// path instead of the kernel).
void fill(std::vector<uint8_t>& buffer, concord::DataType dtype, float value) {
  const size_t size = concord::dtype_size(dtype);
  uint8_t element[8];
  switch (dtype) {
    case concord::DataType::kFloat32: std::memcpy(element, &value, 4); break;
    case concord::DataType::kFloat64: {
      const double v = value;
      std::memcpy(element, &v, 8);
      break;
    }
    case concord::DataType::kFloat16: {
      const uint16_t v = concord::float_to_float16(value);
      std::memcpy(element, &v, 2);
      break;
    }
    case concord::DataType::kBFloat16: {
      const uint16_t v = concord::float_to_bfloat16(value);
      std::memcpy(element, &v, 2);
      break;
    }
    case concord::DataType::kInt32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(element, &v, 4);
      break;
    }
    case concord::DataType::kInt64: {
      const int64_t v = static_cast<int64_t>(value);
      std::memcpy(element, &v, 8);
      break;
    }
    case concord::DataType::kInt8:
    case concord::DataType::kUInt8: element[0] = static_cast<uint8_t>(value); break;
  }
  for (size_t i = 0; i + size <= buffer.size(); i += size) std::memcpy(buffer.data() + i, element, size);
}

// The reference: what a plain, auto-vectorised float32 sum loop achieves on this machine.
__attribute__((noinline)) void plain_float_sum(float* __restrict dst, const float* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"concord-kernelbench: GB/s of reduce_inplace per dtype and op"};
  size_t bytes = size_t{32} << 20;
  int iterations = 20;
  int warmup = 3;
  std::vector<std::string> dtype_names;
  std::vector<std::string> op_names;
  app.add_option("-b,--bytes", bytes, "buffer size in bytes (default 32 MiB)");
  app.add_option("-n,--iterations", iterations, "timed calls per measurement")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup", warmup, "untimed calls first")->check(CLI::NonNegativeNumber);
  app.add_option("-d,--dtype", dtype_names, "dtypes (default all)")->delimiter(',');
  app.add_option("-o,--op", op_names, "ops: sum, min, max, product (default all)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  std::vector<concord::DataType> dtypes;
  std::vector<concord::ReduceOp> ops;
  try {
    for (const auto& name : dtype_names) dtypes.push_back(concord::dtype_from_name(name));
    for (const auto& name : op_names) ops.push_back(op_from_name(name));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "concord-kernelbench: %s\n", e.what());
    return 2;
  }
  if (dtypes.empty()) dtypes = kAllDtypes;
  if (ops.empty()) ops = kAllOps;

  bytes = std::max<size_t>(bytes / 8 * 8, 8);
  std::vector<uint8_t> dst(bytes), src(bytes), pristine(bytes);

  std::printf("# %zu bytes per buffer, median of %d calls; GB/s = bytes / time\n", bytes, iterations);
  std::printf("%-10s %-8s %12s %10s\n", "dtype", "op", "time_us", "GB/s");
  fill(pristine, concord::DataType::kFloat32, 1.5f);
  fill(src, concord::DataType::kFloat32, 1.0f);
  dst = pristine;
  const double plain = median_seconds(warmup, iterations, [&] {
    plain_float_sum(reinterpret_cast<float*>(dst.data()), reinterpret_cast<const float*>(src.data()),
                    bytes / sizeof(float));
  });
  std::printf("%-10s %-8s %12.1f %10.2f\n", "plain-f32", "sum", plain * 1e6, bytes / plain / 1e9);
  for (const auto dtype : dtypes) {
    const size_t count = bytes / concord::dtype_size(dtype);
    fill(pristine, dtype, 1.5f);
    fill(src, dtype, 1.0f);
    for (const auto op : ops) {
      dst = pristine;
      const double seconds = median_seconds(warmup, iterations,
                                            [&] { concord::reduce_inplace(dst.data(), src.data(), count, dtype, op); });
      std::printf("%-10s %-8s %12.1f %10.2f\n", concord::dtype_name(dtype), concord::reduce_op_name(op), seconds * 1e6,
                  bytes / seconds / 1e9);
      if (dtype != concord::DataType::kFloat16) continue;
      dst = pristine;  // float16 also without the F16C kernel
      const double portable = median_seconds(
          warmup, iterations, [&] { concord::reduce_inplace_portable(dst.data(), src.data(), count, dtype, op); });
      std::printf("%-10s %-8s %12.1f %10.2f\n", "float16-p", concord::reduce_op_name(op), portable * 1e6,
                  bytes / portable / 1e9);
    }
  }
  return 0;
}
