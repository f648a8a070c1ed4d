// What concord-bench's measurements share: a duplicate of the process's transport world
// (MPI_COMM_WORLD's under mpirun, the UCX world's under a store launcher), the node of every
// rank (the world's, so "hierarchical" sees the real nodes), one
// persistent scratch buffer and one instance per registry algorithm (so scratch persists
// across sizes, as in the runtime), the cost parameters the "auto" choice uses
// (CostParams::from_env) and, on first use, the Concord runtime.
//
// Algorithm names: "mpi" (the MPI library's own collective, called directly), "runtime"
// (concord::allreduce_async), "auto" (the registry's cost-model choice) and every registry
// entry's name; "registry:NAME" names the entry NAME even when "mpi", "runtime" or "auto"
// would mean the bench's own.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "tools/bench/bench_options.h"
#include "transport/transport_world.h"

namespace concord::bench {

/// How one algorithm name runs one row.
struct Resolution {
  enum class Kind { kMpi, kRuntime, kRegistry, kSkip };
  Kind kind = Kind::kSkip;
  std::string registry_name;  ///< kRegistry: the entry (for "auto", the one chosen)
  std::string skip_reason;    ///< kSkip: why the row is not measured
};

class BenchContext {
 public:
  /// Collective over the world (duplicates it).
  BenchContext();
  ~BenchContext();
  BenchContext(const BenchContext&) = delete;
  BenchContext& operator=(const BenchContext&) = delete;

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  /// The bench's communicator (timing barriers and the slowest rank's time).
  Communicator& comm() { return *comm_; }
  int nodes() const;
  /// The Problem the registry sees (see make_problem in algorithms/registry.h).
  Problem problem(size_t count, DataType dtype, ReduceOp op) const { return make_problem(context_, count, dtype, op); }

  /// What `name` means for `problem` among `entries`: mpi, runtime, a registry entry that
  /// accepts the problem (for "auto" the cost model's choice), or a skip with the reason
  /// (the entry declines, no entry accepts). Throws InvalidArgument for an unknown name.
  template <typename AlgorithmType>
  Resolution resolve(const std::vector<RegistryEntry<AlgorithmType>>& entries, const std::string& name,
                     const Problem& problem) const;

  /// The instance of registry entry `name`, created on first use (collective over the world
  /// communicator) and kept for the rest of the run.
  template <typename AlgorithmType>
  AlgorithmType& instance(const std::vector<RegistryEntry<AlgorithmType>>& entries, const std::string& name);

  /// The allreduce algorithm measured selection picks for `problem`, as the runtime's
  /// (algorithms/autotune.h): every registry entry that accepts it is timed on this
  /// context's instances, one call in place and one out of place per repetition, rank 0
  /// decides. Memoised per size bucket. Collective.
  std::string tuned_allreduce(const Problem& problem);
  /// Starts the Concord runtime (concord::init) once; it is shut down with the context.
  void start_runtime();

 private:
  std::unique_ptr<Communicator> comm_;
  ScratchBuffer scratch_;
  AlgorithmContext context_;
  CostParams cost_;
  std::map<std::string, std::unique_ptr<Algorithm>> instances_;
  bool runtime_started_ = false;
  std::map<std::string, std::string> tuned_;  // selection_key -> algorithm
};

/// The algorithm names -a expands to for `collective`: "all" becomes every registry entry
/// (prefixed "registry:" when its name is mpi, runtime or auto), then mpi and auto; other
/// names are kept in order, duplicates dropped.
std::vector<std::string> expand_algorithms(const std::vector<std::string>& requested, Collective collective);

}  // namespace concord::bench
