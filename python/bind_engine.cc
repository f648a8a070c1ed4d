// concord._core.Engine: the dependency engine (src/engine/engine.h) for Python callables.
// Thin: it converts vars and callables, takes the GIL in the worker threads only around
// the Python call, and releases it around every call that may block.
//
// A Python exception raised by an operation is kept as its exception object (PythonError
// below) so that every wait that rethrows it raises the original Python exception; pybind11's
// own error_already_set can be restored only once.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "concord/errors.h"
#include "engine/engine.h"
#include "python/bindings.h"

namespace py = pybind11;
using concord::InvalidArgument;
using concord::engine::Engine;
using concord::engine::FnKind;
using concord::engine::OnComplete;
using concord::engine::PushOptions;
using concord::engine::Var;

namespace {

/// A Python object that may be released from a thread without the GIL.
std::shared_ptr<py::object> share_with_gil(py::object object) {
  return std::shared_ptr<py::object>(new py::object(std::move(object)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

/// An exception raised by a Python operation, carried through the engine and raised again
/// (the same exception object) by each wait that rethrows it.
class PythonError : public std::exception {
 public:
  PythonError(std::shared_ptr<py::object> value, std::string message)
      : value_(std::move(value)), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  /// Sets the Python error indicator to the original exception (GIL held).
  void raise() const { PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value_->ptr())), value_->ptr()); }

 private:
  std::shared_ptr<py::object> value_;
  std::string message_;
};

/// The Python handle of a var: remembers its engine (vars of another engine are refused)
/// and whether delete_var() was called (later use is refused instead of touching freed memory).
struct PyVar {
  const Engine* engine;
  Var* var;
  bool deleted = false;
};

/// Engine owned by Python: destroyed with the GIL released, because shutting down waits
/// for workers that may need the GIL to finish their Python operations.
struct ReleaseGilDelete {
  void operator()(Engine* engine) const {
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      delete engine;
    } else {
      delete engine;
    }
  }
};

std::vector<Var*> unwrap(const Engine& engine, const std::vector<std::shared_ptr<PyVar>>& vars,
                         const std::string& name) {
  std::vector<Var*> out;
  for (const auto& v : vars) {
    if (!v || v->engine != &engine)
      throw InvalidArgument("engine operation '" + name + "': a var of another engine (or None)");
    if (v->deleted) throw InvalidArgument("engine operation '" + name + "': var was passed to delete_var()");
    out.push_back(v->var);
  }
  return out;
}

FnKind kind_from_name(const std::string& kind) {
  if (kind == "cpu") return FnKind::kCpu;
  if (kind == "comm") return FnKind::kComm;
  throw InvalidArgument("engine push: kind must be 'cpu' or 'comm', got '" + kind + "'");
}

/// The on_complete(exc=None) callable handed to an asynchronous Python operation.
struct PyCompletion {
  OnComplete done;
  void call(const py::object& exc) {
    std::exception_ptr error;
    if (!exc.is_none()) error = std::make_exception_ptr(PythonError(share_with_gil(exc), py::str(exc)));
    py::gil_scoped_release release;  // completing takes the engine's mutex
    done(std::move(error));
  }
};

/// Calls `callable(args...)` holding the GIL; a Python exception becomes a PythonError.
template <typename... Args>
void call_python(const std::shared_ptr<py::object>& callable, Args&&... args) {
  py::gil_scoped_acquire gil;
  try {
    (*callable)(std::forward<Args>(args)...);
  } catch (py::error_already_set& e) {
    throw PythonError(share_with_gil(e.value()), e.what());
  }
}

void push(Engine& engine, py::function fn, const std::vector<std::shared_ptr<PyVar>>& reads,
          const std::vector<std::shared_ptr<PyVar>>& writes, const std::string& kind, int priority,
          const std::string& name, bool asynchronous) {
  PushOptions options{kind_from_name(kind), priority, name};
  std::vector<Var*> r = unwrap(engine, reads, name), w = unwrap(engine, writes, name);
  auto callable = share_with_gil(std::move(fn));
  py::gil_scoped_release release;
  if (asynchronous) {
    engine.push_async([callable](OnComplete done) { call_python(callable, PyCompletion{std::move(done)}); }, r, w,
                      options);
  } else {
    engine.push_sync([callable] { call_python(callable); }, r, w, options);
  }
}

}  // namespace

void bind_engine(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const PythonError& e) {
      e.raise();
    }
  });

  py::class_<PyCompletion>(m, "EngineCompletion",
                           "on_complete(exc=None) of an asynchronous engine operation: call it once.")
      .def("__call__", &PyCompletion::call, py::arg("exc") = py::none());

  py::class_<PyVar, std::shared_ptr<PyVar>>(m, "EngineVar", "A tag for one piece of data, made by Engine.new_var().");

  py::class_<Engine, std::unique_ptr<Engine, ReleaseGilDelete>>(m, "Engine",
                                                                "Dependency engine (see concord/engine.py).")
      .def(py::init<int, int>(), py::arg("cpu_threads") = 2, py::arg("comm_threads") = 1)
      .def("new_var",
           [](Engine& e) {
             Var* var;
             {
               py::gil_scoped_release release;  // never wait for the engine's mutex holding the GIL
               var = e.new_var();
             }
             return std::make_shared<PyVar>(PyVar{&e, var});
           })
      .def(
          "delete_var",
          [](Engine& e, const std::shared_ptr<PyVar>& v) {
            Var* var = unwrap(e, {v}, "delete_var")[0];
            {
              py::gil_scoped_release release;
              e.delete_var(var);
            }
            v->deleted = true;
          },
          py::arg("var"))
      .def("push", &push, py::arg("fn"), py::arg("reads") = std::vector<std::shared_ptr<PyVar>>{},
           py::arg("writes") = std::vector<std::shared_ptr<PyVar>>{}, py::arg("kind") = "cpu", py::arg("priority") = 0,
           py::arg("name") = "", py::arg("asynchronous") = false)
      .def(
          "wait_for_var",
          [](Engine& e, const std::shared_ptr<PyVar>& v) {
            Var* var = unwrap(e, {v}, "wait_for_var")[0];
            py::gil_scoped_release release;
            e.wait_for_var(var);
          },
          py::arg("var"))
      .def("wait_all", &Engine::wait_all, py::call_guard<py::gil_scoped_release>())
      .def(
          "version",
          [](const Engine& e, const std::shared_ptr<PyVar>& v) {
            Var* var = unwrap(e, {v}, "version")[0];
            py::gil_scoped_release release;
            return e.version(var);
          },
          py::arg("var"))
      .def("shutdown", &Engine::shutdown, py::call_guard<py::gil_scoped_release>());
}
