// concord._core bindings of the sparse allreduces (src/sparse/sparse_allreduce.h: Ok-Topk
// and its baselines; spec ../shared/specs/oktopk.md). Thin: a SparseAllreducer owns its own
// MpiCommunicator (a dup of MPI_COMM_WORLD: collective, so every rank constructs its
// allreducers in the same order) and the algorithm from the registry; allreduce() takes a
// float32 numpy accumulator, leaves the residual in it and returns U in COO form. The GIL
// is released while communicating.
#include <mpi.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>

#include "common/enforce.h"
#include "concord/concord.h"
#include "sparse/sparse_allreduce.h"
#include "transport/mpi_communicator.h"

namespace py = pybind11;
using namespace concord;

namespace {

// These calls use MPI from the Python thread: while the runtime's background thread also
// uses MPI, that needs MPI_THREAD_MULTIPLE.
void require_thread_level(const char* what) {
  if (!is_initialized()) return;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  CONCORD_ENFORCE(provided == MPI_THREAD_MULTIPLE, StateError, what,
                  ": MPI calls from the Python thread while concord.init() is active need "
                  "MPI_THREAD_MULTIPLE, but MPI provides level ",
                  provided);
}

class SparseAllreducer {
 public:
  SparseAllreducer(const std::string& name, const sparse::SparseOptions& options) {
    ensure_mpi_initialized();
    require_thread_level("SparseAllreducer");
    comm_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    algorithm_ = sparse::make_sparse_allreduce(name, *comm_, options);
  }

  std::tuple<py::array_t<int64_t>, py::array_t<float>> allreduce(py::array acc) {
    CONCORD_ENFORCE(acc.dtype().is(py::dtype::of<float>()), InvalidArgument,
                    "SparseAllreducer.allreduce: acc must be a float32 array, got ", std::string(py::str(acc.dtype())));
    CONCORD_ENFORCE((acc.flags() & py::array::c_style) != 0 && acc.writeable(), InvalidArgument,
                    "SparseAllreducer.allreduce: acc must be C-contiguous and writeable (it receives the residual)");
    require_thread_level("SparseAllreducer.allreduce");
    auto* data = static_cast<float*>(acc.mutable_data());
    const auto n = static_cast<int64_t>(acc.size());
    {
      py::gil_scoped_release release;
      algorithm_->allreduce(data, n, result_);
    }
    py::array_t<int64_t> indices(static_cast<py::ssize_t>(result_.indices.size()));
    py::array_t<float> values(static_cast<py::ssize_t>(result_.values.size()));
    if (!result_.indices.empty()) {
      std::memcpy(indices.mutable_data(), result_.indices.data(), result_.indices.size() * sizeof(int64_t));
      std::memcpy(values.mutable_data(), result_.values.data(), result_.values.size() * sizeof(float));
    }
    return {indices, values};
  }

  std::string name() const { return algorithm_->name(); }

 private:
  std::unique_ptr<MpiCommunicator> comm_;
  std::unique_ptr<sparse::SparseAllreduce> algorithm_;
  sparse::SparseResult result_;
};

sparse::ThresholdFeedback feedback(const std::tuple<double, double, double>& t) {
  return {std::get<0>(t), std::get<1>(t), std::get<2>(t)};
}

}  // namespace

void bind_sparse(py::module_& m) {
  m.def("sparse_allreduce_names", &sparse::sparse_allreduce_names,
        "Names of every sparse allreduce (\"oktopk\" first), in registry order.");
  const sparse::SparseOptions d;
  py::class_<SparseAllreducer>(m, "SparseAllreducer",
                               "One sparse allreduce (Ok-Topk or a baseline) on its own duplicate of "
                               "MPI_COMM_WORLD; keeps thresholds, regions and the call counter across calls.")
      .def(py::init([](const std::string& name, double density, int tau, int tau_local, int tau_global,
                       int bucket_steps, double balance_factor, bool strict, bool exact,
                       std::tuple<double, double, double> local_feedback,
                       std::tuple<double, double, double> global_feedback, int gaussian_corrections) {
             sparse::SparseOptions o;
             o.density = density;
             o.tau = tau;
             o.tau_local = tau_local;
             o.tau_global = tau_global;
             o.bucket_steps = bucket_steps;
             o.balance_factor = balance_factor;
             o.strict = strict;
             o.exact = exact;
             o.local_feedback = feedback(local_feedback);
             o.global_feedback = feedback(global_feedback);
             o.gaussian_corrections = gaussian_corrections;
             return std::make_unique<SparseAllreducer>(name, o);
           }),
           py::arg("name") = "oktopk", py::arg("density") = d.density, py::arg("tau") = d.tau,
           py::arg("tau_local") = d.tau_local, py::arg("tau_global") = d.tau_global,
           py::arg("bucket_steps") = d.bucket_steps, py::arg("balance_factor") = d.balance_factor,
           py::arg("strict") = d.strict, py::arg("exact") = d.exact,
           py::arg("local_feedback") = std::make_tuple(d.local_feedback.lo, d.local_feedback.hi, d.local_feedback.factor),
           py::arg("global_feedback") =
               std::make_tuple(d.global_feedback.lo, d.global_feedback.hi, d.global_feedback.factor),
           py::arg("gaussian_corrections") = d.gaussian_corrections,
           "Collective over MPI_COMM_WORLD (every rank, same order). Options as "
           "concord::sparse::SparseOptions; feedbacks are (lo, hi, factor). Raises "
           "InvalidArgumentError for an unknown name or invalid options, StateError when "
           "concord.init() is active and MPI lacks MPI_THREAD_MULTIPLE.")
      .def("allreduce", &SparseAllreducer::allreduce, py::arg("acc"),
           "Sparse allreduce of acc (float32, C-contiguous, writeable; flattened, n elements, the "
           "same n on every rank): returns (indices int64 ascending, values float32) of U, the "
           "averaged sparse result, identical on every rank, and leaves the residual in acc. "
           "Collective, blocking. Raises MismatchError when ranks pass different n, "
           "InvalidArgumentError for a wrong dtype/layout, CommError on transport failure.")
      .def_property_readonly("name", &SparseAllreducer::name);
}
