// The pieces of concord._core: one bind_<topic> function per python/bind_<topic>.cc, each
// adding its classes and functions to the module (called once, in this order, by
// PYBIND11_MODULE in binding.cc), and the one conversion every binding uses from a tensor as
// the Python side passes it to a TensorView.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "concord/types.h"

void bind_topk(pybind11::module_& m);         ///< topk_exact, select_above, ... (src/sparse/topk.h)
void bind_sparse(pybind11::module_& m);       ///< SparseAllreducer, sparse_allreduce_names
void bind_engine(pybind11::module_& m);       ///< Engine, the dependency engine (src/engine/)
void bind_kvstore(pybind11::module_& m);      ///< KVStore over the engine (src/kvstore/)
void bind_collectives(pybind11::module_& m);  ///< reducescatter, alltoall, grouped allgather, barrier, join
void bind_output_pool(pybind11::module_& m);  ///< OutputPool (concord.torch.output_pool)
void bind_p2p(pybind11::module_& m);          ///< P2pChannel, P2pRequest (the c10d backend's send/recv)
void bind_world(pybind11::module_& m);        ///< Store, StoreServer, leave_world, abort_world (elastic training)

namespace concord {

/// The TensorView of a tensor as Python passes it: `data` its address (torch's data_ptr()
/// or numpy's ctypes.data; not owned, it must outlive the collective), `dtype` a name
/// dtype_from_name() knows ("float32", "bfloat16", ...; InvalidArgument, naming it,
/// otherwise), `shape` its dimensions outermost first ({} for a scalar) and `device`
/// kHostMemory or the index of the device holding it (TensorView::device).
inline TensorView tensor_view(uintptr_t data, const std::string& dtype, const std::vector<int64_t>& shape,
                              int device = kHostMemory) {
  return TensorView{reinterpret_cast<void*>(data), dtype_from_name(dtype), shape, device};
}

}  // namespace concord
