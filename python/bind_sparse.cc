// concord._core.SparseAllreducer: the sparse allreduces of src/sparse (Ok-Topk and its
// baselines; Li & Hoefler, "Near-Optimal Sparse Allreduce for Distributed Deep Learning",
// PPoPP 2022; docs/algorithms.md) for Python. Each object owns its own duplicate of the
// process's transport world (transport/transport_world.h: MPI or UCX), so its traffic
// never meets the runtime's or the application's, and one
// SparseAllreduce instance (thresholds, regions and call counter persist across calls).
// allreduce() blocks with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>

#include "common/enforce.h"
#include "concord/concord.h"
#include "python/bindings.h"
#include "sparse/sparse_allreduce.h"
#include "transport/transport_world.h"

namespace py = pybind11;

namespace concord {
namespace {

/// (lo, hi, factor) of a threshold feedback rule.
sparse::ThresholdFeedback feedback_from(const py::handle& value, const std::string& key) {
  auto parts = value.cast<std::tuple<double, double, double>>();
  sparse::ThresholdFeedback feedback;
  feedback.lo = std::get<0>(parts);
  feedback.hi = std::get<1>(parts);
  feedback.factor = std::get<2>(parts);
  CONCORD_ENFORCE(feedback.lo > 0 && feedback.lo <= feedback.hi && feedback.factor >= 1.0, InvalidArgument,
                  "SparseAllreducer: ", key, " must be (lo, hi, factor) with 0 < lo <= hi and factor >= 1");
  return feedback;
}

/// SparseOptions from keyword arguments named like its fields. Throws InvalidArgument for
/// an unknown keyword (listing the known ones).
sparse::SparseOptions options_from(const py::kwargs& kwargs) {
  sparse::SparseOptions options;
  for (const auto& [key_handle, value] : kwargs) {
    const auto key = key_handle.cast<std::string>();
    if (key == "density") options.density = value.cast<double>();
    else if (key == "tau") options.tau = value.cast<int>();
    else if (key == "tau_local") options.tau_local = value.cast<int>();
    else if (key == "tau_global") options.tau_global = value.cast<int>();
    else if (key == "bucket_steps") options.bucket_steps = value.cast<int>();
    else if (key == "balance_factor") options.balance_factor = value.cast<double>();
    else if (key == "max_overshoot") options.max_overshoot = value.cast<double>();
    else if (key == "strict") options.strict = value.cast<bool>();
    else if (key == "exact") options.exact = value.cast<bool>();
    else if (key == "local_feedback") options.local_feedback = feedback_from(value, key);
    else if (key == "global_feedback") options.global_feedback = feedback_from(value, key);
    else if (key == "gaussian_corrections") options.gaussian_corrections = value.cast<int>();
    else
      CONCORD_THROW(InvalidArgument, "SparseAllreducer: unknown option '", key,
                    "'; known: density, tau, tau_local, tau_global, bucket_steps, balance_factor, max_overshoot, "
                    "strict, exact, local_feedback, global_feedback, gaussian_corrections");
  }
  return options;
}

/// The float32 buffer behind `acc`: a C-contiguous writable numpy array, or a contiguous
/// CPU torch tensor (anything with data_ptr(), dtype, is_contiguous(), numel()).
std::pair<float*, int64_t> float32_buffer(const py::object& acc) {
  if (py::isinstance<py::array>(acc)) {
    auto array = acc.cast<py::array>();
    CONCORD_ENFORCE(array.dtype().is(py::dtype::of<float>()), InvalidArgument,
                    "SparseAllreducer.allreduce: acc must be float32, got ",
                    py::str(array.dtype()).cast<std::string>());
    CONCORD_ENFORCE(array.flags() & py::array::c_style, InvalidArgument,
                    "SparseAllreducer.allreduce: acc must be C-contiguous");
    CONCORD_ENFORCE(array.writeable(), InvalidArgument, "SparseAllreducer.allreduce: acc must be writable");
    return {static_cast<float*>(array.mutable_data()), static_cast<int64_t>(array.size())};
  }
  if (py::hasattr(acc, "data_ptr")) {
    const auto dtype = py::str(acc.attr("dtype")).cast<std::string>();
    CONCORD_ENFORCE(dtype == "torch.float32", InvalidArgument, "SparseAllreducer.allreduce: acc must be float32, got ",
                    dtype);
    CONCORD_ENFORCE(acc.attr("is_contiguous")().cast<bool>(), InvalidArgument,
                    "SparseAllreducer.allreduce: acc must be contiguous");
    const auto device = py::str(acc.attr("device")).cast<std::string>();
    CONCORD_ENFORCE(device == "cpu", InvalidArgument, "SparseAllreducer.allreduce: acc must be a CPU tensor, got ",
                    device);
    return {reinterpret_cast<float*>(acc.attr("data_ptr")().cast<uintptr_t>()), acc.attr("numel")().cast<int64_t>()};
  }
  CONCORD_THROW(InvalidArgument, "SparseAllreducer.allreduce: acc must be a float32 numpy array or torch tensor");
}

/// One sparse allreduce on its own communicator (see the file comment).
class SparseAllreducer {
 public:
  SparseAllreducer(const std::string& name, const sparse::SparseOptions& options) {
    TransportWorld& world = process_world();
    if (is_initialized()) world.require_threads("SparseAllreducer");
    comm_ = world.duplicate("sparse");
    algorithm_ = sparse::make_sparse_allreduce(name, *comm_, options);
  }

  /// Reduces `acc` (in place: it becomes the residual); returns U as (indices, values).
  py::tuple allreduce(const py::object& acc) {
    auto [data, n] = float32_buffer(acc);
    sparse::SparseResult result;
    {
      py::gil_scoped_release release;
      if (is_initialized()) process_world().require_threads("SparseAllreducer.allreduce");
      algorithm_->allreduce(data, n, result);
    }
    py::array_t<int64_t> indices(static_cast<py::ssize_t>(result.indices.size()), result.indices.data());
    py::array_t<float> values(static_cast<py::ssize_t>(result.values.size()), result.values.data());
    return py::make_tuple(indices, values);
  }

  const char* name() const { return algorithm_->name(); }
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  uint64_t bytes_sent() const { return comm_->counters().bytes_sent; }
  uint64_t messages_sent() const { return comm_->counters().messages_sent; }

 private:
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<sparse::SparseAllreduce> algorithm_;
};

}  // namespace
}  // namespace concord

void bind_sparse(py::module_& m) {
  using concord::SparseAllreducer;
  py::class_<SparseAllreducer>(m, "SparseAllreducer",
                               "SparseAllreducer(name, **options): a sparse allreduce (Ok-Topk or a "
                               "baseline) on its own duplicate of the transport world. Collective.")
      .def(py::init([](const std::string& name, const py::kwargs& kwargs) {
             auto options = concord::options_from(kwargs);
             py::gil_scoped_release release;
             return std::make_unique<SparseAllreducer>(name, options);
           }),
           py::arg("name") = "oktopk")
      .def("allreduce", &SparseAllreducer::allreduce, py::arg("acc"),
           "allreduce(acc) -> (indices int64, values float32): acc (float32, contiguous, n "
           "elements) becomes the residual; U = values at indices (ascending), already / size.")
      .def_property_readonly("name", &SparseAllreducer::name)
      .def_property_readonly("rank", &SparseAllreducer::rank)
      .def_property_readonly("size", &SparseAllreducer::size)
      .def("bytes_sent", &SparseAllreducer::bytes_sent, "bytes this rank sent through this allreducer")
      .def("messages_sent", &SparseAllreducer::messages_sent,
           "messages this rank sent through this allreducer (zero-byte ones included)")
      .def_static("names", &concord::sparse::sparse_allreduce_names,
                  "names of every sparse allreduce (\"oktopk\" first), in registry order");
  m.def("sparse_allreduce_names", &concord::sparse::sparse_allreduce_names,
        "names of every sparse allreduce (\"oktopk\" first), in registry order");
}
