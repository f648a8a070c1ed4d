// concord._core's transport-world and store bindings for elastic training
// (python/concord/elastic/): a client of a rendezvous store (set/get/add on the store
// the elastic driver serves), the store's server (run by concord-run's driver), and
// leaving or aborting this process's transport world so a new one can be formed
// (src/transport/transport_world.h). Every call that may block releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>

#include "common/enforce.h"
#include "concord/concord.h"
#include "python/bindings.h"
#include "transport/launch_environment.h"
#include "transport/rendezvous/open_store.h"
#include "transport/rendezvous/tcp_store.h"
#include "transport/transport_world.h"

namespace py = pybind11;

namespace {

using concord::rendezvous::Bytes;
using concord::rendezvous::Clock;

std::chrono::milliseconds milliseconds(double seconds) {
  CONCORD_ENFORCE(seconds > 0, concord::InvalidArgument, "store timeout must be > 0 seconds, got ", seconds);
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// A store client opened from a CONCORD_STORE-style spec ("file:DIR", "tcp-client:HOST:PORT").
class PyStore {
 public:
  PyStore(const std::string& spec, double timeout_seconds) : timeout_(milliseconds(timeout_seconds)) {
    concord::LaunchEnvironment env;
    env.rank = 1;  // a client: never serves the store itself
    opened_ = concord::rendezvous::open_store(env, spec, timeout_);
  }
  void set(const std::string& key, const std::string& value) {
    opened_.store->set(key, Bytes(value.begin(), value.end()));
  }
  std::optional<std::string> try_get(const std::string& key) {
    auto value = opened_.store->try_get(key);
    if (!value) return std::nullopt;
    return std::string(value->begin(), value->end());
  }
  std::string get(const std::string& key, double timeout_seconds) {
    const Bytes value = opened_.store->get(key, Clock::now() + milliseconds(timeout_seconds));
    return std::string(value.begin(), value.end());
  }
  int64_t add(const std::string& key, int64_t delta) { return opened_.store->add(key, delta); }
  std::string describe() const { return opened_.store->describe(); }

 private:
  std::chrono::milliseconds timeout_;
  concord::rendezvous::OpenStore opened_;
};

}  // namespace

void bind_world(py::module_& m) {
  py::class_<PyStore>(m, "Store", "A client of a rendezvous store (src/transport/rendezvous/store.h)")
      .def(py::init<const std::string&, double>(), py::arg("spec"), py::arg("timeout_seconds"),
           py::call_guard<py::gil_scoped_release>())
      .def("set", &PyStore::set, py::call_guard<py::gil_scoped_release>())
      .def("try_get", &PyStore::try_get, py::call_guard<py::gil_scoped_release>())
      .def("get", &PyStore::get, py::arg("key"), py::arg("timeout_seconds"), py::call_guard<py::gil_scoped_release>())
      .def("add", &PyStore::add, py::call_guard<py::gil_scoped_release>())
      .def("describe", &PyStore::describe);
  py::class_<concord::rendezvous::TcpStoreServer>(m, "StoreServer", "Serves a TCP rendezvous store from a thread")
      .def(py::init<int>(), py::arg("port"))
      .def("port", &concord::rendezvous::TcpStoreServer::port);
  m.def(
      "leave_world",
      [] {
        concord::shutdown();
        concord::leave_process_world();
      },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "world_origin",
      [] {
        const auto& origin = concord::process_world().origin();
        return py::make_tuple(origin.transport, origin.launcher, origin.rendezvous);
      },
      "(transport, launcher, rendezvous) of this process's world; joins it if not joined yet (collective then)");
  m.def("abort_world", &concord::abort_process_world, py::arg("reason"), py::call_guard<py::gil_scoped_release>());
}
