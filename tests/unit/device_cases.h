// Shared by the device-buffer allreduce suites (test_allreduce_staged.cc,
// test_allreduce_device.cc, test_device_selection.cc, ...): the case list (P x size x
// dtype x op), a driver that counts the final ranges an algorithm reports, and a problem on
// device buffers with its capabilities for the registry's device rows.
#pragma once

#include <ostream>
#include <stdexcept>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/device_capabilities.h"
#include "algorithms/registry.h"
#include "common/backoff.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord::testing_util {

/// A problem on device buffers and the capabilities it is judged on (Problem::device
/// points at them in get()).
struct DeviceProblem {
  Problem problem;
  DeviceCapabilities caps;
  /// The Problem the registry sees: memory kDevice, device = &caps.
  Problem get() const {
    Problem p = problem;
    p.memory = MemoryKind::kDevice;
    p.device = &caps;
    return p;
  }
};

/// The registry's allreduce row called `name`.
inline const AllreduceEntry& allreduce_row(const std::string& name) {
  return find_algorithm(allreduce_algorithms(), name);
}

/// The registry's choice for `problem` with `staging` as the device constants.
inline const AllreduceEntry& select_device(const DeviceProblem& problem, CostParams params,
                                           const StagingParams& staging, const std::string& forced = "") {
  params.staging = staging;
  return select_algorithm(allreduce_algorithms(), problem.get(), params, forced);
}

struct DeviceCase {
  int P;
  size_t n;
  DataType dtype;
  ReduceOp op;
};

/// P = 1, 2, 3, 5, 8, 16 and sizes 0, 1, 1023 and `large` (`large_many_ranks` above 5
/// ranks) for float32 and bfloat16 sums; every other dtype x op at P = 3 (odd, so the
/// ring's segments are uneven), sums on `large` elements, other ops on 1023.
inline std::vector<DeviceCase> device_cases(size_t large, size_t large_many_ranks) {
  std::vector<DeviceCase> out;
  for (int P : {1, 2, 3, 5, 8, 16})
    for (size_t n : {size_t{0}, size_t{1}, size_t{1023}, P <= 5 ? large : large_many_ranks})
      for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) out.push_back({P, n, dtype, ReduceOp::kSum});
  for (DataType dtype : all_dtypes())
    for (ReduceOp op : all_ops()) {
      if ((dtype == DataType::kFloat32 || dtype == DataType::kBFloat16) && op == ReduceOp::kSum) continue;  // above
      out.push_back({3, op == ReduceOp::kSum ? large : size_t{1023}, dtype, op});
    }
  return out;
}

/// "P3_n1023_float16_sum": a readable gtest parameter name.
inline std::string device_case_name(const DeviceCase& c) {
  return cat("P", c.P, "_n", c.n, "_", dtype_name(c.dtype), "_", reduce_op_name(c.op));
}

/// How gtest prints a DeviceCase (GetParam() in failure lines): its name, not its bytes.
inline void PrintTo(const DeviceCase& c, std::ostream* out) { *out << device_case_name(c); }

/// Drives `algorithm` (just started on a buffer of `bytes` bytes) to kDone with a Backoff
/// between idle polls (ranks and stream threads share the cores); throws when another rank
/// failed. Returns the bytes its final ranges covered (FinalRangeCollector).
inline size_t drive_counting_ranges(AllreduceAlgorithm& algorithm, size_t bytes, const AbortFlag& aborted) {
  FinalRangeCollector collector(algorithm, bytes);
  std::vector<ByteRange> ranges;
  size_t covered = 0;
  Backoff backoff;
  for (Progress state = Progress::kInProgress; state == Progress::kInProgress;) {
    state = algorithm.progress();
    ranges.clear();
    collector.collect(state, ranges);
    for (const ByteRange& range : ranges) covered += range.bytes;
    if (aborted.load()) throw std::runtime_error("another rank failed");
    if (state == Progress::kInProgress && ranges.empty()) backoff.wait();
  }
  return covered;
}

}  // namespace concord::testing_util
