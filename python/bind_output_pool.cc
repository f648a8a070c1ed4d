// concord._core.OutputPool / OutputBlock: the runtime's pool of result memory
// (runtime/output_pool.h) for concord.torch.output_pool. A block has Python's buffer
// protocol (writable bytes), so torch.frombuffer(block, dtype=...) makes the result tensor
// in one call; the tensor's storage holds the block, which returns to the pool when the
// storage, and every view of it, is gone.
#include <pybind11/pybind11.h>

#include "python/bindings.h"
#include "runtime/output_pool.h"

namespace py = pybind11;

void bind_output_pool(py::module_& m) {
  using concord::OutputBlock;
  using concord::OutputPool;
  py::class_<OutputBlock>(m, "OutputBlock", py::buffer_protocol())
      .def_buffer([](OutputBlock& block) {
        return py::buffer_info(block.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(block.size())}, {py::ssize_t{1}});
      })
      .def_property_readonly(
          "address", [](const OutputBlock& block) { return reinterpret_cast<uintptr_t>(block.data()); },
          "The block's first byte (an integer address, as torch.Tensor.data_ptr()).")
      .def("__len__", &OutputBlock::size, "The block's size in bytes.");

  py::class_<OutputPool>(m, "OutputPool")
      .def(py::init<int64_t>(), py::arg("capacity_bytes"),
           "Keeps at most capacity_bytes bytes of released blocks (0: none). InvalidArgumentError if < 0.")
      .def("take", &OutputPool::take, py::arg("nbytes"),
           "A block of exactly nbytes bytes: the most recently released one of that size, else new "
           "memory (MemoryError if none). Contents unspecified.")
      .def_property_readonly("free_bytes", &OutputPool::free_bytes, "Bytes of released blocks kept for reuse.")
      .def_property_readonly("capacity_bytes", &OutputPool::capacity_bytes,
                             "The most bytes of released blocks kept (the constructor's argument).")
      .def("clear", &OutputPool::clear, "Frees every kept block.");
}
