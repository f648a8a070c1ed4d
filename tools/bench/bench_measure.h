// One measured row half of concord-bench (out-of-place or in-place): optionally one
// checked call, then `warmup` untimed calls and `iterations` timed ones between a barrier
// and the slowest rank's end. Also counts rank 0's minor page faults (getrusage
// RUSAGE_SELF ru_minflt) over the timed calls: an implementation that mallocs fresh
// scratch per call (Open MPI's large allreduce) pays ~1 fault per 4 KiB page per call,
// one with persistent scratch (Concord's ScratchBuffer) none after warm-up.
#pragma once

#include <string>

#include "tools/bench/bench_context.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/bench_runner.h"

namespace concord::bench {

struct Measurement {
  bool measured = false;  ///< false: skipped, see skip_reason
  std::string skip_reason;
  std::string chosen;      ///< the registry entry that ran ("auto": the cost model's choice)
  double seconds = 0;      ///< mean time of one call, slowest rank, seconds
  long wrong = -1;         ///< wrong result elements summed over ranks; -1 = not checked
  double page_faults = 0;  ///< rank 0's minor page faults per timed call
};

/// Measures `algorithm` on `spec` with options' iterations, warm-up and check. Collective
/// over MPI_COMM_WORLD; every rank gets the same result. Throws InvalidArgument for an
/// unknown algorithm name, CommError when a call fails.
Measurement measure(BenchContext& context, const std::string& algorithm, const RowSpec& spec,
                    const BenchOptions& options);

}  // namespace concord::bench
