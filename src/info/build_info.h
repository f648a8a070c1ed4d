// What this build of Concord offers, in one place: the version, every CONCORD_* setting
// (src/common/config.cc) with its default and current value, every registered algorithm
// of every collective (src/algorithms/registry.cc, the device-buffer and sparse
// registries), the cost-model constants in effect (CostParams::from_env) and the CUDA
// status. concord-info prints it (tools/cli/concord_info.cc), concord._core.build_info_json()
// and build_info_text() give it to Python (the pip-installed concord-info,
// python/concord/info.py), and scripts/docs_lists.py writes the lists of README.md and
// docs/ from the JSON form, so the docs cannot drift from the code (test docs.lists).
//
// The JSON document (an object):
//   "version":    "X.Y.Z" (project(Concord VERSION) in CMakeLists.txt)
//   "settings":   [{"name", "default", "value", "type", "shared", "doc"}] in table order;
//                 "value" as the environment sets it now, "shared" true when every rank
//                 adopts rank 0's value
//   "collectives": [{"collective", "setting", "algorithms": [{"name", "description"}]}] in
//                 registry order; "setting" is the CONCORD_*_ALGORITHM variable that forces
//                 one, or null
//   "transport":  {"ucx_built", "choice"}: whether this build has the UCX transport, and the
//                 transport init() would take here and why (CONCORD_TRANSPORT, launcher)
//   "cost_model": {"alpha", "beta", ...} seconds and seconds per byte (CostParams)
//   "mpi_cuda_aware": {"supported", "reason"} whether MPI takes CUDA device pointers
//                 (mpi_cuda_support(): the run-time answer once MPI is initialised, the
//                 build-time one before, saying which)
//   "nccl":       {"built", "loaded", "version", "summary"} (nccl::library(): dlopen of libnccl)
//   "cuda":       {"built", "devices", "reason", "summary"}
#pragma once

#include <string>

namespace concord {

/// The JSON document described above, indented by `indent` spaces (-1: one line). Reads
/// the environment (current values, cost-model file); throws InvalidArgument when the
/// cost-model file or a CONCORD_COST_* value is malformed.
std::string build_info_json(int indent = 2);

/// concord-info's text form of the same document: one entry per setting (value, default,
/// type, doc), one block per collective's algorithms, the cost model, the "MPI CUDA-aware:"
/// line, the NCCL line and, last, the CUDA line.
std::string build_info_text();

}  // namespace concord
