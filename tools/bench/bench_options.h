// concord-bench's command line, in the nccl-tests spelling: -b/-e/-f sizes, -n/-w
// iterations, -T min time, -R repeats, -c check, -o op, -d dtype, plus -C collective,
// -a algorithms and -J json.
// Also the per-collective conventions of nccl-tests that the flags and the report share:
// what "size" means and the bus-bandwidth factor.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "concord/types.h"
#include "tools/common/mpi_tool.h"

namespace concord::bench {

/// The collectives concord-bench measures.
enum class Collective { kAllreduce, kAllgather, kBroadcast, kReduceScatter, kAlltoall };

/// "allreduce", "allgather", "broadcast", "reduce_scatter" or "alltoall".
const char* collective_name(Collective collective);

/// nccl-tests' busbw / algbw for `ranks` ranks: allreduce 2(P-1)/P; allgather,
/// reduce_scatter and alltoall (P-1)/P; broadcast 1. algbw = size / time, where size is
/// the whole array (allreduce: the vector; allgather: the output of P blocks;
/// reduce_scatter: the input of P blocks; alltoall: one rank's P send blocks; broadcast:
/// the message).
double bus_factor(Collective collective, int ranks);

/// True when the collective reduces (has an op: allreduce and reduce_scatter).
bool has_op(Collective collective);

/// Elements a row of `bytes` bytes holds: bytes / element size, rounded down to a multiple of
/// P for the collectives made of P equal blocks (allgather, reduce_scatter, alltoall), at
/// least one element (one per rank for those) unless `bytes` is 0 (then 0).
size_t row_count(Collective collective, size_t bytes, size_t element_size, int ranks);

/// Everything the flags set.
struct BenchOptions {
  Collective collective = Collective::kAllreduce;
  size_t min_bytes = 1024;       ///< -b, bytes
  size_t max_bytes = 64u << 20;  ///< -e, bytes
  double step_factor = 2;        ///< -f
  int iterations = 20;           ///< -n, timed calls per row
  int warmup = 5;                ///< -w, untimed calls per row
  double min_seconds = 0;        ///< -T, timed seconds per row at least (more calls than -n for short ones)
  int repeats = 1;               ///< -R, passes over every row; a row's time is its median pass
  bool check = true;             ///< -c 1: verify every element of one call's result
  ReduceOp op = ReduceOp::kSum;  ///< -o
  std::string op_name = "sum";
  DataType dtype = DataType::kFloat32;  ///< -d
  /// -a, as given: names, "all", or registry names prefixed "registry:".
  std::vector<std::string> algorithms;
  std::string json_path;  ///< -J, "" = none
};

/// Parses argv. Returns the options, or sets `exit_code` (0 for --help, CLI11's code for a
/// bad flag, 1 for a bad size, op or dtype; rank 0 prints the message) and returns nothing.
std::optional<BenchOptions> parse_options(const tools::MpiTool& mpi, int argc, char** argv, int& exit_code);

}  // namespace concord::bench
