// concord._bench.AlgorithmAllreducer: one of the registry's allreduce algorithms run alone,
// in place, from Python, on its own duplicate of the process's transport world
// (transport/transport_world.h): no runtime, no negotiation, no handle; what concord-bench
// times for the same algorithm and size. It is the baseline tools/torch/latency_bench.py
// compares the concord.torch path against, in the same processes. A benchmark's class, so
// it lives in the module built with the tools (concord._bench), not in the production
// extension concord._core. allreduce() blocks with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "algorithms/autotune.h"
#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "algorithms/selection_policy.h"
#include "common/config.h"
#include "common/enforce.h"
#include "concord/concord.h"
#include "concord/errors.h"
#include "transport/transport_world.h"

namespace py = pybind11;

namespace concord {
namespace {

class AlgorithmAllreducer {
 public:
  /// Collective over the process's world (duplicates it; the node of every rank is the
  /// world's). Settings (ring chunk, tree chunks, cost model) as the runtime reads them.
  AlgorithmAllreducer()
      : comm_(process_world().duplicate("bench.algorithm_allreducer")),
        config_(Config::from_env()),
        context_{*comm_, scratch_, static_cast<size_t>(config_.ring_chunk_bytes), process_world().node_of_rank(),
                 CostParams::from_env()} {}

  /// The registry entry the runtime's cost model picks for `count` elements of `dtype`
  /// with `op` (CONCORD_ALLREDUCE_ALGORITHM and measured selection aside).
  std::string choose(size_t count, const std::string& dtype, int op) const {
    const Problem problem = make_problem(context_, count, dtype_from_name(dtype), static_cast<ReduceOp>(op));
    return policy_.cost_model(allreduce_algorithms(), problem);
  }

  /// The registry entry the runtime runs for `count` elements of `dtype` with `op` (once
  /// its first call of that size bucket has measured, with measured selection on), decided
  /// on rank 0 from rank 0's settings and given to every rank, as the runtime adopts rank
  /// 0's: the CONCORD_ALLREDUCE_ALGORITHM rule for the size, else the measured choice in
  /// the cost-model cache file (the runtime saves it there as soon as it measures; used
  /// where the runtime measures: 2+ ranks, 1 B .. kMaxMeasuredBytes, an entry that exists
  /// and accepts the problem), else the cost model; a rule's entry that declines falls back
  /// to the cost model, as in the runtime. The executor's SelectionPolicy
  /// (algorithms/selection_policy.h) without measuring. Collective over the world.
  /// Throws InvalidArgument on every rank when rank 0 cannot decide (e.g. a malformed rule).
  std::string runtime_choice(size_t count, const std::string& dtype, int op) {
    if (is_initialized()) process_world().require_threads("AlgorithmAllreducer.runtime_choice");
    std::string answer;  // rank 0: "=" + name, or "!" + why it failed
    if (comm_->rank() == 0) {
      try {
        answer = "=" + rank0_choice(make_problem(context_, count, dtype_from_name(dtype), static_cast<ReduceOp>(op)));
      } catch (const std::exception& error) {
        answer = std::string("!") + error.what();
      }
    }
    std::vector<uint8_t> shared(answer.begin(), answer.end());
    comm_->broadcast_bytes(shared, 0);
    answer.assign(shared.begin(), shared.end());
    CONCORD_ENFORCE(!answer.empty() && answer[0] == '=', InvalidArgument,
                    "AlgorithmAllreducer.runtime_choice: rank 0 could not decide: ", answer.substr(1));
    return answer.substr(1);
  }

  /// In-place allreduce of `count` elements of `dtype` at address `data` with `op` by the
  /// registry entry `name` ("auto" = choose()). Collective. Throws InvalidArgument for an
  /// unknown name or one that declines the problem, CommError on transport failure.
  void allreduce(const std::string& name, uintptr_t data, size_t count, const std::string& dtype, int op) {
    if (is_initialized()) process_world().require_threads("AlgorithmAllreducer.allreduce");
    const DataType type = dtype_from_name(dtype);
    const auto reduce_op = static_cast<ReduceOp>(op);
    const std::string chosen = name == "auto" ? choose(count, dtype, op) : name;
    const Problem problem = problem_for()(chosen, make_problem(context_, count, type, reduce_op));
    const auto& entry = find_algorithm(allreduce_algorithms(), chosen);
    const std::string declined = entry.declines ? entry.declines(problem) : "";
    CONCORD_ENFORCE(declined.empty(), InvalidArgument, "AlgorithmAllreducer: ", chosen, " declines ", count, " ", dtype,
                    " elements: ", declined);
    Instance& slot = instances_[chosen];
    if (!slot.algorithm || slot.chunk_bytes != problem.chunk_bytes) {
      AlgorithmContext context = context_;
      context.chunk_bytes = problem.chunk_bytes;
      slot.algorithm = entry.create(context);
      slot.chunk_bytes = problem.chunk_bytes;
    }
    slot.algorithm->start(reinterpret_cast<void*>(data), count, type, reduce_op);
    run_to_completion(*slot.algorithm);
  }

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }

 private:
  // runtime_choice() on rank 0: the executor's policy (algorithms/selection_policy.h) on
  // the measured table the runtime saved; where the runtime would measure now, the cost model.
  std::string rank0_choice(const Problem& problem) const {
    const std::vector<int>& nodes = context_.node_of_rank;
    const int node_count = nodes.empty() ? 1 : *std::max_element(nodes.begin(), nodes.end()) + 1;
    AutotuneTable table(autotune_scope(comm_->size(), node_count, config_.ring_chunk_bytes, config_.tree_chunks));
    if (!cost_model_cache_path().empty()) {
      try {
        table.load(cost_model_cache_path());
      } catch (const Error&) {  // unreadable: the runtime ignores it too (and warns)
      }
    }
    const auto& entries = allreduce_algorithms();
    const SelectionDecision decision = policy_.decide("allreduce", entries, problem, table);
    return policy_.cost_model(entries, problem, decision.measure ? "" : decision.name);
  }

  ProblemForEntry problem_for() const { return policy_.problem_for(); }

  struct Instance {
    std::unique_ptr<AllreduceAlgorithm> algorithm;
    size_t chunk_bytes = 0;
  };
  std::unique_ptr<Communicator> comm_;
  Config config_;
  ScratchBuffer scratch_;
  AlgorithmContext context_;
  SelectionPolicy policy_{config_, context_.cost_params};
  std::map<std::string, Instance> instances_;
};

}  // namespace
}  // namespace concord

PYBIND11_MODULE(_bench, m) {
  using concord::AlgorithmAllreducer;
  m.doc() = "Benchmark-only classes of Concord (tools/torch/latency_bench.py), built with the tools";
  py::class_<AlgorithmAllreducer>(m, "AlgorithmAllreducer")
      .def(py::init<>(), py::call_guard<py::gil_scoped_release>())
      .def("choose", &AlgorithmAllreducer::choose, py::arg("count"), py::arg("dtype"), py::arg("op"))
      .def("runtime_choice", &AlgorithmAllreducer::runtime_choice, py::arg("count"), py::arg("dtype"), py::arg("op"),
           py::call_guard<py::gil_scoped_release>())
      .def("allreduce", &AlgorithmAllreducer::allreduce, py::arg("name"), py::arg("data"), py::arg("count"),
           py::arg("dtype"), py::arg("op"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("rank", &AlgorithmAllreducer::rank)
      .def_property_readonly("size", &AlgorithmAllreducer::size);
}
