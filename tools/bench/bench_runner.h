// One row of concord-bench as the measurement loop sees it: a collective call on buffers
// of one size, that can be filled with known inputs, run many times and checked.
// make_runner() builds it for any collective and algorithm name (see bench_context.h);
// one file per collective implements it (bench_allreduce.cc, bench_allgather.cc, ...).
#pragma once

#include <mpi.h>  // the "mpi" rows call the MPI library's own collectives

#include <memory>
#include <string>

#include "tools/bench/bench_context.h"
#include "tools/bench/bench_options.h"
#include "transport/mpi_communicator.h"  // check_mpi

namespace concord::bench {

/// The shape of one row: `count` elements of `dtype` (the whole array, as nccl-tests'
/// count: see bus_factor() for what that is per collective), reduced with `op` where the
/// collective reduces, in place or not. Broadcasts are rooted at rank 0.
struct RowSpec {
  Collective collective = Collective::kAllreduce;
  size_t count = 0;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  bool in_place = false;
};

class CollectiveRunner {
 public:
  virtual ~CollectiveRunner() = default;
  /// Writes this rank's input (in place: into the buffer the call works on).
  virtual void fill() = 0;
  /// One collective call; returns when it has completed on this rank.
  virtual void run() = 0;
  /// After fill() then run(): elements of this rank's result that differ from the exact
  /// expected values.
  virtual long count_wrong() const = 0;
};

/// What every collective's runner holds: the context, how its algorithm name resolved, the
/// row, and (for a registry entry) the entry's persistent instance.
template <typename AlgorithmType>
class RunnerBase : public CollectiveRunner {
 protected:
  RunnerBase(BenchContext& context, const Resolution& resolution, const RowSpec& spec,
             const std::vector<RegistryEntry<AlgorithmType>>& entries)
      : context_(context), resolution_(resolution), spec_(spec) {
    if (resolution.kind == Resolution::Kind::kRegistry)
      algorithm_ = &context.instance(entries, resolution.registry_name);
  }
  bool is_mpi() const { return resolution_.kind == Resolution::Kind::kMpi; }
  int rank() const { return context_.rank(); }
  int size() const { return context_.size(); }

  BenchContext& context_;
  Resolution resolution_;
  RowSpec spec_;
  AlgorithmType* algorithm_ = nullptr;  ///< kRegistry only
};

/// The runner of `algorithm` for `spec`, or nullptr with `resolution` saying why the row is
/// skipped (the algorithm declines, MPI has no datatype for float16, in-place alltoall...).
/// `resolution` also names the registry entry "auto" chose. Collective over the world
/// when it creates an algorithm instance. Throws InvalidArgument for an unknown name.
std::unique_ptr<CollectiveRunner> make_runner(BenchContext& context, const std::string& algorithm, const RowSpec& spec,
                                              Resolution& resolution);

/// What `algorithm` means for `spec` (as make_runner decides, without creating anything).
/// Throws InvalidArgument for an unknown name.
Resolution resolve_row(const BenchContext& context, const std::string& algorithm, const RowSpec& spec);

// Per collective (one file each): the runner of a resolved, not skipped, algorithm.
std::unique_ptr<CollectiveRunner> make_allreduce_runner(BenchContext&, const Resolution&, const RowSpec&);
std::unique_ptr<CollectiveRunner> make_allgather_runner(BenchContext&, const Resolution&, const RowSpec&);
std::unique_ptr<CollectiveRunner> make_broadcast_runner(BenchContext&, const Resolution&, const RowSpec&);
std::unique_ptr<CollectiveRunner> make_reduce_scatter_runner(BenchContext&, const Resolution&, const RowSpec&);
std::unique_ptr<CollectiveRunner> make_alltoall_runner(BenchContext&, const Resolution&, const RowSpec&);

/// MPI's builtin datatype and op for a reduction, or false (float16, bfloat16: no builtin
/// datatype). kAverage maps to MPI_SUM; the caller scales.
bool mpi_reduction_types(DataType dtype, ReduceOp op, MPI_Datatype& mpi_dtype, MPI_Op& mpi_op);

}  // namespace concord::bench
