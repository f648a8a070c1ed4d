#include "tools/bench/bench_runner.h"

namespace concord::bench {

namespace {

// The registry's view of a row: reductions count elements (kAverage reduces as kSum), the
// data-moving collectives count bytes.
Problem row_problem(const BenchContext& context, const RowSpec& spec) {
  if (has_op(spec.collective))
    return context.problem(spec.count, spec.dtype, spec.op == ReduceOp::kAverage ? ReduceOp::kSum : spec.op);
  return context.problem(spec.count * dtype_size(spec.dtype), DataType::kUInt8, ReduceOp::kSum);
}

Resolution resolve_registry(const BenchContext& context, const std::string& algorithm, const RowSpec& spec) {
  const Problem problem = row_problem(context, spec);
  switch (spec.collective) {
    case Collective::kAllreduce: return context.resolve(allreduce_algorithms(), algorithm, problem);
    case Collective::kAllgather: return context.resolve(allgather_algorithms(), algorithm, problem);
    case Collective::kBroadcast: return context.resolve(broadcast_algorithms(), algorithm, problem);
    case Collective::kReduceScatter: return context.resolve(reduce_scatter_algorithms(), algorithm, problem);
    case Collective::kAlltoall: return context.resolve(alltoall_algorithms(), algorithm, problem);
  }
  return {};
}

// Why `resolution` cannot run `spec` whatever the registry says, or "".
std::string unsupported(const Resolution& resolution, const RowSpec& spec) {
  MPI_Datatype mpi_dtype;
  MPI_Op mpi_op;
  if (resolution.kind == Resolution::Kind::kMpi && has_op(spec.collective) &&
      !mpi_reduction_types(spec.dtype, spec.op, mpi_dtype, mpi_op))
    return std::string("MPI has no builtin ") + dtype_name(spec.dtype) + " datatype";
  if (resolution.kind == Resolution::Kind::kRuntime && spec.collective != Collective::kAllreduce)
    return "the runtime is measured for allreduce only";
  if (resolution.kind == Resolution::Kind::kRegistry && spec.collective == Collective::kAlltoall && spec.in_place)
    return "AlltoallAlgorithm needs separate send and receive buffers";
  return "";
}

}  // namespace

Resolution resolve_row(const BenchContext& context, const std::string& algorithm, const RowSpec& spec) {
  Resolution resolution = resolve_registry(context, algorithm, spec);
  if (const std::string reason = unsupported(resolution, spec); !reason.empty())
    resolution = {Resolution::Kind::kSkip, "", reason};
  return resolution;
}

std::unique_ptr<CollectiveRunner> make_runner(BenchContext& context, const std::string& algorithm, const RowSpec& spec,
                                              Resolution& resolution) {
  resolution = resolve_row(context, algorithm, spec);
  if (resolution.kind == Resolution::Kind::kSkip) return nullptr;
  switch (spec.collective) {
    case Collective::kAllreduce: return make_allreduce_runner(context, resolution, spec);
    case Collective::kAllgather: return make_allgather_runner(context, resolution, spec);
    case Collective::kBroadcast: return make_broadcast_runner(context, resolution, spec);
    case Collective::kReduceScatter: return make_reduce_scatter_runner(context, resolution, spec);
    case Collective::kAlltoall: return make_alltoall_runner(context, resolution, spec);
  }
  return nullptr;
}

bool mpi_reduction_types(DataType dtype, ReduceOp op, MPI_Datatype& mpi_dtype, MPI_Op& mpi_op) {
  switch (dtype) {
    case DataType::kFloat32: mpi_dtype = MPI_FLOAT; break;
    case DataType::kFloat64: mpi_dtype = MPI_DOUBLE; break;
    case DataType::kInt32: mpi_dtype = MPI_INT32_T; break;
    case DataType::kInt64: mpi_dtype = MPI_INT64_T; break;
    case DataType::kInt8: mpi_dtype = MPI_INT8_T; break;
    case DataType::kUInt8: mpi_dtype = MPI_UINT8_T; break;
    case DataType::kInt16: mpi_dtype = MPI_INT16_T; break;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kBool: return false;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: mpi_op = MPI_SUM; break;
    case ReduceOp::kMin: mpi_op = MPI_MIN; break;
    case ReduceOp::kMax: mpi_op = MPI_MAX; break;
    case ReduceOp::kProduct: mpi_op = MPI_PROD; break;
    case ReduceOp::kAdasum: return false;  // not element-wise
  }
  return true;
}

}  // namespace concord::bench
