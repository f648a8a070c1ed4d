// What the in-process runtime suites (unit/test_runtime_*.cc, test_process_sets_inprocess.cc)
// hand a Runtime: the Config they run under, a Request of one collective, and host buffers
// as TensorViews.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "concord/types.h"
#include "control/message.h"

namespace concord::testing_util {

/// The built-in defaults whatever the environment says, with a 0.2 ms cycle (the tests
/// finish quickly) and autotuning off (the algorithm each size takes does not change between
/// runs); `dynamic_process_sets` as Config's.
inline Config test_config(bool dynamic_process_sets = false) {
  Config config;
  config.cycle_time_ms = 0.2;
  config.autotune = false;
  config.dynamic_process_sets = dynamic_process_sets;
  return config;
}

/// A request of collective `type` on tensor `name` (op for the reducing collectives, root
/// for broadcast); the runtime fills in rank, dtype and shape from the tensor at enqueue().
inline Request request(const std::string& name, CollectiveType type, ReduceOp op = ReduceOp::kSum, int root = 0) {
  Request r;
  r.name = name;
  r.type = type;
  r.op = op;
  r.root = root;
  return r;
}

/// A 1-d float32 view of `data` (not owned).
inline TensorView host_view(std::vector<float>& data) {
  return TensorView{data.data(), DataType::kFloat32, {static_cast<int64_t>(data.size())}};
}

/// A 1-d view of `bytes` as elements of `dtype` (bytes.size() / dtype_size(dtype) of them).
inline TensorView host_view(std::vector<uint8_t>& bytes, DataType dtype) {
  return TensorView{bytes.data(), dtype, {static_cast<int64_t>(bytes.size() / dtype_size(dtype))}};
}

}  // namespace concord::testing_util
