// concord._core.KVStore: the binding of the KVStore (src/kvstore/kvstore.h) for Python. Each
// object owns a dependency engine, a world communicator (make_world: a duplicate of the
// process's transport world, collective) and the store. Tensors arrive as (address, dtype name,
// shape); every call that may block or communicate releases the GIL. The documented
// wrapper is python/concord/kvstore.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "common/enforce.h"
#include "engine/engine.h"
#include "kvstore/kvstore.h"
#include "kvstore/kvstore_world.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace concord {
namespace {

// The engine, world and store of one Python KVStore, destroyed in reverse order by close().
class PyKVStore {
 public:
  PyKVStore(const std::string& type, int op, int communicators, int outstanding, const std::string& algorithm) {
    CONCORD_ENFORCE(op >= 0 && op <= static_cast<int>(ReduceOp::kProduct), InvalidArgument,
                    "KVStore: unknown reduce op ", op);
    kvstore::KVStoreOptions options;
    options.type = kvstore::kvstore_type_from_name(type);
    options.op = static_cast<ReduceOp>(op);
    options.communicators = communicators;
    options.outstanding = outstanding;
    options.algorithm = algorithm;
    options.cost_params = CostParams::from_env();
    engine_ = std::make_unique<engine::Engine>(1, 1);
    world_ = kvstore::make_world(options.type);
    store_ = std::make_unique<kvstore::KVStore>(*engine_, *world_, options);
  }

  kvstore::KVStore& store() {
    CONCORD_ENFORCE(store_ != nullptr, StateError, "KVStore used after close()");
    return *store_;
  }

  // Waits for the store's collectives and frees the communicators (before the transport shuts down).
  void close() {
    store_.reset();
    world_.reset();
    engine_.reset();
  }

 private:
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<Communicator> world_;
  std::unique_ptr<kvstore::KVStore> store_;
};

}  // namespace
}  // namespace concord

void bind_kvstore(py::module_& m) {
  using concord::PyKVStore;
  namespace kvstore = concord::kvstore;
  using Tensor = std::tuple<uintptr_t, std::string, std::vector<int64_t>>;
  auto view = [](const Tensor& t) { return concord::tensor_view(std::get<0>(t), std::get<1>(t), std::get<2>(t)); };
  py::class_<PyKVStore>(m, "KVStore")
      .def(py::init<const std::string&, int, int, int, const std::string&>(), py::arg("type"), py::arg("op"),
           py::arg("communicators"), py::arg("outstanding"), py::arg("algorithm"),
           py::call_guard<py::gil_scoped_release>())
      .def(
          "init", [view](PyKVStore& s, int key, const Tensor& value) { s.store().init(key, view(value)); },
          py::arg("key"), py::arg("value"), py::call_guard<py::gil_scoped_release>())
      .def(
          "push",
          [view](PyKVStore& s, int key, const Tensor& grad, int priority) {
            s.store().push(key, view(grad), nullptr, priority);
          },
          py::arg("key"), py::arg("grad"), py::arg("priority"), py::call_guard<py::gil_scoped_release>())
      .def(
          "pull", [view](PyKVStore& s, int key, const Tensor& out) { s.store().pull(key, view(out)); }, py::arg("key"),
          py::arg("out"), py::call_guard<py::gil_scoped_release>())
      .def(
          "barrier", [](PyKVStore& s) { s.store().barrier(); }, py::call_guard<py::gil_scoped_release>())
      .def("rank", [](PyKVStore& s) { return s.store().rank(); })
      .def("num_workers", [](PyKVStore& s) { return s.store().num_workers(); })
      .def("type", [](PyKVStore& s) { return std::string(kvstore::kvstore_type_name(s.store().options().type)); })
      .def("close", &PyKVStore::close, py::call_guard<py::gil_scoped_release>());
}
