// Device tensors through the runtime, shared by the in-process suite
// (tests/unit/test_runtime_device.cc, Runtime::enqueue) and the MPI suite
// (tests/mpi/device_test.cc, the public API): every case allreduces the same inputs once
// as tensors in device memory of the strict emulated device and once in host memory, and
// the two results must be bit-identical; float32 sums are also checked against the exact
// value. The device tensors are filled and read through a stream only: a host access to
// their memory anywhere in the runtime crashes the test (device/emulated_memory.h).
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "concord/handle.h"
#include "concord/types.h"
#include "device/device.h"
#include "test_support/dtype_util.h"

namespace concord::testdevice {

/// One submission pattern: dtype, op, scale factors, all tensors at once (fused) or one
/// at a time (the single-tensor path), in place or out of place.
struct AllreduceCase {
  DataType dtype;
  ReduceOp op;
  double prescale;
  double postscale;
  bool fused;
  bool in_place;

  std::string describe() const {
    std::ostringstream out;
    out << dtype_name(dtype) << " " << reduce_op_name(op) << " prescale " << prescale << " postscale " << postscale
        << (fused ? " fused" : " one at a time") << (in_place ? " in place" : " out of place");
    return out.str();
  }
};

inline const std::vector<AllreduceCase>& allreduce_cases() {
  static const std::vector<AllreduceCase> cases = {
      {DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0, true, true},
      {DataType::kFloat16, ReduceOp::kMax, 1.0, 1.0, true, false},
      {DataType::kBFloat16, ReduceOp::kAverage, 0.5, 3.0, true, false},
      {DataType::kInt32, ReduceOp::kSum, 1.0, 1.0, false, false},
      {DataType::kFloat64, ReduceOp::kProduct, 2.0, 1.0, false, true},
      {DataType::kInt8, ReduceOp::kMin, 1.0, 1.0, true, true},
      {DataType::kFloat32, ReduceOp::kAverage, 1.0, 0.25, false, false},
  };
  return cases;
}

/// Element counts: empty, one, odd, and more than the staged path's 64 KiB chunks.
inline const std::vector<size_t>& sizes() {
  static const std::vector<size_t> counts = {0, 1, 7, 33, 1000, 4099, 100003};
  return counts;
}

/// Input element i of `rank`: small multiples of 1/4 (exact in every float format),
/// near 1 for products; integers in [-100, 100).
inline double input_value(int rank, size_t i, DataType dtype, ReduceOp op) {
  const int v = static_cast<int>((static_cast<size_t>(rank) * 7 + i * 13) % 17) - 8;
  if (testing_util::is_integer(dtype))
    return static_cast<double>((rank * 31 + static_cast<int>(i % 1000) * 7) % 200 - 100);
  if (op == ReduceOp::kProduct) return 1.0 + v / 64.0;
  return v / 4.0;
}

inline std::vector<uint8_t> make_input(int rank, size_t count, DataType dtype, ReduceOp op) {
  std::vector<uint8_t> bytes(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) testing_util::store(bytes.data(), i, dtype, input_value(rank, i, dtype, op));
  return bytes;
}

/// A tensor in device memory, written and read through a stream only.
class DeviceTensor {
 public:
  DeviceTensor(Device& device, const std::vector<uint8_t>& contents)
      : device_(&device), buffer_(device, contents.size()), bytes_(contents.size()) {
    auto stream = device.create_stream();
    if (bytes_ > 0) stream->copy(buffer_.data(), contents.data(), bytes_, CopyKind::kHostToDevice);
    stream->synchronize();
  }
  void* data() const { return buffer_.data(); }
  std::vector<uint8_t> read() const {
    std::vector<uint8_t> out(bytes_);
    auto stream = device_->create_stream();
    if (bytes_ > 0) stream->copy(out.data(), buffer_.data(), bytes_, CopyKind::kDeviceToHost);
    stream->synchronize();
    return out;
  }

 private:
  Device* device_;
  DeviceBuffer buffer_;
  size_t bytes_;
};

/// TensorView::device of the two runs of a comparison: explicit (the device's index,
/// kHostMemory) or kDetectDevice (the runtime finds out through the devices' pointer
/// caches). A device tensor with no elements (null data) keeps its index: detection makes
/// a null pointer host memory.
struct ViewDevices {
  bool detect_device = false;  ///< device tensors say kDetectDevice instead of their index
  bool detect_host = false;    ///< host tensors say kDetectDevice instead of kHostMemory
  int device(int index, const void* data) const { return detect_device && data != nullptr ? kDetectDevice : index; }
  int host() const { return detect_host ? kDetectDevice : kHostMemory; }
  std::string describe() const {
    return std::string(detect_device ? "detected" : "explicit") + " device, " +
           (detect_host ? "detected" : "explicit") + " host";
  }
};

/// Submits an allreduce (the suite's API) with `c`'s op and scale factors.
using SubmitAllreduce = std::function<Handle(const std::string& name, const TensorView& input, const TensorView& output,
                                             const AllreduceCase& c)>;

/// Runs every case of allreduce_cases() over sizes() with device tensors (on `device`,
/// index `device_index`) and host tensors, waits, and returns "" when every device result
/// is bit-identical to the host one (and float32 sums equal the exact sum; out-of-place
/// inputs unchanged), else the first difference, naming rank, case, size and element.
/// Collective: every rank of `size` calls it. `prefix` keeps names unique per call.
/// `views` says which runs pass kDetectDevice.
inline std::string compare_device_and_host(Device& device, int device_index, int rank, int size,
                                           const std::string& prefix, const SubmitAllreduce& submit,
                                           ViewDevices views = {}) {
  const auto& counts = sizes();
  for (size_t c = 0; c < allreduce_cases().size(); ++c) {
    const AllreduceCase& test = allreduce_cases()[c];
    const size_t element = dtype_size(test.dtype);
    std::vector<std::vector<uint8_t>> inputs, host_out;
    std::vector<DeviceTensor> device_in, device_out;
    for (size_t n : counts) {
      inputs.push_back(make_input(rank, n, test.dtype, test.op));
      host_out.push_back(test.in_place ? inputs.back() : std::vector<uint8_t>(n * element, 0xAB));
      device_in.emplace_back(device, inputs.back());
      device_out.emplace_back(device, std::vector<uint8_t>(test.in_place ? 0 : n * element, 0xCD));
    }
    std::vector<Handle> handles;
    for (size_t t = 0; t < counts.size(); ++t) {
      const std::vector<int64_t> shape = {static_cast<int64_t>(counts[t])};
      // Device tensors first, then host: with fusion each kind forms its own batch.
      for (int on_device = 1; on_device >= 0; --on_device) {
        const std::string name = prefix + ".c" + std::to_string(c) + (on_device ? ".d" : ".h") + std::to_string(t);
        TensorView in, out;
        if (on_device) {
          in = TensorView{device_in[t].data(), test.dtype, shape, views.device(device_index, device_in[t].data())};
          out = test.in_place ? in
                              : TensorView{device_out[t].data(), test.dtype, shape,
                                           views.device(device_index, device_out[t].data())};
        } else {
          in = TensorView{test.in_place ? host_out[t].data() : inputs[t].data(), test.dtype, shape, views.host()};
          out = TensorView{host_out[t].data(), test.dtype, shape, views.host()};
        }
        handles.push_back(submit(name, in, out, test));
        if (!test.fused) handles.back().wait();
      }
    }
    for (auto& handle : handles) handle.wait();
    for (size_t t = 0; t < counts.size(); ++t) {
      const std::string where = "rank " + std::to_string(rank) + " of " + std::to_string(size) + ", case " +
                                test.describe() + ", " + std::to_string(counts[t]) + " elements, " + views.describe();
      const std::vector<uint8_t> device_result = test.in_place ? device_in[t].read() : device_out[t].read();
      const long differs = testing_util::first_difference(device_result, host_out[t], element);
      if (differs >= 0)
        return where + ": device result differs from the host run at element " + std::to_string(differs) + " (device " +
               std::to_string(testing_util::load(device_result.data(), differs, test.dtype)) + ", host " +
               std::to_string(testing_util::load(host_out[t].data(), differs, test.dtype)) + ")";
      if (!test.in_place && device_in[t].read() != inputs[t]) return where + ": the device input was modified";
      if (test.dtype == DataType::kFloat32 && test.op == ReduceOp::kSum)
        for (size_t i = 0; i < counts[t]; ++i) {
          double exact = 0;
          for (int r = 0; r < size; ++r) exact += input_value(r, i, test.dtype, test.op);
          if (testing_util::load(device_result.data(), i, test.dtype) != exact)
            return where + ": element " + std::to_string(i) + " is " +
                   std::to_string(testing_util::load(device_result.data(), i, test.dtype)) + ", exact sum " +
                   std::to_string(exact);
        }
    }
  }
  return "";
}

}  // namespace concord::testdevice
