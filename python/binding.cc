// concord._core: the thin pybind11 binding. It converts Python values to TensorViews and
// releases the GIL around every call that may block or communicate; all logic lives in the
// C++ runtime or in the plain Python modules of the concord package.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/timeline.h"
#include "concord/concord.h"
#include "concord/version.h"
#include "info/build_info.h"
#include "python/bindings.h"

namespace py = pybind11;
using namespace concord;

PYBIND11_MODULE(_core, m) {
  m.doc() = "Concord C++ runtime (see concord/__init__.py for the documented Python API)";
  m.attr("__version__") = CONCORD_VERSION_STRING;  // project(Concord VERSION ...) in CMakeLists.txt

  auto base = py::register_exception<Error>(m, "ConcordError", PyExc_RuntimeError);
  // A bad argument is also a ValueError, as Horovod users catch it.
  py::register_exception<InvalidArgument>(m, "InvalidArgumentError",
                                          py::make_tuple(base, py::handle(PyExc_ValueError)));
  py::register_exception<MismatchError>(m, "MismatchError", base.ptr());
  py::register_exception<StateError>(m, "StateError", base.ptr());
  py::register_exception<CommError>(m, "CommError", base.ptr());
  py::register_exception<InternalError>(m, "InternalError", base.ptr());

  m.def(
      "init",
      [](double cycle_time_ms, int64_t fusion_threshold_bytes, const std::vector<std::vector<int>>& process_sets) {
        init(InitOptions{cycle_time_ms, fusion_threshold_bytes, process_sets});
      },
      py::arg("cycle_time_ms") = -1.0, py::arg("fusion_threshold_bytes") = -1,
      py::arg("process_sets") = std::vector<std::vector<int>>{}, py::call_guard<py::gil_scoped_release>());
  m.def("shutdown", &shutdown, py::call_guard<py::gil_scoped_release>());
  m.def("shutdown_at_exit", &shutdown_at_exit, py::call_guard<py::gil_scoped_release>());
  m.def("is_initialized", &is_initialized);
  m.def("rank", &rank);
  m.def("size", &size);
  m.def("local_rank", &local_rank);
  m.def("local_size", &local_size);
  m.def("cross_rank", &cross_rank);
  m.def("cross_size", &cross_size);
  m.def("mpi_threads_supported", &mpi_threads_supported);

  py::class_<Handle>(m, "Handle")
      .def("poll", &Handle::poll)
      .def("wait", &Handle::wait, py::call_guard<py::gil_scoped_release>())
      .def("wait_for", &Handle::wait_for, py::arg("seconds"), py::call_guard<py::gil_scoped_release>())
      .def("output_shape", &Handle::output_shape)
      .def("received_splits", &Handle::received_splits)
      .def("output_nbytes", &Handle::output_nbytes)
      .def("output_device", &Handle::output_device)
      .def(
          "copy_output_to",
          [](const Handle& h, uintptr_t destination) { h.copy_output_to(reinterpret_cast<void*>(destination)); },
          py::call_guard<py::gil_scoped_release>());

  m.def(
      "allreduce_async",
      [](const std::string& name, uintptr_t input, uintptr_t output, const std::string& dtype,
         const std::vector<int64_t>& shape, int op, double prescale, double postscale, int process_set, int device) {
        if (op < 0 || op > static_cast<int>(ReduceOp::kAdasum))
          throw InvalidArgument("allreduce of tensor '" + name + "': unknown reduce op " + std::to_string(op));
        return allreduce_async(name, tensor_view(input, dtype, shape, device),
                               tensor_view(output, dtype, shape, device),
                               AllreduceOptions{static_cast<ReduceOp>(op), prescale, postscale, process_set});
      },
      py::arg("name"), py::arg("input"), py::arg("output"), py::arg("dtype"), py::arg("shape"), py::arg("op"),
      py::arg("prescale_factor"), py::arg("postscale_factor"), py::arg("process_set") = 0,
      py::arg("device") = kHostMemory, py::call_guard<py::gil_scoped_release>());
  m.def(
      "allgather_async",
      [](const std::string& name, uintptr_t input, const std::string& dtype, const std::vector<int64_t>& shape,
         int process_set, int device) {
        return allgather_async(name, tensor_view(input, dtype, shape, device), AllgatherOptions{process_set});
      },
      py::arg("name"), py::arg("input"), py::arg("dtype"), py::arg("shape"), py::arg("process_set") = 0,
      py::arg("device") = kHostMemory, py::call_guard<py::gil_scoped_release>());
  m.def(
      "broadcast_async",
      [](const std::string& name, uintptr_t tensor, const std::string& dtype, const std::vector<int64_t>& shape,
         int root, int process_set, int device) {
        return broadcast_async(name, tensor_view(tensor, dtype, shape, device), BroadcastOptions{root, process_set});
      },
      py::arg("name"), py::arg("tensor"), py::arg("dtype"), py::arg("shape"), py::arg("root"),
      py::arg("process_set") = 0, py::arg("device") = kHostMemory, py::call_guard<py::gil_scoped_release>());

  m.def(
      "grouped_allreduce_async",
      [](const std::vector<std::string>& names, const std::vector<uintptr_t>& inputs,
         const std::vector<uintptr_t>& outputs, const std::vector<std::string>& dtypes,
         const std::vector<std::vector<int64_t>>& shapes, int op, double prescale, double postscale, int process_set,
         const std::vector<int>& devices) {
        if (op < 0 || op > static_cast<int>(ReduceOp::kAdasum))
          throw InvalidArgument("grouped_allreduce: unknown reduce op " + std::to_string(op));
        if (inputs.size() != names.size() || outputs.size() != names.size() || dtypes.size() != names.size() ||
            shapes.size() != names.size())
          throw InvalidArgument("grouped_allreduce: names, inputs, outputs, dtypes and shapes differ in length");
        if (!devices.empty() && devices.size() != names.size())
          throw InvalidArgument("grouped_allreduce: devices must be empty (host memory) or one per member");
        std::vector<TensorView> in, out;
        for (size_t i = 0; i < names.size(); ++i) {
          const int device = devices.empty() ? kHostMemory : devices[i];
          in.push_back(tensor_view(inputs[i], dtypes[i], shapes[i], device));
          out.push_back(tensor_view(outputs[i], dtypes[i], shapes[i], device));
        }
        return grouped_allreduce_async(names, in, out,
                                       AllreduceOptions{static_cast<ReduceOp>(op), prescale, postscale, process_set});
      },
      py::arg("names"), py::arg("inputs"), py::arg("outputs"), py::arg("dtypes"), py::arg("shapes"), py::arg("op"),
      py::arg("prescale_factor"), py::arg("postscale_factor"), py::arg("process_set") = 0,
      py::arg("devices") = std::vector<int>{}, py::call_guard<py::gil_scoped_release>());
  m.def("start_timeline", &start_timeline, py::arg("path"), py::call_guard<py::gil_scoped_release>());
  m.def("stop_timeline", &stop_timeline, py::call_guard<py::gil_scoped_release>());
  m.def("repair_timeline", &Timeline::repair, py::arg("text"));
  m.def("coordination_stats", [] {
    const CoordinationStats s = coordination_stats();
    return py::dict(py::arg("cycles") = s.cycles, py::arg("coordinator_rounds") = s.coordinator_rounds,
                    py::arg("cache_hits") = s.cache_hits, py::arg("cache_misses") = s.cache_misses,
                    py::arg("invalidations") = s.invalidations, py::arg("evictions") = s.evictions,
                    py::arg("stall_checks") = s.stall_checks);
  });

  m.def("build_info_json", &build_info_json, py::arg("indent") = 2,
        "concord-info --json: the version, settings, algorithms, cost model and CUDA status as JSON text");
  m.def("build_info_text", &build_info_text, "concord-info's text: what build_info_json() holds, as a table");

  m.attr("SUM") = static_cast<int>(ReduceOp::kSum);
  m.attr("AVERAGE") = static_cast<int>(ReduceOp::kAverage);
  m.attr("MIN") = static_cast<int>(ReduceOp::kMin);
  m.attr("MAX") = static_cast<int>(ReduceOp::kMax);
  m.attr("PRODUCT") = static_cast<int>(ReduceOp::kProduct);
  m.attr("ADASUM") = static_cast<int>(ReduceOp::kAdasum);

  bind_topk(m);
  bind_sparse(m);
  bind_engine(m);
  bind_kvstore(m);
  bind_collectives(m);
  bind_output_pool(m);
  bind_world(m);
  bind_p2p(m);
}
