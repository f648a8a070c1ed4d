// One allreduce measurement of concord-bench: an algorithm run `iterations` times on
// `count` elements after `warmup` runs, timed between barriers; the time is the slowest
// rank's mean in seconds. `wrong` counts result elements that differ from the exact
// expected value (inputs are small integers, so every dtype sums them exactly).
#pragma once

#include <mpi.h>

#include <string>

#include "concord/types.h"

namespace concord::bench {

struct Measurement {
  double seconds = 0;  ///< mean time of one allreduce, slowest rank
  long wrong = 0;      ///< wrong elements over all ranks (-1 when not checked)
};

/// Algorithms concord-bench knows: "ring" (Concord's AllreduceRing over MPI p2p),
/// "mpi" (MPI_Allreduce), "runtime" (concord::allreduce_async + wait: negotiation, fusion
/// buffer and ring, i.e. what a framework sees).
bool is_known_algorithm(const std::string& name);

/// Measures `algorithm` on `count` elements of `dtype` with `op` over MPI_COMM_WORLD.
/// `in_place` reduces the input buffer itself; otherwise input and output differ.
/// Throws InvalidArgument for an unknown algorithm, or a dtype/op MPI cannot express.
Measurement measure(const std::string& algorithm, size_t count, DataType dtype, ReduceOp op,
                    bool in_place, int iterations, int warmup, bool check);

}  // namespace concord::bench
