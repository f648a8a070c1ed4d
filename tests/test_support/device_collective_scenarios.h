// Allgather, reduce-scatter and alltoall of device tensors through the runtime, shared by
// the in-process suite (tests/unit/test_runtime_device.cc, Runtime::enqueue)
// and the MPI suite (tests/mpi/device_test.cc, the public API). Every case runs the same
// inputs once as tensors in device memory of the strict emulated device and once in host
// memory: the device results must be on the input's device and bit-identical to the host
// ones, and equal to the exact answer (the concatenated rows; float32 sums). Device
// tensors are filled and read through a stream only, allgather/alltoall results copied
// out with Handle::copy_output_to into device memory: a host access to device memory
// anywhere in the runtime crashes the test (device/emulated_memory.h).
#pragma once

#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "concord/errors.h"
#include "concord/handle.h"
#include "concord/types.h"
#include "test_support/device_scenarios.h"

namespace concord::testdevice {

/// One submission pattern of allgather / reduce-scatter / alltoall: dtype, op and scale
/// factors (reduce-scatter), every size as one group (fused) or one at a time.
struct CollectiveCase {
  CollectiveType type;
  DataType dtype;
  ReduceOp op;
  double prescale;
  double postscale;
  bool grouped;

  std::string describe() const {
    std::ostringstream out;
    out << collective_name(type) << " " << dtype_name(dtype);
    if (type == CollectiveType::kReducescatter)
      out << " " << reduce_op_name(op) << " prescale " << prescale << " postscale " << postscale;
    out << (grouped ? " grouped" : " one at a time");
    return out.str();
  }
};

inline const std::vector<CollectiveCase>& collective_cases() {
  using C = CollectiveType;
  using D = DataType;
  static const std::vector<CollectiveCase> cases = {
      {C::kAllgather, D::kFloat32, ReduceOp::kSum, 1.0, 1.0, true},
      {C::kAllgather, D::kInt8, ReduceOp::kSum, 1.0, 1.0, false},
      {C::kAllgather, D::kBFloat16, ReduceOp::kSum, 1.0, 1.0, true},
      {C::kAllgather, D::kBool, ReduceOp::kSum, 1.0, 1.0, false},
      {C::kReducescatter, D::kFloat32, ReduceOp::kSum, 1.0, 1.0, true},
      {C::kReducescatter, D::kFloat16, ReduceOp::kAverage, 0.5, 2.0, false},
      {C::kReducescatter, D::kInt32, ReduceOp::kSum, 1.0, 1.0, false},
      {C::kReducescatter, D::kFloat64, ReduceOp::kAverage, 1.0, 0.25, true},
      {C::kAlltoall, D::kFloat32, ReduceOp::kSum, 1.0, 1.0, false},
      {C::kAlltoall, D::kUInt8, ReduceOp::kSum, 1.0, 1.0, false},
      {C::kAlltoall, D::kFloat64, ReduceOp::kSum, 1.0, 1.0, false},
  };
  return cases;
}

/// Elements per row (odd, so rows never align to 8 bytes) and tensors per case.
inline constexpr int64_t kRowElements = 3;
inline constexpr size_t kTensors = 4;

/// Alltoall: rows rank `from` sends rank `to` in tensor t (none; 0 or 1; skewed; equal).
inline int64_t alltoall_split(size_t t, int from, int to) {
  switch (t) {
    case 0: return 0;
    case 1: return (from + to) % 2;
    case 2: return (from + 2 * to) % 5;
    default: return 4;
  }
}

/// Dim 0 of tensor t of `rank` in a case of collective `type` among `size` ranks: empty,
/// one row (allgather: on odd ranks only), odd, larger.
inline int64_t rows_of(CollectiveType type, size_t t, int rank, int size) {
  if (type == CollectiveType::kAlltoall) {
    int64_t rows = 0;
    for (int j = 0; j < size; ++j) rows += alltoall_split(t, rank, j);
    return rows;
  }
  const int64_t base[kTensors] = {0, 1, 7, 1001};
  if (type == CollectiveType::kReducescatter) return t == 2 ? 2 * size + 1 : base[t];
  if (t == 1) return rank % 2;
  return t == 0 ? 0 : base[t] + rank % 3;
}

/// The input of tensor t of `rank` (reduce-scatter: the same values pattern on every rank
/// as make_input, so sums are exact).
inline std::vector<uint8_t> collective_input(const CollectiveCase& c, size_t t, int rank, int size) {
  const size_t n = static_cast<size_t>(rows_of(c.type, t, rank, size) * kRowElements);
  const int seed = c.type == CollectiveType::kReducescatter ? rank : rank * 5 + static_cast<int>(t);
  return make_input(seed, n, c.dtype, c.op);
}

/// The exact allgather / alltoall result of tensor t on `rank` (rows concatenated in rank order).
inline std::vector<uint8_t> expected_gather(const CollectiveCase& c, size_t t, int rank, int size) {
  const size_t row_bytes = static_cast<size_t>(kRowElements) * dtype_size(c.dtype);
  std::vector<uint8_t> out;
  for (int from = 0; from < size; ++from) {
    const std::vector<uint8_t> input = collective_input(c, t, from, size);
    size_t first = 0, rows = input.size() / row_bytes;
    if (c.type == CollectiveType::kAlltoall) {
      first = 0;
      for (int j = 0; j < rank; ++j) first += static_cast<size_t>(alltoall_split(t, from, j));
      rows = static_cast<size_t>(alltoall_split(t, from, rank));
    }
    out.insert(out.end(), input.begin() + first * row_bytes, input.begin() + (first + rows) * row_bytes);
  }
  return out;
}

/// Submits `names` (one collective of `c`'s type, op and scale factors; more than one name:
/// as one group) with their inputs, outputs (reduce-scatter) and alltoall splits.
using SubmitCollective = std::function<std::vector<Handle>(
    const CollectiveCase& c, const std::vector<std::string>& names, const std::vector<TensorView>& inputs,
    const std::vector<TensorView>& outputs, const std::vector<std::vector<int64_t>>& splits)>;

namespace detail {

// The result of tensor `t`'s handle as bytes: reduce-scatter's output tensor, or the
// handle's result (device results copied out through Handle::copy_output_to).
inline std::string result_of(const Handle& handle, bool on_device, Device& device, int device_index,
                             const DeviceTensor* output, std::vector<uint8_t>& bytes) {
  if (output != nullptr) {
    bytes = output->read();
    return "";
  }
  if (!on_device) {
    bytes = handle.output_bytes();
    return handle.output_device() == kHostMemory ? "" : "a host result reports a device";
  }
  if (handle.output_device() != device_index)
    return "the result is on device " + std::to_string(handle.output_device()) + ", not on the input's device " +
           std::to_string(device_index);
  try {
    handle.output_bytes();
    return "output_bytes() of a device result did not throw";
  } catch (const InvalidArgument&) {
  }
  DeviceTensor copy(device, std::vector<uint8_t>(handle.output_nbytes(), 0xEE));
  handle.copy_output_to(copy.data());
  bytes = copy.read();
  return "";
}

}  // namespace detail

/// Runs every case of collective_cases() with device tensors (on `device`, index
/// `device_index`) and host tensors, and returns "" when every device result is on the
/// device, bit-identical to the host one and exact, else the first problem, naming rank,
/// case, tensor size and element. Collective: every rank of `size` calls it. `views` says
/// which runs pass kDetectDevice (the results must still be where the data is).
inline std::string compare_device_and_host_collectives(Device& device, int device_index, int rank, int size,
                                                       const std::string& prefix, const SubmitCollective& submit,
                                                       ViewDevices views = {}) {
  const auto& cases = collective_cases();
  for (size_t c = 0; c < cases.size(); ++c) {
    const CollectiveCase& test = cases[c];
    const size_t element = dtype_size(test.dtype);
    const bool scatter = test.type == CollectiveType::kReducescatter;
    std::vector<std::vector<uint8_t>> inputs, host_out;
    std::vector<DeviceTensor> device_in, device_out;
    std::vector<std::vector<int64_t>> shapes, out_shapes, splits;
    for (size_t t = 0; t < kTensors; ++t) {
      inputs.push_back(collective_input(test, t, rank, size));
      const int64_t rows = rows_of(test.type, t, rank, size);
      shapes.push_back({rows, kRowElements});
      const int64_t my_rows = scatter ? rows / size + (rank < rows % size ? 1 : 0) : 0;
      out_shapes.push_back({my_rows, kRowElements});
      host_out.emplace_back(static_cast<size_t>(my_rows * kRowElements) * element, 0xAB);
      device_in.emplace_back(device, inputs.back());
      device_out.emplace_back(device, std::vector<uint8_t>(host_out.back().size(), 0xCD));
      std::vector<int64_t> row;
      for (int j = 0; test.type == CollectiveType::kAlltoall && j < size; ++j)
        row.push_back(alltoall_split(t, rank, j));
      splits.push_back(row);
    }
    std::vector<Handle> handles[2];  // [on_device]
    for (int on_device = 1; on_device >= 0; --on_device) {
      std::vector<std::string> names;
      std::vector<TensorView> in, out;
      for (size_t t = 0; t < kTensors; ++t) {
        names.push_back(prefix + ".c" + std::to_string(c) + (on_device ? ".d" : ".h") + std::to_string(t));
        if (on_device) {
          in.push_back(
              TensorView{device_in[t].data(), test.dtype, shapes[t], views.device(device_index, device_in[t].data())});
          out.push_back(scatter ? TensorView{device_out[t].data(), test.dtype, out_shapes[t],
                                             views.device(device_index, device_out[t].data())}
                                : in.back());
        } else {
          in.push_back(TensorView{inputs[t].data(), test.dtype, shapes[t], views.host()});
          out.push_back(scatter ? TensorView{host_out[t].data(), test.dtype, out_shapes[t], views.host()} : in.back());
        }
      }
      if (test.grouped) {
        handles[on_device] = submit(test, names, in, out, splits);
      } else {
        for (size_t t = 0; t < kTensors; ++t) {
          handles[on_device].push_back(submit(test, {names[t]}, {in[t]}, {out[t]}, {splits[t]}).at(0));
          handles[on_device].back().wait();
        }
      }
    }
    for (auto& side : handles)
      for (auto& handle : side) handle.wait();
    for (size_t t = 0; t < kTensors; ++t) {
      const std::string where = "rank " + std::to_string(rank) + " of " + std::to_string(size) + ", case " +
                                test.describe() + ", tensor " + std::to_string(t) + " (" +
                                std::to_string(shapes[t][0]) + " rows of " + std::to_string(kRowElements) + "), " +
                                views.describe();
      std::vector<uint8_t> got[2];
      for (int on_device = 0; on_device < 2; ++on_device) {
        const std::string problem =
            detail::result_of(handles[on_device][t], on_device == 1, device, device_index,
                              scatter ? (on_device ? &device_out[t] : nullptr) : nullptr, got[on_device]);
        if (!problem.empty()) return where + ": " + problem;
      }
      if (scatter) got[0] = host_out[t];
      if (!scatter && handles[1][t].output_shape() != handles[0][t].output_shape())
        return where + ": device output shape " + shape_string(handles[1][t].output_shape()) + ", host " +
               shape_string(handles[0][t].output_shape());
      if (test.type == CollectiveType::kAlltoall && handles[1][t].received_splits() != handles[0][t].received_splits())
        return where + ": received splits differ between device and host";
      if (got[1].size() != got[0].size())
        return where + ": device result has " + std::to_string(got[1].size()) + " bytes, host " +
               std::to_string(got[0].size());
      const long differs = testing_util::first_difference(got[1], got[0], element);
      if (differs >= 0)
        return where + ": device result differs from the host run at element " + std::to_string(differs) + " (device " +
               std::to_string(testing_util::load(got[1].data(), differs, test.dtype)) + ", host " +
               std::to_string(testing_util::load(got[0].data(), differs, test.dtype)) + ")";
      if (device_in[t].read() != inputs[t]) return where + ": the device input was modified";
      if (!scatter) {
        const std::vector<uint8_t> exact = expected_gather(test, t, rank, size);
        const long wrong = exact.size() == got[1].size() ? testing_util::first_difference(got[1], exact, element) : 0;
        if (wrong >= 0)
          return where + ": result differs from the concatenated rows at element " + std::to_string(wrong);
      } else if (test.dtype == DataType::kFloat32 && test.op == ReduceOp::kSum) {
        const int64_t rows = shapes[t][0];
        const int64_t first = rank * (rows / size) + std::min<int64_t>(rank, rows % size);
        for (size_t i = 0; i < got[1].size() / element; ++i) {
          double exact = 0;
          for (int r = 0; r < size; ++r)
            exact += input_value(r, static_cast<size_t>(first * kRowElements) + i, test.dtype, test.op);
          if (testing_util::load(got[1].data(), i, test.dtype) != exact)
            return where + ": element " + std::to_string(i) + " is " +
                   std::to_string(testing_util::load(got[1].data(), i, test.dtype)) + ", exact sum " +
                   std::to_string(exact);
        }
      }
    }
  }
  return "";
}

}  // namespace concord::testdevice
