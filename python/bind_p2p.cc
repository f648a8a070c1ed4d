// concord._core.P2pChannel: tagged point-to-point messages between the ranks of the process's
// transport world, for the send/recv of the "concord" torch.distributed backend
// (python/concord/torch/c10d_p2p.py). A channel has a communicator of its own, so its
// messages never match the runtime's: a duplicate of the transport world (TransportWorld::
// duplicate, collective over the world: every rank creates those channels in the same
// order), or the point-to-point communicator of a process set formed by its members, which
// the runtime's background thread made with the set's other communicators (members only:
// TransportWorld::create_group), so no communicator is created on a Python thread while
// the background thread may be creating one (Open MPI allocates communicator ids one
// thread at a time: two such creations on two threads of two ranks deadlocked). The
// bytes go straight through the transport (MPI or UCX), not through a store. Buffers
// arrive as addresses; the caller keeps them alive until the request completed (the
// request keeps a reference to the Python object it is given). Every call that may wait
// releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/enforce.h"
#include "python/bindings.h"
#include "runtime/api_process_sets.h"
#include "transport/transport_world.h"

namespace py = pybind11;

namespace concord {
namespace {

// One isend or irecv of a channel: test() never blocks, wait() polls until done or timeout.
class P2pRequest {
 public:
  P2pRequest(std::shared_ptr<Communicator> comm, py::object buffer)
      : comm_(std::move(comm)), buffer_(std::move(buffer)) {}

  // Posts the transport request (GIL released by the caller).
  template <typename Post>
  void post(Post&& post) {
    request_ = post(&source_);
  }

  // True once the message was sent (buffer reusable) or received. Throws CommError when the
  // transport failed or the received message had another length.
  bool test() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return true;
    done_ = request_->test();
    if (done_) request_.reset();
    return done_;
  }

  // Polls test() (Backoff between polls) for at most `timeout_s` seconds (negative: no
  // limit); true when done.
  bool wait(double timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    Backoff backoff;
    while (!test()) {
      if (timeout_s >= 0 && std::chrono::steady_clock::now() >= deadline) return false;
      backoff.wait();
    }
    return true;
  }

  int source() {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_ ? source_ : -1;
  }

  ~P2pRequest() {
    // The transport request first (an abandoned receive is cancelled there), then the
    // buffer it pointed into; the GIL is held here (pybind11 destroys with it).
    py::gil_scoped_release release;
    request_.reset();
  }

 private:
  std::shared_ptr<Communicator> comm_;  // outlives the request
  py::object buffer_;                   // the memory the request reads or writes
  std::mutex mutex_;
  RequestPtr request_;
  bool done_ = false;
  int source_ = -1;
};

// A communicator used for tagged messages only: a duplicate of the transport world
// (collective over every rank), or the point-to-point communicator of a process set formed
// by its members (made by the runtime with the set's other communicators).
class P2pChannel {
 public:
  P2pChannel(const std::string& purpose, int process_set) {
    TransportWorld& world = process_world();
    world.require_threads("point-to-point channel '" + purpose + "'");
    comm_ = process_set < 0 ? std::shared_ptr<Communicator>(world.duplicate(purpose)) : process_set_p2p(process_set);
  }

  int rank() const { return comm().rank(); }
  int size() const { return comm().size(); }

  std::unique_ptr<P2pRequest> isend(uintptr_t data, size_t bytes, int peer, int tag, py::object buffer) {
    check_peer(peer, "send to");
    return start(std::move(buffer),
                 [&](int*) { return comm().isend(reinterpret_cast<void*>(data), bytes, peer, tag); });
  }

  std::unique_ptr<P2pRequest> irecv(uintptr_t data, size_t bytes, int peer, int tag, py::object buffer) {
    check_peer(peer, "receive from");
    return start(std::move(buffer),
                 [&](int*) { return comm().irecv(reinterpret_cast<void*>(data), bytes, peer, tag); });
  }

  std::unique_ptr<P2pRequest> irecv_any_source(uintptr_t data, size_t bytes, int tag, py::object buffer) {
    AnySourceReceive* any = comm().any_source();
    CONCORD_ENFORCE(any != nullptr, InvalidArgument, "this transport has no receive from any source");
    return start(std::move(buffer),
                 [&](int* source) { return any->irecv_any_source(reinterpret_cast<void*>(data), bytes, tag, source); });
  }

  // Frees the communicator (before the transport world shuts down).
  void close() { comm_.reset(); }

 private:
  Communicator& comm() const {
    CONCORD_ENFORCE(comm_ != nullptr, StateError, "point-to-point channel used after close()");
    return *comm_;
  }

  void check_peer(int peer, const char* what) const {
    CONCORD_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, what, " rank ", peer, ": outside [0, ", size(), ")");
  }

  template <typename Post>
  std::unique_ptr<P2pRequest> start(py::object buffer, Post&& post) {
    auto request = std::make_unique<P2pRequest>(comm_, std::move(buffer));
    py::gil_scoped_release release;
    request->post(post);
    return request;
  }

  std::shared_ptr<Communicator> comm_;
};

}  // namespace
}  // namespace concord

void bind_p2p(py::module_& m) {
  using concord::P2pChannel;
  using concord::P2pRequest;
  py::class_<P2pRequest>(m, "P2pRequest")
      .def("test", &P2pRequest::test, py::call_guard<py::gil_scoped_release>(),
           "True once complete (never blocks); raises CommError on a transport failure or a length mismatch.")
      .def("wait", &P2pRequest::wait, py::arg("timeout_s"), py::call_guard<py::gil_scoped_release>(),
           "Polls until complete or timeout_s seconds passed (negative: no limit); True when complete.")
      .def("source", &P2pRequest::source, "The sender's rank once a receive completed, else -1.");
  py::class_<P2pChannel>(m, "P2pChannel")
      .def(py::init<const std::string&, int>(), py::arg("purpose"), py::arg("process_set") = -1,
           py::call_guard<py::gil_scoped_release>(),
           "A channel over the whole world (process_set < 0: a duplicate of the transport world, collective over "
           "every rank), or process set `process_set`'s point-to-point communicator (a set formed by its members "
           "with form_process_set; nothing collective).")
      .def("rank", &P2pChannel::rank)
      .def("size", &P2pChannel::size)
      .def("isend", &P2pChannel::isend, py::arg("data"), py::arg("bytes"), py::arg("peer"), py::arg("tag"),
           py::arg("buffer"))
      .def("irecv", &P2pChannel::irecv, py::arg("data"), py::arg("bytes"), py::arg("peer"), py::arg("tag"),
           py::arg("buffer"))
      .def("irecv_any_source", &P2pChannel::irecv_any_source, py::arg("data"), py::arg("bytes"), py::arg("tag"),
           py::arg("buffer"))
      .def("close", &P2pChannel::close, py::call_guard<py::gil_scoped_release>());
}
