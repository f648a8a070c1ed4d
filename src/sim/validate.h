// Validation of the simulator against measurements: reads concord-bench's JSON output
// (`concord-bench -J file.json`) and compares each measured allreduce time with the
// simulator's prediction for the same algorithm, size and world size.
//
// Accepted input: a JSON array of records, or an object whose "records" or "results" member
// is that array. Each record: "collective" (records other than "allreduce" are skipped;
// missing = allreduce), "algorithm" (records of algorithms the simulator does not model,
// e.g. "mpi", "runtime", "auto", are skipped), "size" (bytes), "time" (microseconds), "P"
// (or "ranks", "nranks", "world_size"), optional "in_place" (bool).
#pragma once

#include <string>
#include <vector>

#include "algorithms/cost_model.h"
#include "sim/simulator.h"

namespace concord::sim {

struct Measurement {
  std::string algorithm;
  size_t bytes = 0;
  int ranks = 0;
  bool in_place = true;
  double seconds = 0;  ///< measured time of one call
};

struct ValidationRow {
  Measurement measured;
  double predicted_seconds = 0;
  double relative_error = 0;  ///< (predicted - measured) / measured
  Method method = Method::kStepByStep;
  bool steady = true;  ///< false: token buckets still draining after the last call simulated
};

/// Reads the allreduce measurements of modelled algorithms from `path`. Throws
/// InvalidArgument naming the file and record when it cannot be read or a record lacks a
/// field.
std::vector<Measurement> read_measurements(const std::string& path);

/// The token bucket of the inter-node links (the testbed's tbf: scripts/cluster.sh
/// --burst, and the unshaped link's seconds per byte); bucket_bytes 0 = plain links. `gap`:
/// the inter-node links' per-message occupancy in seconds (LinkParams::gap, concord-calibrate's
/// inter_gap); < 0 = all of inter_alpha.
struct LinkShaping {
  double bucket_bytes = 0;
  double line_beta = 0;
  double gap = -1;
};

/// Predicts each measurement on a two-level topology of `ranks_per_node` ranks per node
/// (0: all ranks on one node, the single-machine case) with constants `params`. With
/// `shaping`, the inter-node links are token buckets (LinkParams) and each prediction is
/// the steady state of back-to-back calls (step by step, at most 1,000 calls), as
/// concord-bench -T measures. With a bucket or a gap every prediction is step by step (the
/// closed forms model neither). Throws InvalidArgument when shaping has a bucket but no
/// positive line_beta, or a bucket or a gap >= 0 with ranks_per_node 0 (one node: no
/// inter-node link to shape).
std::vector<ValidationRow> validate(const std::vector<Measurement>& measurements, const CostParams& params,
                                    int ranks_per_node = 0, size_t chunk_bytes = default_chunk_bytes(),
                                    const LinkShaping& shaping = {});

}  // namespace concord::sim
