// concord._core bindings of reduce-scatter, alltoall, grouped allgather, barrier and join
// (include/concord/concord.h): pointer + dtype name + shape in, Handle out; the GIL is
// released around every call that may block.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "concord/concord.h"
#include "python/bindings.h"

namespace py = pybind11;
using namespace concord;

namespace {

// The device of member i: `devices` is empty (host memory) or has one entry per member.
int member_device(const std::vector<int>& devices, size_t i, size_t n, const char* what) {
  if (devices.empty()) return kHostMemory;
  if (devices.size() != n)
    throw InvalidArgument(std::string(what) + ": devices must be empty (host memory) or one per member");
  return devices[i];
}

ReducescatterOptions scatter_options(const std::string& what, int op, double prescale, double postscale,
                                     int process_set) {
  if (op != static_cast<int>(ReduceOp::kSum) && op != static_cast<int>(ReduceOp::kAverage))
    throw InvalidArgument(what + ": op " + std::to_string(op) + " is not supported; use Sum or Average");
  return ReducescatterOptions{static_cast<ReduceOp>(op), prescale, postscale, process_set};
}

}  // namespace

void bind_collectives(py::module_& m) {
  m.def(
      "reducescatter_async",
      [](const std::string& name, uintptr_t input, uintptr_t output, const std::string& dtype,
         const std::vector<int64_t>& shape, const std::vector<int64_t>& output_shape, int op, double prescale,
         double postscale, int process_set, int device) {
        return reducescatter_async(
            name, tensor_view(input, dtype, shape, device), tensor_view(output, dtype, output_shape, device),
            scatter_options("reducescatter of tensor '" + name + "'", op, prescale, postscale, process_set));
      },
      py::arg("name"), py::arg("input"), py::arg("output"), py::arg("dtype"), py::arg("shape"), py::arg("output_shape"),
      py::arg("op"), py::arg("prescale_factor"), py::arg("postscale_factor"), py::arg("process_set") = 0,
      py::arg("device") = kHostMemory, py::call_guard<py::gil_scoped_release>());
  m.def(
      "grouped_reducescatter_async",
      [](const std::vector<std::string>& names, const std::vector<uintptr_t>& inputs,
         const std::vector<uintptr_t>& outputs, const std::vector<std::string>& dtypes,
         const std::vector<std::vector<int64_t>>& shapes, const std::vector<std::vector<int64_t>>& output_shapes,
         int op, double prescale, double postscale, int process_set, const std::vector<int>& devices) {
        const size_t n = names.size();
        if (inputs.size() != n || outputs.size() != n || dtypes.size() != n || shapes.size() != n ||
            output_shapes.size() != n)
          throw InvalidArgument("grouped_reducescatter: names, inputs, outputs, dtypes and shapes differ in length");
        std::vector<TensorView> in, out;
        for (size_t i = 0; i < n; ++i) {
          const int device = member_device(devices, i, n, "grouped_reducescatter");
          in.push_back(tensor_view(inputs[i], dtypes[i], shapes[i], device));
          out.push_back(tensor_view(outputs[i], dtypes[i], output_shapes[i], device));
        }
        return grouped_reducescatter_async(
            names, in, out, scatter_options("grouped_reducescatter", op, prescale, postscale, process_set));
      },
      py::arg("names"), py::arg("inputs"), py::arg("outputs"), py::arg("dtypes"), py::arg("shapes"),
      py::arg("output_shapes"), py::arg("op"), py::arg("prescale_factor"), py::arg("postscale_factor"),
      py::arg("process_set") = 0, py::arg("devices") = std::vector<int>{}, py::call_guard<py::gil_scoped_release>());
  m.def(
      "grouped_allgather_async",
      [](const std::vector<std::string>& names, const std::vector<uintptr_t>& inputs,
         const std::vector<std::string>& dtypes, const std::vector<std::vector<int64_t>>& shapes, int process_set,
         const std::vector<int>& devices) {
        const size_t n = names.size();
        if (inputs.size() != n || dtypes.size() != n || shapes.size() != n)
          throw InvalidArgument("grouped_allgather: names, inputs, dtypes and shapes differ in length");
        std::vector<TensorView> in;
        for (size_t i = 0; i < n; ++i)
          in.push_back(tensor_view(inputs[i], dtypes[i], shapes[i], member_device(devices, i, n, "grouped_allgather")));
        return grouped_allgather_async(names, in, AllgatherOptions{process_set});
      },
      py::arg("names"), py::arg("inputs"), py::arg("dtypes"), py::arg("shapes"), py::arg("process_set") = 0,
      py::arg("devices") = std::vector<int>{}, py::call_guard<py::gil_scoped_release>());
  m.def(
      "alltoall_async",
      [](const std::string& name, uintptr_t input, const std::string& dtype, const std::vector<int64_t>& shape,
         const std::vector<int64_t>& splits, int process_set, int device) {
        return alltoall_async(name, tensor_view(input, dtype, shape, device), AlltoallOptions{splits, process_set});
      },
      py::arg("name"), py::arg("input"), py::arg("dtype"), py::arg("shape"), py::arg("splits"),
      py::arg("process_set") = 0, py::arg("device") = kHostMemory, py::call_guard<py::gil_scoped_release>());
  m.def("reducescatter_rows", &reducescatter_rows, py::arg("rows"), py::arg("ranks"), py::arg("rank"));
  m.def("barrier_async", &barrier_async, py::arg("process_set") = 0, py::call_guard<py::gil_scoped_release>());
  m.def("barrier", &barrier, py::arg("process_set") = 0, py::call_guard<py::gil_scoped_release>());
  m.def("add_process_set", &add_process_set, py::arg("ranks"), py::call_guard<py::gil_scoped_release>());
  m.def("form_process_set", &form_process_set, py::arg("ranks"), py::arg("name"),
        py::call_guard<py::gil_scoped_release>());
  m.def("remove_process_set", &remove_process_set, py::arg("id"), py::call_guard<py::gil_scoped_release>());
  m.def("process_set_ids", &process_set_ids);
  m.def("process_set_ranks", &process_set_ranks, py::arg("id"));
  m.def("process_set_rank", &process_set_rank, py::arg("id"));
  m.def("join_async", &join_async, py::call_guard<py::gil_scoped_release>());
  m.def("join", &join, py::call_guard<py::gil_scoped_release>());
}
