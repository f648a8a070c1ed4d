// SparseAllreduceDense ("dense"), the dense baseline of the sparse comparison
// (docs/algorithms.md, "Sparse baselines"): an ordinary allreduce of the whole accumulator.
//
// Steps for P ranks, n entries:
//   0. Length check (SparseBaseline::check_length): allgather of every rank's n; ranks
//      passing different n all throw MismatchError before the allreduce starts.
//   1. In-place float32 sum allreduce of acc by the dense algorithm the registry
//      (algorithms/registry.h) selects for (P, n floats) with the default cost constants
//      and without the MPI-native algorithm (its bytes bypass the counters), so every rank
//      picks the same algorithm without an exchange and every byte is counted.
//   2. U[j] = sum[j] / P for every j in [0, n) (all n entries, zeros included).
//   Residual: zero everywhere (every entry reached U).
// Bytes on the wire: those of the selected algorithm, SparseAllreduceDense::cost(P, n)
// (e.g. ring: about 2 (P-1)/P 4n bytes per rank), plus the length check's
// CooGather::words_traffic(P, r, 1) (log2 P messages, 8(P-1) bytes on a power of two).
// n = 0 sends only the length check.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "algorithms/registry.h"
#include "sparse/baseline.h"

namespace concord::sparse {

class SparseAllreduceDense : public SparseBaseline {
 public:
  /// Binds to `comm` (which must outlive this object). The options are only validated.
  SparseAllreduceDense(Communicator& comm, const SparseOptions& options = {}) : SparseBaseline(comm, options) {}
  const char* name() const override { return "dense"; }

  /// The registry entry used for `ranks` ranks and `n` floats.
  static const AllreduceEntry& dense_algorithm(int ranks, int64_t n);
  /// Its cost, whose exact counts equal the traffic of one call minus the length check's.
  static Cost cost(int ranks, int64_t n);

 private:
  void run(float* acc, int64_t n, SparseResult& result) override;

  ScratchBuffer scratch_;
  std::map<std::string, std::unique_ptr<AllreduceAlgorithm>> instances_;  // by registry name
};

}  // namespace concord::sparse
