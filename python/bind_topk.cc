// concord._core bindings of the top-k selection functions (src/sparse/topk.h; Ok-Topk's
// Phase 0). Thin: numpy float32 arrays in, int64 index arrays
// out; the GIL is released while selecting.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <vector>

#include "python/bindings.h"
#include "sparse/topk.h"

namespace py = pybind11;

namespace {

// A C-contiguous float32 array (float32 input that is not contiguous is copied; any other
// dtype is refused with TypeError: no silent narrowing of float64).
using Float32Array = py::array_t<float, py::array::c_style>;

py::array_t<int64_t> to_numpy(const std::vector<int64_t>& indices) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(indices.size()));
  if (!indices.empty()) std::memcpy(out.mutable_data(), indices.data(), indices.size() * sizeof(int64_t));
  return out;
}

}  // namespace

void bind_topk(py::module_& m) {
  m.def(
      "topk_exact",
      [](const Float32Array& x, int64_t k) {
        std::vector<int64_t> indices;
        {
          py::gil_scoped_release release;
          concord::sparse::topk_exact(x.data(), static_cast<int64_t>(x.size()), k, indices);
        }
        return to_numpy(indices);
      },
      py::arg("x"), py::arg("k"),
      "Indices (int64, ascending) of the k entries of largest |x| of a float32 array (flattened); "
      "ties keep the lower index; min(k, x.size) entries. Raises InvalidArgumentError for k < 0.");
  m.def(
      "select_above",
      [](const Float32Array& x, float threshold, bool strict) {
        std::vector<int64_t> indices;
        {
          py::gil_scoped_release release;
          concord::sparse::select_above(x.data(), static_cast<int64_t>(x.size()), threshold, strict, indices);
        }
        return to_numpy(indices);
      },
      py::arg("x"), py::arg("threshold"), py::arg("strict") = false,
      "Indices (int64, ascending) j of a float32 array (flattened) with |x[j]| >= threshold "
      "(> when strict).");
  m.def(
      "kth_largest_magnitude",
      [](const Float32Array& x, int64_t k) {
        py::gil_scoped_release release;
        return concord::sparse::kth_largest_magnitude(x.data(), static_cast<int64_t>(x.size()), k);
      },
      py::arg("x"), py::arg("k"),
      "The k-th largest |x| of a float32 array (1 <= k <= x.size, else InvalidArgumentError).");
  m.def(
      "gaussian_threshold",
      [](const Float32Array& x, double density, int corrections) {
        py::gil_scoped_release release;
        return concord::sparse::gaussian_threshold(x.data(), static_cast<int64_t>(x.size()), density, corrections);
      },
      py::arg("x"), py::arg("density"), py::arg("corrections") = 3,
      "Gaussiank's threshold estimate (mean + Phi^-1(1 - density/2) * std, then up to `corrections` "
      "corrections by 1.02) of a non-empty float32 array.");
}
